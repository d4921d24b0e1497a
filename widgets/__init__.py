"""Live attention explorers: ipywidgets controls over the `attention` core.

Each explorer is one line in a notebook and is itself a displayable widget:

    import widgets
    widgets.AttentionExplorer()           # scores, masks, softmax weights, output, heads
    widgets.ScalingExplorer()             # why divide by sqrt(d_k)
    widgets.MaskExplorer()                # click cells; the same mask in every convention
    widgets.HeadsExplorer()               # split into heads, merge, the forgotten transpose
    widgets.PositionalEncodingExplorer()  # sinusoids; shuffle tokens with and without positions
    widgets.TokenAttentionView()          # lines from each token to what it attends to
    widgets.TrainingAttentionExplorer()   # a tiny Transformer's attention over training steps
    widgets.ModelView("smollm2")          # a real model: every layer x head; HeadView, NeuronView
    widgets.FlashExplorer()               # FlashAttention tile by tile: m, l, output, bytes moved
    widgets.KVCacheExplorer()             # key/value cache bytes: MHA, GQA, MQA
    widgets.RopeExplorer()                # RoPE's turning pairs and two layouts; ALiBi's biases

`widgets.pictures(True)` (or ATTENTION_COURSE_PICTURES=1) makes every explorer also carry a
static picture of itself in its display data, for saved notebooks, nbconvert and the site.

After moving a control, `explorer.result` holds the current computation. Live panels are drawn
in the browser from the numbers (`widgets.views`: Heatmap, TokenLines, SeriesChart); the Export
button saves PNG, SVG and CSV rendered by matplotlib from the same numbers.

Layout: `views/` draws (and never imports `explorers/`), `explorers/` wires controls to the
pure functions of `attention.explore` and to the views; `classroom` and `setup_lab` set up
Voilà and JupyterLab.
"""

from importlib import import_module
from typing import Any

# Each public name and the module it comes from. They are imported when first used (PEP 562),
# not with the package: `python -m widgets.classroom` (the Voilà server) and
# `python -m widgets.setup_lab` then start without torch and the explorers, which only the
# kernels run (tests/test_classroom.py checks that the server's import leaves torch out).
_PUBLIC = {
    **dict.fromkeys(
        [
            "AttentionExplorer",
            "FlashExplorer",
            "HeadView",
            "HeadsExplorer",
            "KVCacheExplorer",
            "MaskExplorer",
            "ModelView",
            "NeuronView",
            "PositionalEncodingExplorer",
            "RopeExplorer",
            "ScalingExplorer",
            "TokenAttentionView",
            "TrainingAttentionExplorer",
            "TrainingProgress",
        ],
        ".explorers",
    ),
    "palette": ".explorers.base",
    "presenter": ".explorers.base",
    "Heatmap": ".views",
    "SeriesChart": ".views",
    "TokenLines": ".views",
    "export_heatmap": ".views.export",
    "pictures": ".views.picture",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'widgets' has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name], __name__), name)
    globals()[name] = value  # once imported, an ordinary module attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
