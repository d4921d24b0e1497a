"""The explorers: each wires controls -> a pure function of `attention.explore` -> views.

base        the Explorer loop (read params, compute on one thread, draw, show errors, export)
controls    slider, dropdown and toggle factories with stable CSS classes; small readouts
attention   AttentionExplorer            scaling      ScalingExplorer
mask        MaskExplorer                 heads        HeadsExplorer
positional  PositionalEncodingExplorer   tokens       TokenAttentionView
training    TrainingAttentionExplorer, TrainingProgress
"""

from .attention import AttentionExplorer
from .base import Explorer
from .heads import HeadsExplorer
from .mask import MaskExplorer
from .positional import PositionalEncodingExplorer
from .scaling import ScalingExplorer
from .tokens import TokenAttentionView
from .training import TrainingAttentionExplorer, TrainingProgress

__all__ = [
    "AttentionExplorer",
    "Explorer",
    "HeadsExplorer",
    "MaskExplorer",
    "PositionalEncodingExplorer",
    "ScalingExplorer",
    "TokenAttentionView",
    "TrainingAttentionExplorer",
    "TrainingProgress",
]
