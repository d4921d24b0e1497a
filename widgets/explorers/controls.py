"""Control factories and small readouts shared by the explorers (the ipywidgets side).

Every control gets a stable CSS class `ac-<name>` for browser tests and teachers' styles, and
updates while dragging. Widgets make invalid settings unreachable (e.g. `set_options` offers
only the head counts a width allows); what remains is refused with the range in the message.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from ..views.style import css

_STYLE = {"description_width": "initial"}
_LAYOUT = {"width": "260px"}


def _slider(cls: type, description: str, width: str | None = None, **kwargs: Any) -> widgets.Widget:
    """A keyboard-operable slider that updates while dragging (Control.build adds its class)."""
    layout = {"width": width} if width else _LAYOUT
    return cls(
        description=description, continuous_update=True, style=_STYLE, layout=layout, **kwargs
    )


def dropdown(
    description: str, options: Sequence[Any], value: Any, *, name: str
) -> widgets.Dropdown:
    """A dropdown whose options can be replaced later (e.g. the divisors of a width)."""
    w = widgets.Dropdown(
        options=list(options), value=value, description=description, style=_STYLE, layout=_LAYOUT
    )
    w.add_class(css(name))
    return w


def set_options(dropdown_: widgets.Dropdown, options: Sequence[Any], prefer: Any) -> None:
    """Replace a dropdown's options, keeping `prefer` when allowed, else the nearest number
    (or, among (label, value) pairs, the first value: a named choice that went away)."""
    options = list(options)
    if list(dropdown_.options) == options and dropdown_.value == prefer:
        return
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    if prefer not in values:
        named = bool(options) and isinstance(options[0], tuple)
        prefer = values[0] if named else min(values, key=lambda o: (abs(o - prefer), o))
    with dropdown_.hold_sync():  # one message; trait notifications stay immediate
        dropdown_.options = options
        dropdown_.value = prefer


def clamp_slider(slider: widgets.IntSlider, max_: int) -> None:
    """Set an int slider's max, moving its value inside the new range if needed."""
    if slider.max != max_:
        if slider.value > max_:
            slider.value = max_
        slider.max = max_


def refuse_clamped(name: str, control: widgets.Widget, requested: float) -> None:
    """Raise if a control clamped a starting value instead of taking it (sliders do silently)."""
    if math.isclose(float(control.value), float(requested), rel_tol=1e-9, abs_tol=1e-12):
        return
    lo, hi = control.min, control.max
    if isinstance(control, widgets.FloatLogSlider):
        lo, hi = control.base**lo, control.base**hi
    raise ValueError(f"{name}: expected a value in [{lo:g}, {hi:g}], got {requested}")


def compact_layout(
    controls: Sequence[widgets.Widget],
    error: widgets.Widget,
    principal: widgets.Widget | None = None,
    beside: Sequence[widgets.Widget] = (),
    *,
    row: bool = False,
) -> list[widgets.Widget]:
    """The top of an explorer: its controls and, when given, the principal panel beside them.

    With a principal panel: the controls in a narrow column (class ac-controls) with the error
    area at its foot, the principal panel (class ac-principal) to its right, then `beside`; on
    a narrow page they wrap under the column. With `row`, the controls stand in one row above
    the principal panel instead (for a few wide controls, such as a sentence field). At
    default settings the controls and the principal panel of every explorer fit a 1280 x 720
    window together, in JupyterLab with its file browser open and in Voila
    (tests/browser/test_classroom_fit.py). Without a principal panel: the controls in a row
    that wraps, the error area under it.
    """
    if principal is None or row:
        box = widgets.Box(list(controls), layout=_row_wrap())
        box.add_class(css("controls"))
        if principal is None:
            return [box, error]
        principal.add_class(css("principal"))
        return [box, error, widgets.Box([principal, *beside], layout=_row_wrap())]
    column = widgets.VBox(
        [*controls, error], layout=widgets.Layout(flex="0 0 auto", margin="0 16px 6px 0")
    )
    column.add_class(css("controls"))
    principal.add_class(css("principal"))
    top = widgets.Box([column, principal, *beside], layout=_row_wrap())
    top.add_class(css("top"))
    return [top]


def _row_wrap() -> widgets.Layout:
    return widgets.Layout(display="flex", flex_flow="row wrap", align_items="flex-start")


def panel_row(children: Sequence[widgets.Widget]) -> widgets.HBox:
    """Panels side by side, wrapping onto the next line when the page is narrow."""
    for child in children:
        child.layout.margin = "0 16px 8px 0"  # ipywidgets' Layout has no flex `gap`
    return widgets.HBox(list(children), layout=widgets.Layout(flex_flow="row wrap"))


