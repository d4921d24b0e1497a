"""The Explorer base class: controls -> a params dataclass -> a pure function -> views.

The shape of an explorer (the house style):

    controls --(read)--> frozen params dataclass --(pure function in attention.explore)-->
             result dataclass --(draw)--> views (Heatmap / TokenLines / SeriesChart)

`Explorer` wires that loop once. A subclass declares its controls once, each named after the
params field it sets, and provides `_draw`; reading the params is derived from the
declarations, and computing is the function its line of widgets/explorers.toml names
(attention.explore.<stem>.<function>, called with the params):

    class MyExplorer(Explorer):
        CONTROLS = (slider("n", 1, 16), check("scaled", label="divide by sqrt(d_k)"))

        def __init__(self, **settings):
            start = MyParams(**settings)             # validates the settings
            self.map = self.panel("weights", Heatmap(title="weights"))   # Export saves it
            super().__init__(controls=self.declare(start), principal=self.map, body=[])
            self.refresh()

        def _draw(self, result):  self.map.set_data(result.weights)

`declare(start)` builds `self.n` and `self.scaled` (CSS classes ac-n, ac-scaled) at the start
params' values; `_read_params()` is `replace(start, n=self.n.value, scaled=...)` plus any
`_derived_params()` (values no control holds, e.g. a clicked mask); a range given as a function
of the other controls (`slider("head", 0, lambda v: v.n_heads - 1)`) follows them before each
read. The explorer's name (its CSS class and export prefix) comes from widgets/registry.py.

Any exception inside refresh() is shown in `explorer.error` (an HTML area), never as a
traceback; `explorer.result` holds the last good result for code to read.
`with explorer.hold_refresh(): ...` changes several controls with one refresh after.
`_compute` runs under `one_thread()`: this is the one place it is applied (its docstring says
why). `panel(name, view)` declares a panel once; the Export button asks each declared panel
that is shown (`_views()`) to export itself (views/export.py) into
exports/<explorer>_<name>.png/.svg/.csv.

Classroom: `principal` puts the panel the explorer is about beside a narrow column of controls
(a 1280 x 720 projector shows both); a refresh's widget updates travel as one message
instead of one per widget (views/batch.py); `presenter(True)` / `explorer.presenter` enlarge
everything for the back of the room and `palette("cvd")` / `explorer.palette` swap red-blue
for purple-orange.
"""

from __future__ import annotations

import dataclasses
import html
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, TypeVar

import ipywidgets as widgets
import traitlets as t

from attention.explore import one_thread
from attention.language import translate

from ..registry import explore_function, slug_of
from ..views import CanvasView, Heatmap
from ..views.batch import MessageBatch, widget_tree
from ..views.export import Exportable
from ..views.keyboard import KeyboardGuard
from ..views.picture import Pictured, shown_views
from ..views.style import CVD_SWAP, PALETTES, PRESENTER_ZOOM, css
from ..views.text import localize
from .controls import Control, compact_layout

DEFAULT_EXPORT_DIR = "exports"
V = TypeVar("V", bound=widgets.Widget)


class ErrorArea(widgets.HTML):
    """Shows the message of an exception in red instead of a traceback; hidden when empty."""

    def __init__(self) -> None:
        super().__init__(value="")
        self.add_class(css("error"))
        self.layout.display = "none"
        self.message = ""

    def show(self, exc: BaseException) -> None:
        self.message = f"{type(exc).__name__}: {translate(str(exc))}"
        self.value = f'<span style="color:#b00020">{html.escape(self.message)}</span>'
        self.layout.display = None

    def clear(self) -> None:
        if self.message:
            self.message = ""
            self.value = ""
            self.layout.display = "none"


# --- the explorer base class ----------------------------------------------------------------


