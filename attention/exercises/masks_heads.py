"""Self-checking exercises for lessons 6-8: masks, self-attention, multi-head attention.

Each `check_*` runs the learner's function on small fixed inputs, compares with the `attention`
core (or torch) through the kit in `_checking` and prints one line, naming the misconception
when it is a known one ("you masked the diagonal too", "you divided by sqrt(d_model) instead of
sqrt(d_head)"), else the first wrong position with the expected and the received value.

Reference solutions are in `attention.exercises.solution_layers`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

import attention as A

from ._checking import (
    Wrong,
    call,
    checker,
    close,
    compare,
    expect_int,
    name_mistake,
    scale_mistakes,
)

__all__ = [
    "check_attention_pool",
    "check_causal_mask",
    "check_key_padding_mask",
    "check_masked_softmax",
    "check_mha_parameter_count",
    "check_multi_head_scores",
    "check_self_attention",
    "check_split_heads",
]


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- lesson 6: masks --------------------------------------------------------------------------


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


# --- lesson 7: self-attention and projections -------------------------------------------------


@checker("Q = X W_q, K = X W_k, V = X W_v, then softmax(Q K^T / sqrt(d_k)) V.")
def check_self_attention(fn: Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check `fn(x (B, T, M), w_q (M, D), w_k (M, D), w_v (M, Dv)) -> output (B, T, Dv)`."""
    g = _seeded(7)
    x = torch.randn(2, 4, 6, generator=g)  # (B, T, M)
    w_q, w_k = torch.randn(6, 3, generator=g), torch.randn(6, 3, generator=g)  # (M, D)
    w_v = torch.randn(6, 5, generator=g)  # (M, Dv)
    got = call(fn, x, w_q, w_k, w_v)
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (B, T, D), (B, T, D), (B, T, Dv)
    if isinstance(got, Tensor) and tuple(got.shape) == (2, 4, 6):
        raise Wrong(
            "wrong shape: expected (2, 4, 5), got (2, 4, 6): the output's width is the values' "
            "width, so project the values with w_v"
        )

    def attend(q: Tensor, k: Tensor, scale: float = 3**-0.5, dim: int = -1) -> Tensor:
        return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=dim) @ v  # (B, T, Dv)

    mistakes = [
        *scale_mistakes(lambda c: attend(q, k, scale=c), "d_k", 3),
        (
            attend(q, k, scale=6**-0.5),
            "you divided by sqrt(6), the input width; d_k is the width of q and k (3 here)",
        ),
        (
            attend(q, k, dim=-2),
            "softmax over the wrong axis: each query's weights sum to 1 over the keys (dim=-1)",
        ),
        (
            attend(k, q),
            "your scores are transposed: k @ q^T puts the keys on the rows. Row i must be "
            "query i against every key, q @ k.transpose(-2, -1), before the softmax over dim=-1",
        ),
        (attend(q, q), "your keys look like they were made with w_q: K = X W_k"),
    ]
    compare(got, A.scaled_dot_product_attention(q, k, v).output, mistakes, what="output")


