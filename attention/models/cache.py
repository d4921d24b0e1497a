"""The pretrained models, each loaded once per kernel and shared by every explorer and lesson.

    pretrained_model("smollm2")   (model, tokenizer), loaded on the first call, then the same pair

Loading SmolLM2 takes a few seconds; the explorers (attention.explore), the lessons' experiments
(attention.experiments), the checkers and the lesson cells all ask here, so a kernel holds one
copy of each model.
"""

from __future__ import annotations

from functools import cache

from .pretrained import MODELS, PretrainedModel, Tokenizer, load_pretrained

MODEL_NAMES = tuple(MODELS)


def check_model(name: object) -> str:
    """Return name if it is one of MODEL_NAMES; else raise ValueError listing them."""
    if name not in MODEL_NAMES:
        raise ValueError(f"model: expected one of {list(MODEL_NAMES)}, got {name!r}")
    return name  # type: ignore[return-value]


@cache
def pretrained_model(name: str) -> tuple[PretrainedModel, Tokenizer]:
    """(model, tokenizer) of a pretrained model, loaded once per kernel and shared."""
    return load_pretrained(check_model(name))