class Explorer(Pictured, widgets.VBox):
    """Base for explorers: watches controls, recomputes a pure function, redraws the views.

    Subclasses declare `CONTROLS` (controls.Control, one per params field they set, or
    param=False for a setting of the panels) and each panel once with `panel(name, view)`,
    and implement `_draw(result)` (one `_draw_<panel>` per panel where there are several)
    and optionally `_compute(params) -> result` (default: the registry's function),
    `_derived_params()` (params no control holds) and `_sync_controls()` (what the
    declarations cannot say, e.g. showing a control only in one mode; call super's first).
    The Export button saves the declared panels that are shown (`_views()`).

    Layout: with `principal` (the panel the explorer is about), the controls stand in a narrow
    column (or with `controls_row`, a row above) with that panel beside them (`beside` after
    it), then `body`; without it, the controls in a row above `body` (controls.compact_layout).

    Attributes:
        result: the last computed result dataclass (None before the first refresh).
        params: the params dataclass that produced `result`.
        error: the ErrorArea where a failed refresh shows its message.
        panels: name -> view of every panel declared with `panel` (shown or not).
        presenter: larger cells, labels and controls for the back of the room (a trait; set
            it, or `presenter(True)` for every explorer).
        palette: "default", or "cvd" for diverging panels in purple-orange (a trait; or
            `palette("cvd")` for every explorer).
    """

    presenter = t.Bool(False)
    palette = t.Enum(PALETTES, "default")
    CONTROLS: ClassVar[tuple[Control, ...]] = ()
    _fixed_values: ClassVar[dict[str, Any]] = {}  # declare's values that are no control's

    def __init__(
        self,
        *,
        controls: Sequence[widgets.Widget],
        body: Sequence[widgets.Widget],
        name: str | None = None,
        header: widgets.Widget | None = None,
        principal: widgets.Widget | None = None,
        beside: Sequence[widgets.Widget] = (),
        controls_row: bool = False,
        export_dir: str | Path = DEFAULT_EXPORT_DIR,
    ) -> None:
        name = name or slug_of(type(self).__name__)
        self.explorer_name = name
        self.result: Any = None
        self.params: Any = None
        self.error = ErrorArea()
        self.export_dir = Path(export_dir)
        self.export_button = widgets.Button(
            description="Export", icon="download", tooltip=("Save the panels as PNG, SVG and CSV")
        )
        self.export_button.add_class(css("export"))
        self.export_status = widgets.HTML("")
        self.export_status.add_class(css("export-status"))
        self.export_button.on_click(lambda _b: self._export_clicked())
        self._busy = False
        self.refreshes = 0
        footer = widgets.HBox([self.export_button, self.export_status])
        children = [header] if header is not None else []
        top = compact_layout(controls, self.error, principal, beside, row=controls_row)
        children += [*top, *body, footer]
        self.keyboard = KeyboardGuard()  # arrow keys reach the sliders in Notebook 7 too
        children.append(self.keyboard)
        self._batch = MessageBatch()  # one message per refresh for all the widgets below
        children.append(self._batch)
        super().__init__(children)
        self.add_class(css("explorer"))
        self.add_class(css(name))
        self._watch(controls)
        self._batch.adopt(self)
        self._base_colormaps: dict[str, str] = {}  # heatmap model id -> its own colormap
        _LIVE.add(self)
        self.presenter, self.palette = _DEFAULTS["presenter"], _DEFAULTS["palette"]
        self._apply_presentation()

    def _watch(self, controls: Iterable[widgets.Widget]) -> None:
        for c in controls:
            if isinstance(c, widgets.Box):
                self._watch(c.children)
            elif hasattr(c, "value"):
                c.observe(lambda _change: self.refresh(), names="value")

    # Presentation ----------------------------------------------------------------------------
    @t.observe("presenter", "palette")
    def _presentation_changed(self, _change: Any) -> None:
        if hasattr(self, "_base_colormaps"):  # not while __init__ sets the defaults
            self._apply_presentation()

    def _apply_presentation(self) -> None:
        """Zoom every canvas view (presenter mode) and swap diverging maps (palette "cvd")."""
        zoom = PRESENTER_ZOOM if self.presenter else 1.0
        swap = CVD_SWAP if self.palette == "cvd" else {}
        with self._batch.collect():
            (self.add_class if self.presenter else self.remove_class)(css("presenter"))
            for w in widget_tree(self):
                if isinstance(w, Heatmap):
                    own = self._base_colormaps.setdefault(w.model_id, w.colormap)
                    w.colormap = swap.get(own, own)
                if isinstance(w, CanvasView):
                    w.zoom = zoom

    # Declared controls ---------------------------------------------------------------------
    def declare(self, start: Any, **values: Any) -> list[widgets.Widget]:
        """Build every control of CONTROLS at the start params' value, as `self.<field>`.

        `values`: the start values of the controls that are no params field (param=False),
        and fixed values the declared ranges may read (`lambda v: v.n_heads - 1` where the
        heads come from given weights, not a control).
        """
        self.start = start
        fields = {f.name: getattr(start, f.name) for f in dataclasses.fields(start)}
        declared = {c.field for c in self.CONTROLS}
        self._fixed_values = {k: v for k, v in values.items() if k not in declared}
        current = SimpleNamespace(**{**fields, **values}) if values else start  # for the ranges
        built = []
        for c in self.CONTROLS:
            value = values.get(c.field, fields.get(c.field, c.default))
            w = c.build(value, current)
            setattr(self, c.field, w)
            built.append(w)
        return built

    def _control_values(self) -> SimpleNamespace:
        values = {c.field: getattr(self, c.field).value for c in self.CONTROLS}
        return SimpleNamespace(**self._fixed_values, **values)

    # Subclass hooks ------------------------------------------------------------------------
    def _sync_controls(self) -> None:
        """Follow the ranges declared as functions of other controls (called before reading)."""
        current = self._control_values()
        for c in self.CONTROLS:  # in order: a range follows the controls declared before it
            w = getattr(self, c.field)
            c.sync(w, current)
            setattr(current, c.field, w.value)

    def _derived_params(self) -> dict[str, Any]:
        """Params fields no control holds (e.g. a mask edited by clicks)."""
        return {}

    def _read_params(self) -> Any:
        """The start params with every declared control's value and the derived ones."""
        values = {c.field: c.read(getattr(self, c.field)) for c in self.CONTROLS if c.param}
        return dataclasses.replace(self.start, **values, **self._derived_params())

    def _data_texts(self) -> Iterable[str]:
        """Data that the readouts show inside their text (prompts, tokens): never translated."""
        return ()

    def _compute(self, params: Any) -> Any:
        """The registry's function: attention.explore.<stem>.<function>(params).

        Override it only to do more (keep a training run between refreshes, pass a table).
        """
        return explore_function(type(self).__name__)(params)

    def _draw(self, result: Any) -> None:
        raise NotImplementedError

    def panel(self, name: str, view: V) -> V:
        """Declare a panel once, by the name of its exported files (<explorer>_<name>.png)."""
        self.__dict__.setdefault("panels", {})[name] = view
        return view

    def _views(self) -> dict[str, Exportable]:
        """Name -> view of the panels Export saves: the declared panels that are shown."""
        shown = {id(v) for v in shown_views(self)}
        return {n: v for n, v in self.__dict__.get("panels", {}).items() if id(v) in shown}

    # The loop ------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the controls, recompute and redraw; errors go to `self.error`."""
        if self._busy:  # a control changed by _sync_controls; the outer refresh covers it
            return
        self._busy = True
        try:
            with self._batch.collect():  # every widget's update in one message
                try:
                    self._sync_controls()
                    params = self._read_params()
                    with one_thread():
                        result = self._compute(params)
                    self._draw(result)
                except Exception as exc:  # noqa: BLE001 - shown to the learner, not raised
                    self.error.show(exc)
                else:
                    self.params, self.result = params, result
                    self.refreshes += 1
                    self.error.clear()
                # labels and readouts in the course's language (English: nothing happens)
                localize(self, self._data_texts())
        finally:
            self._busy = False

    @contextmanager
    def hold_refresh(self) -> Iterator[None]:
        """Change several controls without a refresh per change; call refresh() after."""
        busy, self._busy = self._busy, True
        try:
            yield
        finally:
            self._busy = busy

    def export(self, folder: str | Path | None = None) -> list[Path]:
        """Save every view of `_views()` as PNG, SVG and CSV into `folder`; return the paths."""
        folder = Path(folder) if folder is not None else self.export_dir
        paths: list[Path] = []
        for view_name, view in self._views().items():
            paths += view.export(folder, f"{self.explorer_name}_{view_name}")
        return paths

    def _export_clicked(self) -> None:
        try:
            paths = self.export()
        except Exception as exc:  # noqa: BLE001
            self.error.show(exc)
            return
        folder = paths[0].parent if paths else self.export_dir
        self.export_status.value = html.escape(translate(f"saved {len(paths)} files to {folder}/"))


