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


def _slider(cls: type, description: str, name: str, **kwargs: Any) -> widgets.Widget:
    """A keyboard-operable slider that updates while dragging, with class ac-<name>."""
    w = cls(description=description, continuous_update=True, style=_STYLE, layout=_LAYOUT, **kwargs)
    w.add_class(css(name))
    return w


def int_slider(description: str, min: int, max: int, value: int, *, name: str) -> widgets.IntSlider:
    """An integer slider from min to max (arrow keys step by 1)."""
    return _slider(widgets.IntSlider, description, name, value=value, min=min, max=max)


def float_slider(
    description: str,
    min: float,
    max: float,
    value: float,
    *,
    name: str,
    step: float = 0.01,
    log: bool = False,
) -> widgets.FloatSlider | widgets.FloatLogSlider:
    """A float slider (log10 scale when `log`, then min/max are the values, not exponents)."""
    if log:
        return _slider(
            widgets.FloatLogSlider,
            description,
            name,
            value=value,
            base=10,
            min=math.log10(min),
            max=math.log10(max),
            step=step,
            readout_format=".3g",
        )
    return _slider(widgets.FloatSlider, description, name, value=value, min=min, max=max, step=step)


def dropdown(
    description: str, options: Sequence[Any], value: Any, *, name: str
) -> widgets.Dropdown:
    """A dropdown whose options can be replaced later (e.g. the divisors of a width)."""
    w = widgets.Dropdown(
        options=list(options), value=value, description=description, style=_STYLE, layout=_LAYOUT
    )
    w.add_class(css(name))
    return w


def toggle(description: str, value: bool, *, name: str) -> widgets.Checkbox:
    """A checkbox (keyboard: Tab then Space)."""
    w = widgets.Checkbox(value=value, description=description, indent=False, style=_STYLE)
    w.add_class(css(name))
    return w


def buttons(
    description: str, options: Sequence[Any], value: Any, *, name: str
) -> widgets.ToggleButtons:
    """A row of toggle buttons for a few named choices."""
    w = widgets.ToggleButtons(
        options=list(options),
        value=value,
        description=description,
        style={"description_width": "initial", "button_width": "auto"},
    )
    w.add_class(css(name))
    return w


def set_options(dropdown_: widgets.Dropdown, options: Sequence[Any], prefer: Any) -> None:
    """Replace a dropdown's options, keeping `prefer` when allowed, else the nearest option."""
    options = list(options)
    if list(dropdown_.options) == options and dropdown_.value == prefer:
        return
    if prefer not in options:
        prefer = min(options, key=lambda o: (abs(o - prefer), o))
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
    params. Make them with `slider`, `log_slider`, `menu`, `check`, `choice`, `steps`, `text`.
    """

    field: str
    label: str
    kind: str  # "int", "float", "log", "menu", "check", "buttons", "select", "text"
    lo: Bound = None
    hi: Bound = None
    options: Options = None
    step: float | None = None
    width: str | None = None  # a text field's width
    live: bool = True  # a text field updates as the learner types (False: on Enter or blur)

    @property
    def css_name(self) -> str:
        return self.field.replace("_", "-")

    def build(self, value: Any, current: Any) -> widgets.Widget:
        """The widget, at `value`; `current` (the start params) resolves dynamic ranges."""
        name, label = self.css_name, self.label
        lo, hi, options = _resolve(self.lo, current), _resolve(self.hi, current), None
        if self.options is not None:
            options = list(_resolve(self.options, current))
        if self.kind == "int":
            w = int_slider(label, lo, hi, value, name=name)
        elif self.kind in ("float", "log"):
            step = self.step if self.step is not None else 0.01
            w = float_slider(label, lo, hi, value, name=name, step=step, log=self.kind == "log")
        elif self.kind == "menu":
            w = dropdown(label, options, value, name=name)
        elif self.kind == "check":
            return toggle(label, value, name=name)
        elif self.kind == "buttons":
            return buttons(label, options, value, name=name)
        elif self.kind == "select":
            w = _slider(widgets.SelectionSlider, label, name, options=options, value=value)
        elif self.kind == "text":
            w = widgets.Text(
                value=value,
                description=label,
                continuous_update=self.live,
                layout=widgets.Layout(width=self.width or "420px"),
            )
            w.add_class(css(name))
            return w
        else:
            raise ValueError(f"{self.field}: unknown control kind {self.kind!r}")
        if self.kind in ("int", "float", "log"):
            refuse_clamped(self.field, w, value)
        return w

    def sync(self, w: widgets.Widget, current: Any) -> None:
        """Follow ranges that depend on other controls (only those given as functions)."""
        if callable(self.options):
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
        return float(w.value) if self.kind in ("float", "log") else w.value


def _resolve(bound: Any, current: Any) -> Any:
    return bound(current) if callable(bound) else bound


def slider(field: str, lo: Bound, hi: Bound, *, label: str | None = None) -> Control:
    """An integer slider from lo to hi for `field` (arrow keys step by 1)."""
    return Control(field, label or field, "int", lo, hi)


def log_slider(field: str, lo: float, hi: float, *, label: str | None = None, step: float = 0.02):
    """A float slider on a log10 scale from lo to hi (the values, not exponents)."""
    return Control(field, label or field, "log", lo, hi, step=step)


def float_range(field: str, lo: float, hi: float, *, label: str | None = None, step: float = 0.01):
    """A float slider from lo to hi."""
    return Control(field, label or field, "float", lo, hi, step=step)


def menu(field: str, options: Options, *, label: str | None = None) -> Control:
    """A dropdown of `options` (values, or (label, value) pairs)."""
    return Control(field, label or field, "menu", options=options)


def check(field: str, *, label: str | None = None) -> Control:
    """A checkbox for a bool field."""
    return Control(field, label or field, "check")


def choice(field: str, options: Sequence[Any], *, label: str | None = None) -> Control:
    """A row of toggle buttons for a few named choices."""
    return Control(field, label or field, "buttons", options=tuple(options))


def steps(field: str, options: Options, *, label: str | None = None) -> Control:
    """A slider over a list of allowed values (e.g. context lengths, training steps)."""
    return Control(field, label or field, "select", options=options)


def text(field: str, *, label: str | None = None, width: str = "420px", live: bool = True):
    """A text field, updating as the learner types (live=False: when they press Enter)."""
    return Control(field, label or field, "text", width=width, live=live)
