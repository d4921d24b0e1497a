"""Models built on the core: each computes its attention with `attention`'s own functions.

    attention.models.toy         a tiny encoder-decoder trained on a toy task (reverse/sort)
    attention.models.pretrained  real trained models loaded from packaged weights, offline:
                                 MiniLM (a BERT encoder) and SmolLM2 (a LLaMA-style decoder)

    from attention.models import load_pretrained
    model, tokenizer = load_pretrained("smollm2")   # or "minilm"

Nothing here is imported by the core (`attention/*.py`); this package only imports downward.
"""


def load_pretrained(name: str, **kwargs):  # noqa: ANN201 - the pretrained package documents it
    """Load a pretrained model and its tokenizer: see `attention.models.pretrained`."""
    from .pretrained import load_pretrained as _load  # safetensors/gguf load only when asked

    return _load(name, **kwargs)


__all__ = ["load_pretrained"]
