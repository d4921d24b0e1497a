"""Code that makes tensors of its own makes them on its inputs' device, not the CPU.

CI has no GPU; benchmarks/cuda_check.py compares every part with the CPU on one. Here torch's
"meta" device (shapes, no data) stands in for it: a tensor made on the CPU beside meta inputs
raises, exactly as beside CUDA inputs. Each case below failed on CUDA before it was fixed.
"""

from __future__ import annotations

import torch

import attention as A
from attention.masks import scores_from_mod
from attention.models.toy.induction import InductionBatch

META = torch.device("meta")


def test_score_mod_indices_follow_the_scores() -> None:
    out = scores_from_mod(
        lambda s, b, h, q, k: s + (q - k) * (h + 1), torch.zeros(3, 4, device=META)
    )
    assert out.device == META and out.shape == (3, 4)


def test_the_paged_pool_lives_on_the_device_asked_for() -> None:
    cache = A.PagedKVCache(n_blocks=4, block_size=2, n_kv_heads=1, d_head=3, device=META)
    assert cache.k_blocks.device == META and cache.v_blocks.device == META
    assert (
        A.PagedKVCache(n_blocks=1, block_size=1, n_kv_heads=1, d_head=1).k_blocks.device.type
        == "cpu"
    )


def test_the_induction_targets_follow_the_tokens() -> None:
    tokens = torch.zeros(2, 5, dtype=torch.long, device=META)
    assert InductionBatch(tokens, torch.tensor([2, 3], device=META)).repeated().device == META