# --- presenter mode and palette for every explorer ------------------------------------------

_LIVE: weakref.WeakSet[Explorer] = weakref.WeakSet()  # explorers created in this kernel
_DEFAULTS: dict[str, Any] = {"presenter": False, "palette": "default"}


def presenter(on: bool | None = None) -> bool:
    """Presenter mode for every explorer, those shown and those made later (None: ask).

    Larger cells, labels and controls for the back of the room: canvases are drawn
    PRESENTER_ZOOM times larger and the controls' font grows. One explorer only:
    `explorer.presenter = True`.
    """
    if on is not None:
        _DEFAULTS["presenter"] = bool(on)
        for explorer in list(_LIVE):
            explorer.presenter = bool(on)
    return _DEFAULTS["presenter"]


def palette(name: str | None = None) -> str:
    """The colours of every explorer, those shown and those made later (None: ask).

    "default", or "cvd": diverging panels (scores, Q, K, outputs) in purple-orange instead of
    red-blue, apart for every common colour-vision deficiency. One explorer only:
    `explorer.palette = "cvd"`.

    Raises:
        ValueError: a name other than those of style.PALETTES.
    """
    if name is not None:
        if name not in PALETTES:
            raise ValueError(f"palette: expected one of {PALETTES}, got {name!r}")
        _DEFAULTS["palette"] = name
        for explorer in list(_LIVE):
            explorer.palette = name
    return _DEFAULTS["palette"]