# --- readouts and errors --------------------------------------------------------------------


def table_html(rows: Iterable[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    """A small HTML table (cells are escaped) for readouts beside the plots."""
    cell = 'style="padding:1px 8px 1px 0;line-height:1.35;text-align:left"'
    out = [f'<table class="{css("table")}" style="border-collapse:collapse">']
    if header:
        out.append(
            "<tr>" + "".join(f"<th {cell}>{html.escape(str(h))}</th>" for h in header) + "</tr>"
        )
    for row in rows:
        out.append(
            "<tr>" + "".join(f"<td {cell}>{html.escape(str(c))}</td>" for c in row) + "</tr>"
        )
    out.append("</table>")
    return "".join(out)


def shape_str(shape: Iterable[int]) -> str:
    """(2, 3) -> "(2, 3)"; works for torch.Size, numpy shapes and tuples."""
    return str(tuple(int(s) for s in shape))


# --- controls declared once -----------------------------------------------------------------

Bound = Any  # a number, or a function of the current control values (a namespace) -> number
Options = Any  # a sequence, or a function of the current control values -> sequence


@dataclass(frozen=True)
class Control:
    """One control, named after the params field it sets: declared once, in the explorer.

    The Explorer base builds the widget from it (`self.<field>`, CSS class ac-<field with
    dashes>), starts it at the params' value (refusing one the widget would clamp), keeps
    ranges that depend on other controls up to date (a bound or the options given as a
    function of the current values: `lambda v: max_heads(v.d_k)`) and reads it back into the
    params. Make them with `slider`, `log_slider`, `menu`, `check`, `choice`, `steps`, `text`,
    `number`, `area` (code), `pick` (several of a list). A control with `param=False` sets how
    the panels look (e.g. "show numbers") or something the explorer turns into params itself
    (a mask's grid size): it is built and watched like the others, but `_read_params` leaves
    it out.
    """

    field: str
    label: str
    kind: str  # int, float, log, menu, check, buttons, select, text, number, area, pick
    lo: Bound = None
    hi: Bound = None
    options: Options = None
    step: float | None = None  # a slider's (default: 1 for an int slider, else 0.01)
    width: str | None = None  # the widget's width (default: 260px; a text field's 420px)
    live: bool = True  # a text field updates as the learner types (False: on Enter or blur)
    param: bool = True  # False: not a params field (its start value: declare's or `default`)
    default: Any = None
    placeholder: str = ""  # a text field's or area's hint while empty
    rows: int | None = None  # an area's or a pick list's height in lines
    fit_label: bool = False  # a text field's label takes the width it needs

    @property
    def css_name(self) -> str:
        return self.field.replace("_", "-")

    def build(self, value: Any, current: Any) -> widgets.Widget:
        """The widget, at `value`; `current` (the start params) resolves dynamic ranges."""
        lo, hi = _resolve(self.lo, current), _resolve(self.hi, current)
        options = None if self.options is None else list(_resolve(self.options, current))
        w = self._widget(value, lo, hi, options)
        w.add_class(css(self.css_name))
        if self.kind in ("int", "float", "log", "number"):  # these clamp silently
            refuse_clamped(self.field, w, value)
        return w

    def _widget(self, value: Any, lo: Any, hi: Any, options: list | None) -> widgets.Widget:
        label, width = self.label, self.width
        step = (1 if self.kind == "int" else 0.01) if self.step is None else self.step
        match self.kind:
            case "int" | "float":  # arrow keys move by one step
                cls = widgets.IntSlider if self.kind == "int" else widgets.FloatSlider
                return _slider(cls, label, value=value, min=lo, max=hi, step=step)
            case "log":  # lo and hi are the values; the slider's ends are their log10
                return _slider(
                    widgets.FloatLogSlider, label, value=value, base=10,
                    min=math.log10(lo), max=math.log10(hi), step=step, readout_format=".3g",
                )  # fmt: skip
            case "menu":
                return dropdown(label, options, value, name=self.css_name)
            case "check":  # keyboard: Tab then Space
                return widgets.Checkbox(value=value, description=label, indent=False, style=_STYLE)
            case "buttons":
                return widgets.ToggleButtons(
                    options=options, value=value, description=label,
                    style={"description_width": "initial", "button_width": "auto"},
                )  # fmt: skip
            case "select":
                return _slider(widgets.SelectionSlider, label, width, options=options, value=value)
            case "number":
                return widgets.BoundedIntText(
                    value=value, min=lo, max=hi, description=label, style=_STYLE,
                    layout={"width": width or "230px"},
                )  # fmt: skip
            case "text":
                return widgets.Text(
                    value=value, description=label, continuous_update=self.live,
                    layout=widgets.Layout(width=width or "420px"),
                    **({"placeholder": self.placeholder} if self.placeholder else {}),
                    **({"style": _STYLE} if self.fit_label else {}),
                )  # fmt: skip
            case "area":
                return widgets.Textarea(
                    value=value, rows=self.rows, continuous_update=self.live,
                    placeholder=self.placeholder, layout=widgets.Layout(width=width),
                )  # fmt: skip
            case "pick":
                return widgets.SelectMultiple(
                    options=options, value=value, rows=self.rows, description=label,
                    style=_STYLE, layout={"width": width},
                )  # fmt: skip
        raise ValueError(f"{self.field}: unknown control kind {self.kind!r}")

    def sync(self, w: widgets.Widget, current: Any) -> None:
        """Follow ranges that depend on other controls (only those given as functions; a
        pick's choices and what stays picked are the explorer's to follow)."""
        if callable(self.options) and self.kind != "pick":
            set_options(w, list(self.options(current)), w.value)
        if callable(self.hi) and self.kind == "int":
            clamp_slider(w, self.hi(current))
        if callable(self.lo) and self.kind == "int" and w.min != self.lo(current):
            lo = self.lo(current)
            if w.value < lo:
                w.value = lo
            w.min = lo

    def read(self, w: widgets.Widget) -> Any:
        """The widget's value as the params field takes it."""
        if self.kind == "pick":
            return tuple(w.value)
        return float(w.value) if self.kind in ("float", "log") else w.value


def _resolve(bound: Any, current: Any) -> Any:
    return bound(current) if callable(bound) else bound


def slider(field: str, lo: Bound, hi: Bound, *, label: str | None = None, **more: Any) -> Control:
    """An integer slider from lo to hi for `field` (arrow keys step by 1); `more`: other
    Control fields (step, param)."""
    return Control(field, label or field, "int", lo, hi, **more)


def number(field: str, lo: int, hi: int, *, label: str | None = None, width: str = "230px"):
    """A box to type a whole number from lo to hi in (it would clamp: out of range is refused)."""
    return Control(field, label or field, "number", lo, hi, width=width)


def log_slider(field: str, lo: float, hi: float, *, label: str | None = None, step: float = 0.02):
    """A float slider on a log10 scale from lo to hi (the values, not exponents)."""
    return Control(field, label or field, "log", lo, hi, step=step)


def float_range(field: str, lo: float, hi: float, *, label: str | None = None, step: float = 0.01):
    """A float slider from lo to hi."""
    return Control(field, label or field, "float", lo, hi, step=step)


def menu(field: str, options: Options, *, label: str | None = None, param: bool = True):
    """A dropdown of `options` (values, or (label, value) pairs)."""
    return Control(field, label or field, "menu", options=options, param=param)


def check(field: str, *, label: str | None = None, param: bool = True, default: bool = False):
    """A checkbox for a bool field (param=False: a switch of the panels, off by `default`)."""
    return Control(field, label or field, "check", param=param, default=default)


def choice(field: str, options: Sequence[Any], *, label: str | None = None) -> Control:
    """A row of toggle buttons for a few named choices."""
    return Control(field, label or field, "buttons", options=tuple(options))


def steps(field: str, options: Options, *, label: str | None = None, width: str | None = None):
    """A slider over a list of allowed values (e.g. context lengths, training steps)."""
    return Control(field, label or field, "select", options=options, width=width)


def text(field: str, *, label: str | None = None, width: str = "420px", **more: Any) -> Control:
    """A text field, updating as the learner types (live=False: when they press Enter);
    `more`: other Control fields (placeholder, fit_label, param)."""
    return Control(field, label or field, "text", width=width, **more)


def area(field: str, *, rows: int, width: str, placeholder: str = "", param: bool = True):
    """A code area without a label, read when it loses focus (the header says what it is)."""
    return Control(
        field, "", "area", width=width, live=False, placeholder=placeholder, rows=rows, param=param
    )


def pick(field: str, options: Options, *, label: str | None = None, rows: int, width: str):
    """A list to pick several of `options` from (ctrl-click); read as a tuple."""
    return Control(field, label or field, "pick", options=options, rows=rows, width=width)
