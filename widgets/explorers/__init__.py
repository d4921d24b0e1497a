"""The explorers: each wires controls -> a pure function of `attention.explore` -> views.

base        the Explorer loop (read params, compute on one thread, draw, show errors, export)
controls    slider, dropdown and toggle factories with stable CSS classes; small readouts
attention   AttentionExplorer            scaling      ScalingExplorer
mask        MaskExplorer                 heads        HeadsExplorer
positional  PositionalEncodingExplorer   tokens       TokenAttentionView
training    TrainingAttentionExplorer, TrainingProgress
model_view  ModelView, HeadView, NeuronView (real trained models: MiniLM, SmolLM2)
flash       FlashExplorer                kv_cache     KVCacheExplorer
rope        RopeExplorer
"""

from .attention import AttentionExplorer
from .base import Explorer
from .flash import FlashExplorer
from .heads import HeadsExplorer
from .kv_cache import KVCacheExplorer
from .mask import MaskExplorer
from .model_view import HeadView, ModelView, NeuronView
from .positional import PositionalEncodingExplorer
from .rope import RopeExplorer
from .scaling import ScalingExplorer
from .tokens import TokenAttentionView
from .training import TrainingAttentionExplorer, TrainingProgress

__all__ = [
    "AttentionExplorer",
    "Explorer",
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
]
