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

After moving a control, `explorer.result` holds the current computation. Live panels are drawn
in the browser from the numbers (`Heatmap`, `TokenLines`); the Export button saves PNG, SVG and
CSV rendered by matplotlib from the same numbers.
"""

from .attention_explorer import AttentionExplorer
from .export import export_heatmap
from .heads_explorer import HeadsExplorer
from .heatmap import Heatmap, TokenLines
from .mask_explorer import MaskExplorer
from .positional_explorer import PositionalEncodingExplorer
from .scaling_explorer import ScalingExplorer
from .token_view import TokenAttentionView
from .training_view import TrainingAttentionExplorer, TrainingProgress

__all__ = [
    "AttentionExplorer",
    "Heatmap",
    "HeadsExplorer",
    "MaskExplorer",
    "PositionalEncodingExplorer",
    "ScalingExplorer",
    "TokenAttentionView",
    "TokenLines",
    "TrainingAttentionExplorer",
    "TrainingProgress",
    "export_heatmap",
]
