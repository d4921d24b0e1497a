"""Live attention explorers: ipywidgets controls over the `attention` core.

Each explorer is one line in a notebook and is itself a displayable widget:

    import widgets
    widgets.AttentionExplorer()           # scores, masks, softmax weights, output, heads
    widgets.ModelView("smollm2")          # a real model: every layer x head

widgets/registry.py lists every explorer (class, lesson, pure function, what it shows);
lessons/explorers.ipynb shows them all, one per cell.

`widgets.pictures(True)` (or ATTENTION_COURSE_PICTURES=1) makes every explorer also carry a
static picture of itself in its display data, for saved notebooks, nbconvert and the site.

After moving a control, `explorer.result` holds the current computation. Live panels are drawn
in the browser from the numbers (`widgets.views`: Heatmap, TokenLines, SeriesChart); the Export
button saves PNG, SVG and CSV rendered by matplotlib from the same numbers.

Layout: `views/` draws (and never imports `explorers/`), `explorers/` wires controls to the
pure functions of `attention.explore` and to the views; `registry` lists the explorers;
`classroom` and `setup_lab` set up Voilà and JupyterLab.
"""

from importlib import import_module
from typing import Any

from .registry import explorer_modules

# Each public name and the module it comes from. They are imported when first used (PEP 562),
# not with the package: `python -m widgets.classroom` (the Voilà server) and
# `python -m widgets.setup_lab` then start without torch and the explorers, which only the
# kernels run (tests/project/test_classroom.py checks that the server's import leaves torch out).
# The explorers come from widgets/registry.py, the one list of them.
_OTHERS = {
    "palette": ".explorers.base",
    "presenter": ".explorers.base",
    "Heatmap": ".views",
    "SeriesChart": ".views",
    "TokenLines": ".views",
    "export_heatmap": ".views.export",
    "pictures": ".views.picture",
}


def _public() -> dict[str, str]:
    explorers = {name: ".explorers" for name in explorer_modules() if name != "Explorer"}
    return {**explorers, **_OTHERS}


__all__ = sorted(_public())


def __getattr__(name: str) -> Any:
    public = _public()  # read each time: a test may register a toy explorer
    if name not in public:
        raise AttributeError(f"module 'widgets' has no attribute {name!r}")
    value = getattr(import_module(public[name], __name__), name)
    globals()[name] = value  # once imported, an ordinary module attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_public()))
