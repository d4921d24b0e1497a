"""A tiny randomly initialised SmolLM2 and a toy tokenizer: the lessons' experiments tested
without weight files."""

from __future__ import annotations

import torch

from attention.models.pretrained import SmolLM2, SmolLM2Config


class ToyTokenizer:
    def encode(self, text):
        return [ord(c) % 40 + 1 for c in text]

    def decode(self, ids):
        return " ".join(map(str, ids))


def tiny_smollm2(seed: int = 0) -> SmolLM2:
    torch.manual_seed(seed)
    cfg = SmolLM2Config(vocab_size=48, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48)
    model = SmolLM2(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return model