@checker("one learned query turns any number of tokens into one vector, padding ignored.")
def check_attention_pool(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """Check `fn(x (B, T, M), query (M,), mask (B, T) True = real token) -> (B, M)`.

    weights = softmax over real tokens of (x @ query) / sqrt(M); output = weights @ x.
    """
    g = _seeded(8)
    x = torch.randn(3, 5, 4, generator=g)  # (B, T, M)
    query = torch.randn(4, generator=g) * 2  # (M,)
    mask = A.padding_mask([5, 2, 3], 5)[:, 0]  # (B, T)
    got = call(fn, x, query, mask)

    def pool(scale: float) -> Tensor:
        queries = query.expand(3, 1, 4)  # (B, 1, M) the same learned query for every sequence
        result = A.scaled_dot_product_attention(queries, x, x, mask[:, None], scale=scale)
        return result.output[:, 0]  # (B, M)

    want = pool(4**-0.5)
    if isinstance(got, Tensor) and tuple(got.shape) == (3, 1, 4):
        raise Wrong(
            "wrong shape: expected (3, 4), got (3, 1, 4): drop the query axis (.squeeze(1))"
        )
    if isinstance(got, Tensor) and not close(got, want):
        noisy = x.clone()
        noisy[~mask] = 100.0  # change only the padding
        moved = call(fn, noisy, query, mask)
        if isinstance(moved, Tensor) and not close(moved, got):
            raise Wrong("padding leaked in: your result changes when only the padded tokens change")
    mistakes = [
        (
            (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True),
            "that is mean pooling: every real token got the same weight. Let the query score "
            "the tokens: softmax(x @ query / sqrt(M))",
        ),
        *scale_mistakes(pool, "M", 4),
    ]
    compare(got, want, mistakes, what="pooled output")


# --- lesson 8: multi-head attention -----------------------------------------------------------


@checker("head h gets columns h*D .. (h+1)*D - 1 of every position, shaped (B, H, T, D).")
def check_split_heads(fn: Callable[[Tensor, int], Tensor]) -> None:
    """Check `fn(x (B, T, M), n_heads) -> (B, H, T, M // H)`."""
    for b, t, m, h in ((2, 5, 12, 3), (1, 4, 6, 1), (2, 3, 8, 8)):
        x = torch.randn(b, t, m, generator=_seeded(m))  # (B, T, M)
        d = m // h
        got = call(fn, x, h)
        if isinstance(got, Tensor) and tuple(got.shape) == (b, t, h, d) and t != h:
            raise Wrong(
                f"wrong shape: expected (B, H, T, D) = {(b, h, t, d)}, got {(b, t, h, d)}: "
                "you forgot .transpose(1, 2) after the view"
            )
        mistakes = [
            (
                x.reshape(b, h, t, d),
                "right shape, wrong contents: reshaping (B, T, M) straight to (B, H, T, D) "
                "cuts the memory in the wrong order, so one head mixes pieces of different "
                "tokens. View as (B, T, H, D) first, then .transpose(1, 2)",
            ),
            (
                x.reshape(b, t, d, h).permute(0, 3, 1, 2),
                "each head got every H-th column; head h should get the contiguous slice "
                "h*D .. (h+1)*D - 1: view as (B, T, H, D), not (B, T, D, H)",
            ),
        ]
        what = f"with x of shape {(b, t, m)} and n_heads={h}"
        compare(got, A.split_heads(x, h), mistakes, what=what)


@checker("each head's scores are divided by sqrt(d_head), the width that head works with.")
def check_multi_head_scores(fn: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """Check `fn(q (B, Tq, M), k (B, Tk, M), n_heads) -> scores (B, H, Tq, Tk)`, before softmax."""
    g = _seeded(9)
    q, k = torch.randn(2, 3, 12, generator=g), torch.randn(2, 4, 12, generator=g)
    h, d = 3, 4
    qh, kh = A.split_heads(q, h), A.split_heads(k, h)  # (B, H, Tq, D), (B, H, Tk, D)
    dots = qh @ kh.transpose(-2, -1)  # (B, H, Tq, Tk)
    want = dots / math.sqrt(d)
    mistakes = [
        (
            dots / math.sqrt(12),
            "you divided by sqrt(d_model) = sqrt(12) instead of sqrt(d_head) = sqrt(12 / 3): "
            "each head's dot products add up only d_head terms, so their spread is sqrt(d_head). "
            "Your scores are sqrt(n_heads) times too small and every softmax too flat",
        ),
        *scale_mistakes(lambda c: dots * c, "d_head", d),
        (
            q.reshape(2, h, 3, d) @ k.reshape(2, h, 4, d).transpose(-2, -1) / math.sqrt(d),
            "the scale is right but the heads are mixed up: split with .view(B, T, H, D) then "
            ".transpose(1, 2) (or A.split_heads)",
        ),
        (
            want.transpose(-2, -1),
            "your scores are transposed: they are (B, H, Tq, Tk), one row per query, "
            "q @ k.transpose(-2, -1)",
        ),
    ]
    compare(call(fn, q, k, h), want, mistakes, what="scores")


@checker("4 projections of M x M weights plus 4 M biases, whatever the number of heads.")
def check_mha_parameter_count(fn: Callable[[int, int, bool], int]) -> None:
    """Check `fn(d_model, n_heads, bias) -> int`: trainable parameters of multi-head attention."""
    for m, h, bias in ((8, 2, True), (8, 4, True), (12, 3, False), (64, 8, True)):
        got = expect_int(call(fn, m, h, bias))
        want = A.count_parameters(A.MultiHeadAttention(m, h, bias=bias))
        if got == want:
            continue
        where = f"for d_model={m}, n_heads={h}, bias={bias}: expected {want}, got {got}"
        if expect_int(call(fn, m, 1, bias)) != got:
            raise Wrong(
                f"{where}. Your count changes with n_heads, but splitting into heads only "
                "reshapes the same four M x M projections"
            )
        no_w_o = f"{where}. You forgot the output projection W_O (the fourth M x M matrix)"
        mistakes = [(3 * m * m, no_w_o), (3 * m * m + 3 * m * bias, no_w_o)]
        if bias:
            biases = f"{where}. You left out the biases: each of the 4 projections has M of them"
            mistakes.append((4 * m * m, biases))
        else:
            mistakes.append(
                (4 * m * m + 4 * m, f"{where}. With bias=False there are no biases to count")
            )
        name_mistake(got, mistakes)
        raise Wrong(where)
