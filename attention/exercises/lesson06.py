"""Checkers of lesson 6 (masks): the causal mask, the masked softmax, the key padding mask.

Named mistakes include "you masked the diagonal too". Reference solutions are in
`attention.exercises.solutions.lesson06`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

import attention as A

from ._checking import Wrong, call, checker, close, compare

LESSON = "06_masks"
__all__ = ["check_causal_mask", "check_key_padding_mask", "check_masked_softmax"]


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@checker("query i may attend to keys 0..i, and True means 'may attend'.")
def check_causal_mask(fn: Callable[[int], Tensor]) -> None:
    """Check `fn(n) -> (n, n) bool`, True where query i may attend to key j (j <= i)."""
    for n in (5, 1, 3):
        got = call(fn, n)
        want = A.causal_mask(n)  # (n, n)
        if isinstance(got, Tensor) and got.shape == want.shape and got.dtype != torch.bool:
            blocked = torch.isneginf(got)  # (n, n)
            if bool(((got == 0) | blocked).all()) and bool(blocked.any()):
                raise Wrong(
                    "you returned an additive mask (0 and -inf); here we want the bool "
                    "convention, True = may attend (torch.bool)"
                )
            raise Wrong(f"wrong dtype: expected torch.bool (True = may attend), got {got.dtype}")
        mistakes = [
            (
                ~want,
                "your mask is True where attending is forbidden: that is nn.MultiheadAttention's "
                "convention. Ours (and scaled_dot_product_attention's) is True = may attend",
            ),
            (
                want.T,
                "you let each query see the future and not the past: row i is query i, and it "
                "may attend to keys j <= i (the lower triangle, torch.tril)",
            ),
            (
                want & ~torch.eye(n, dtype=torch.bool),
                "you masked the diagonal too: a position may always attend to itself (otherwise "
                "query 0 attends to nothing)",
            ),
        ]
        compare(got, want, mistakes, what=f"for n={n}")


@checker("masked keys get weight 0, other weights sum to 1, a fully masked row is all 0.")
def check_masked_softmax(fn: Callable[[Tensor, Tensor], Tensor]) -> None:
    """Check `fn(scores, mask) -> weights`: softmax over the last dim, mask True = keep.

    A row whose every key is masked must come out as zeros (not NaN, not uniform).
    """
    scores = torch.randn(2, 3, 5, generator=_seeded(6)) * 2  # (B, Tq, Tk)
    mask = A.padding_mask(torch.tensor([3, 5]), 5).expand(2, 3, 5).clone()  # (B, Tq, Tk)
    mask[0, 1] = False  # query 1 of sequence 0 may attend to nothing
    plain = torch.softmax(scores, -1)
    mistakes = [
        (
            torch.softmax(scores.masked_fill(~mask, float("-inf")), -1),  # NaN in the empty row
            "the fully masked row (sequence 0, query 1) is NaN: softmax of a row of only -inf "
            "is 0/0. Find rows with no allowed key and give them zeros",
        ),
        (
            torch.softmax(scores.masked_fill(~mask, -1e9), -1),
            "the fully masked row (sequence 0, query 1) sums to 1 (uniform weights): filling "
            "with a large finite number such as -1e9 does that. A query that may attend to "
            "nothing should get all-zero weights",
        ),
        (plain, "you never applied the mask: masked keys must get weight 0"),
        (
            plain * mask,
            "you masked after the softmax, so the rows no longer sum to 1: set the masked "
            "scores to -inf before the softmax",
        ),
        (
            A.masked_softmax(scores, ~mask),
            "you kept the masked keys and dropped the others: True in the mask means keep",
        ),
        (
            A.masked_softmax(scores, mask, dim=-2),
            "softmax over the wrong axis: each query's row sums to 1 over the keys (dim=-1)",
        ),
    ]
    compare(call(fn, scores, mask), A.masked_softmax(scores, mask), mistakes, what="weights")


@checker("nn.MultiheadAttention with your key_padding_mask gives our MultiHeadAttention's output.")
def check_key_padding_mask(fn: Callable[[Tensor], Tensor]) -> None:
    """Check `fn(mask (B, 1, Tk), True = may attend) -> key_padding_mask (B, Tk), True = ignore`."""
    mask = A.padding_mask([4, 2, 6], 6)  # (B, 1, Tk)
    got = call(fn, mask)
    want = A.to_key_padding_mask(mask)  # (B, Tk)
    if isinstance(got, Tensor) and got.shape == (3, 1, 6):
        raise Wrong(
            "wrong shape: expected (3, 6), got (3, 1, 6). key_padding_mask has no query axis: "
            "drop dimension 1 (mask[:, 0] or mask.squeeze(1))"
        )
    if isinstance(got, Tensor) and got.shape == (3, 6) and got.dtype != torch.bool:
        raise Wrong(f"wrong dtype: expected torch.bool (True = ignore), got {got.dtype}")
    mistake = (
        ~want,
        "you kept True = may attend; nn.MultiheadAttention's key_padding_mask means "
        "True = ignore this key. Invert it with ~",
    )
    compare(got, want, [mistake], what="key_padding_mask")
    torch.manual_seed(0)  # the checker restores the learner's random state
    theirs = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(3, 6, 8)
    with torch.no_grad():
        out_theirs, _ = theirs(x, x, x, key_padding_mask=got)
        out_ours = A.MultiHeadAttention.from_torch(theirs)(x, mask=mask).output
    if not close(out_theirs, out_ours):
        raise Wrong("the mask looks right but nn.MultiheadAttention disagrees with ours")
