"""Self-checking exercises for lessons 6-10: masks, self-attention, heads, positions, the block.

Each `check_...(fn)` calls the learner's function on small fixed inputs, compares the result with
the `attention` core (or torch), prints one specific message and returns True or False. A
function whose body is still `raise NotImplementedError` is reported as "Not attempted yet"
rather than as a failure, so a notebook runs top to bottom before any exercise is done.

Messages name the misconception when one is recognised ("you masked the diagonal too",
"you divided by sqrt(d_model) instead of sqrt(d_head)"), else the first wrong position with the
expected and the received value. Reference solutions: `attention.exercises.layers_solutions`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import attention as A

from ._checking import call as _call
from ._checking import checker as _checker

__all__ = [
    "check_attention_pool",
    "check_causal_mask",
    "check_key_padding_mask",
    "check_layer_norm",
    "check_masked_softmax",
    "check_mha_parameter_count",
    "check_multi_head_scores",
    "check_parameter_count",
    "check_permutation_equivariance",
    "check_positional_encoding",
    "check_self_attention",
    "check_split_heads",
]


# --- the machinery every checker shares ------------------------------------------------------


def _tensor_problem(got: object, shape: tuple[int, ...], dtype: torch.dtype | None = None):
    """Why `got` is not a tensor of `shape` (and `dtype`), or None if it is."""
    if got is None:
        return "your function returned None; did you forget `return`?"
    if not isinstance(got, Tensor):
        return f"expected a torch.Tensor, got {type(got).__name__}"
    if tuple(got.shape) != tuple(shape):
        return f"wrong shape: expected {tuple(shape)}, got {tuple(got.shape)}"
    if dtype is not None and got.dtype != dtype:
        return f"wrong dtype: expected {dtype}, got {got.dtype}"
    return None


def _same(got: Tensor, want: Tensor, atol: float = 1e-5) -> bool:
    """Equal shapes and values (NaN never matches)."""
    if got.shape != want.shape:
        return False
    if got.dtype == torch.bool or want.dtype == torch.bool:
        return got.dtype == want.dtype and bool(torch.equal(got, want))
    return bool(torch.allclose(got.double(), want.double(), atol=atol, rtol=1e-4))


def _first_difference(got: Tensor, want: Tensor, atol: float = 1e-5) -> str:
    """Name the first position where got and want differ, with both values."""
    if got.dtype == torch.bool or want.dtype == torch.bool:
        wrong = got != want
    else:
        g, w = got.double(), want.double()
        wrong = ~torch.isclose(g, w, atol=atol, rtol=1e-4)
    index = tuple(int(i) for i in wrong.nonzero()[0])
    g, w = got[index].item(), want[index].item()
    if isinstance(g, float):
        g, w = f"{g:.4g}", f"{w:.4g}"
    return f"wrong value at index {index}: expected {w}, got {g}"


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@contextlib.contextmanager
def _global_seed(seed: int):
    """Seed torch's global generator inside the block (modules draw their initial weights from
    it) and restore the learner's random state afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _as_int(got: object) -> object:
    """Accept 12, 12.0 and tensor(12) as the count 12; anything else is returned unchanged."""
    if isinstance(got, Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, float) and got.is_integer():
        got = int(got)
    return got


# --- lesson 6: masks --------------------------------------------------------------------------


@_checker("query i may attend to keys 0..i, and True means 'may attend'.")
def check_causal_mask(fn: Callable[[int], Tensor]) -> str | None:
    """Check `fn(n) -> (n, n) bool`, True where query i may attend to key j (j <= i)."""
    for n in (5, 1, 3):
        got = _call(fn, n)
        want = A.causal_mask(n)  # (n, n)
        if isinstance(got, Tensor) and got.shape == want.shape and got.dtype != torch.bool:
            blocked = torch.isneginf(got) if got.is_floating_point() else None
            if blocked is not None and bool(((got == 0) | blocked).all()) and bool(blocked.any()):
                return (
                    "you returned an additive mask (0 and -inf); here we want the bool "
                    "convention, True = may attend (torch.bool)"
                )
            return f"wrong dtype: expected torch.bool (True = may attend), got {got.dtype}"
        problem = _tensor_problem(got, (n, n), torch.bool)
        if problem:
            return problem
        if torch.equal(got, want):
            continue
        eye = torch.eye(n, dtype=torch.bool)
        if torch.equal(got, ~want):
            return (
                "your mask is True where attending is forbidden: that is nn.MultiheadAttention's "
                "convention. Ours (and scaled_dot_product_attention's) is True = may attend"
            )
        if torch.equal(got, want.T):
            return (
                "you let each query see the future and not the past: row i is query i, and it "
                "may attend to keys j <= i (the lower triangle, torch.tril)"
            )
        if torch.equal(got, want & ~eye):
            return (
                "you masked the diagonal too: a position may always attend to itself (otherwise "
                "query 0 attends to nothing)"
            )
        return f"for n={n}, {_first_difference(got, want)}"
    return None


@_checker("masked keys get weight 0, other weights sum to 1, a fully masked row is all 0.")
def check_masked_softmax(fn: Callable[[Tensor, Tensor], Tensor]) -> str | None:
    """Check `fn(scores, mask) -> weights`: softmax over the last dim, mask True = keep.

    A row whose every key is masked must come out as zeros (not NaN, not uniform).
    """
    scores = torch.randn(2, 3, 5, generator=_seeded(6)) * 2  # (B, Tq, Tk)
    lengths = torch.tensor([3, 5])
    mask = A.padding_mask(lengths, 5).expand(2, 3, 5).clone()  # (B, Tq, Tk)
    mask[0, 1] = False  # query 1 of sequence 0 may attend to nothing
    got = _call(fn, scores, mask)
    problem = _tensor_problem(got, scores.shape)
    if problem:
        return problem
    want = A.masked_softmax(scores, mask)
    if _same(got, want):
        return None
    empty = ~mask.any(-1)  # (B, Tq) the fully masked rows
    normal = ~empty
    if bool(torch.isnan(got[empty]).any()) and _same(got[normal], want[normal]):
        return (
            "the fully masked row (sequence 0, query 1) is NaN: softmax of a row of only -inf "
            "is 0/0. Find rows with no allowed key and give them zeros"
        )
    if _same(got[normal], want[normal]) and _same(got[empty].sum(-1), torch.ones(1)):
        return (
            "the fully masked row (sequence 0, query 1) sums to 1 (uniform weights): filling "
            "with a large finite number such as -1e9 does that. A query that may attend to "
            "nothing should get all-zero weights"
        )
    if bool(torch.isnan(got).any()):
        return "your weights contain NaN outside the fully masked row"
    if _same(got[normal], torch.softmax(scores, -1)[normal]):
        return "you never applied the mask: masked keys must get weight 0"
    if _same(got, torch.softmax(scores, -1) * mask):
        return (
            "you masked after the softmax, so the rows no longer sum to 1: set the masked "
            "scores to -inf before the softmax"
        )
    inverted = A.masked_softmax(scores, ~mask)
    if _same(got[normal & (~mask).any(-1)], inverted[normal & (~mask).any(-1)]):
        return "you kept the masked keys and dropped the others: True in the mask means keep"
    if _same(got[normal], A.masked_softmax(scores, mask, dim=-2)[normal]):
        return "softmax over the wrong axis: each query's row sums to 1 over the keys (dim=-1)"
    return _first_difference(got, want)


@_checker("nn.MultiheadAttention with your key_padding_mask gives our MultiHeadAttention's output.")
def check_key_padding_mask(fn: Callable[[Tensor], Tensor]) -> str | None:
    """Check `fn(mask (B, 1, Tk), True = may attend) -> key_padding_mask (B, Tk), True = ignore`."""
    mask = A.padding_mask([4, 2, 6], 6)  # (B, 1, Tk)
    got = _call(fn, mask)
    want = A.to_key_padding_mask(mask)  # (B, Tk)
    if isinstance(got, Tensor) and got.shape == (3, 1, 6):
        return (
            "wrong shape: expected (3, 6), got (3, 1, 6). key_padding_mask has no query axis: "
            "drop dimension 1 (mask[:, 0] or mask.squeeze(1))"
        )
    if isinstance(got, Tensor) and got.shape == (3, 6) and got.dtype != torch.bool:
        return f"wrong dtype: expected torch.bool (True = ignore), got {got.dtype}"
    problem = _tensor_problem(got, (3, 6), torch.bool)
    if problem:
        return problem
    if torch.equal(got, ~want):
        return (
            "you kept True = may attend; nn.MultiheadAttention's key_padding_mask means "
            "True = ignore this key. Invert it with ~"
        )
    if not torch.equal(got, want):
        return _first_difference(got, want)
    with _global_seed(0):
        theirs = nn.MultiheadAttention(8, 2, batch_first=True).eval()
        x = torch.randn(3, 6, 8)
        ours = A.MultiHeadAttention.from_torch(theirs)
    with torch.no_grad():
        out_theirs, _ = theirs(x, x, x, key_padding_mask=got)
        out_ours = ours(x, mask=mask).output
    if not _same(out_theirs, out_ours, atol=1e-5):
        return "the mask looks right but nn.MultiheadAttention disagrees with ours"
    return None


# --- lesson 7: self-attention and projections -------------------------------------------------


@_checker("Q = X W_q, K = X W_k, V = X W_v, then softmax(Q K^T / sqrt(d_k)) V.")
def check_self_attention(fn: Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]) -> str | None:
    """Check `fn(x (B, T, M), w_q (M, D), w_k (M, D), w_v (M, Dv)) -> output (B, T, Dv)`."""
    g = _seeded(7)
    x = torch.randn(2, 4, 6, generator=g)  # (B, T, M)
    w_q, w_k = torch.randn(6, 3, generator=g), torch.randn(6, 3, generator=g)  # (M, D)
    w_v = torch.randn(6, 5, generator=g)  # (M, Dv)
    got = _call(fn, x, w_q, w_k, w_v)
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (B, T, D), (B, T, D), (B, T, Dv)
    want = A.scaled_dot_product_attention(q, k, v).output  # (B, T, Dv)
    if isinstance(got, Tensor) and tuple(got.shape) == (2, 4, 6):
        return (
            "wrong shape: expected (2, 4, 5), got (2, 4, 6): the output's width is the values' "
            "width, so project the values with w_v"
        )
    problem = _tensor_problem(got, want.shape)
    if problem:
        return problem
    if _same(got, want):
        return None

    def attend(q, k, v, scale=3**-0.5, dim=-1):
        return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=dim) @ v

    if _same(got, attend(q, k, v, scale=1.0)):
        return "you forgot to divide the scores by sqrt(d_k) (d_k = 3 here, the width of q and k)"
    if _same(got, attend(q, k, v, scale=1 / math.sqrt(6))):
        return "you divided by sqrt(6), the input width; d_k is the width of q and k (3 here)"
    if _same(got, attend(q, k, v, scale=1 / 3)):
        return "you divided by d_k itself; divide by its square root"
    if _same(got, attend(q, k, v, dim=-2)):
        return "softmax over the wrong axis: each query's weights sum to 1 over the keys (dim=-1)"
    if _same(got, attend(q, q, v)):
        return "your keys look like they were made with w_q: K = X W_k"
    return _first_difference(got, want)


@_checker("one learned query turns any number of tokens into one vector, padding ignored.")
def check_attention_pool(fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> str | None:
    """Check `fn(x (B, T, M), query (M,), mask (B, T) True = real token) -> (B, M)`.

    weights = softmax over real tokens of (x @ query) / sqrt(M); output = weights @ x.
    """
    g = _seeded(8)
    x = torch.randn(3, 5, 4, generator=g)  # (B, T, M)
    query = torch.randn(4, generator=g) * 2  # (M,)
    mask = A.padding_mask([5, 2, 3], 5)[:, 0]  # (B, T)
    got = _call(fn, x, query, mask)
    res = A.scaled_dot_product_attention(query.expand(3, 1, 4), x, x, mask.unsqueeze(1))
    want = res.output[:, 0]  # (B, M)
    if isinstance(got, Tensor) and tuple(got.shape) == (3, 1, 4):
        return "wrong shape: expected (3, 4), got (3, 1, 4): drop the query axis (.squeeze(1))"
    problem = _tensor_problem(got, want.shape)
    if problem:
        return problem
    if _same(got, want):
        return None
    noisy = x.clone()
    noisy[~mask] = 100.0  # change only the padding
    try:
        moved = fn(noisy, query.clone(), mask.clone())
    except Exception:  # the first call worked; a failure here tells us nothing new
        moved = got
    if isinstance(moved, Tensor) and not _same(moved, got):
        return "padding leaked in: your result changes when only the padded tokens change"
    if _same(got, (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)):
        return (
            "that is mean pooling: every real token got the same weight. Let the query score "
            "the tokens: softmax(x @ query / sqrt(M))"
        )
    plain = A.scaled_dot_product_attention(
        query.expand(3, 1, 4), x, x, mask.unsqueeze(1), scale=1.0
    ).output[:, 0]
    if _same(got, plain):
        return "you forgot to divide the scores by sqrt(M) (M = 4 here)"
    return _first_difference(got, want)


# --- lesson 8: multi-head attention -----------------------------------------------------------


@_checker("head h gets columns h*D .. (h+1)*D - 1 of every position, shaped (B, H, T, D).")
def check_split_heads(fn: Callable[[Tensor, int], Tensor]) -> str | None:
    """Check `fn(x (B, T, M), n_heads) -> (B, H, T, M // H)`."""
    for b, t, m, h in ((2, 5, 12, 3), (1, 4, 6, 1), (2, 3, 8, 8)):
        x = torch.randn(b, t, m, generator=_seeded(m))  # (B, T, M)
        d = m // h
        got = _call(fn, x, h)
        want = A.split_heads(x, h)  # (B, H, T, D)
        if isinstance(got, Tensor) and tuple(got.shape) == (b, t, h, d) and t != h:
            return (
                f"wrong shape: expected (B, H, T, D) = {(b, h, t, d)}, got {(b, t, h, d)}: "
                "you forgot .transpose(1, 2) after the view"
            )
        problem = _tensor_problem(got, want.shape)
        if problem:
            return f"with x of shape {(b, t, m)} and n_heads={h}, {problem}"
        if _same(got, want):
            continue
        if _same(got, x.reshape(b, h, t, d)):
            return (
                "right shape, wrong contents: reshaping (B, T, M) straight to (B, H, T, D) "
                "cuts the memory in the wrong order, so one head mixes pieces of different "
                "tokens. View as (B, T, H, D) first, then .transpose(1, 2)"
            )
        if _same(got, x.reshape(b, t, d, h).permute(0, 3, 1, 2)):
            return (
                "each head got every H-th column; head h should get the contiguous slice "
                "h*D .. (h+1)*D - 1: view as (B, T, H, D), not (B, T, D, H)"
            )
        return f"with n_heads={h}, {_first_difference(got, want)}"
    return None


@_checker("each head's scores are divided by sqrt(d_head), the width that head works with.")
def check_multi_head_scores(fn: Callable[[Tensor, Tensor, int], Tensor]) -> str | None:
    """Check `fn(q (B, Tq, M), k (B, Tk, M), n_heads) -> scores (B, H, Tq, Tk)`, before softmax."""
    g = _seeded(9)
    q, k = torch.randn(2, 3, 12, generator=g), torch.randn(2, 4, 12, generator=g)
    h, d = 3, 4
    got = _call(fn, q, k, h)
    qh, kh = A.split_heads(q, h), A.split_heads(k, h)  # (B, H, Tq, D), (B, H, Tk, D)
    dots = qh @ kh.transpose(-2, -1)  # (B, H, Tq, Tk)
    want = dots / math.sqrt(d)
    problem = _tensor_problem(got, want.shape)
    if problem:
        return problem
    if _same(got, want):
        return None
    if _same(got, dots / math.sqrt(12)):
        return (
            "you divided by sqrt(d_model) = sqrt(12) instead of sqrt(d_head) = sqrt(12 / 3): "
            "each head's dot products add up only d_head terms, so their spread is sqrt(d_head). "
            "Your scores are sqrt(n_heads) times too small and every softmax too flat"
        )
    if _same(got, dots):
        return "you forgot to scale: divide each head's scores by sqrt(d_head)"
    if _same(got, dots / d):
        return "you divided by d_head itself; divide by its square root"
    wrong_split = q.reshape(2, h, 3, d) @ k.reshape(2, h, 4, d).transpose(-2, -1) / math.sqrt(d)
    if _same(got, wrong_split):
        return (
            "the scale is right but the heads are mixed up: split with .view(B, T, H, D) then "
            ".transpose(1, 2) (or A.split_heads)"
        )
    return _first_difference(got, want)


@_checker("4 projections of M x M weights plus 4 M biases, whatever the number of heads.")
def check_mha_parameter_count(fn: Callable[[int, int, bool], int]) -> str | None:
    """Check `fn(d_model, n_heads, bias) -> int`: trainable parameters of multi-head attention."""
    cases = ((8, 2, True), (8, 4, True), (12, 3, False), (64, 8, True))
    for m, h, bias in cases:
        got = _as_int(_call(fn, m, h, bias))
        if not isinstance(got, int) or isinstance(got, bool):
            return f"expected an int, got {type(got).__name__}"
        with _global_seed(0):
            want = A.count_parameters(A.MultiHeadAttention(m, h, bias=bias))
        if got == want:
            continue
        where = f"for d_model={m}, n_heads={h}, bias={bias}: expected {want}, got {got}"
        other = _as_int(_call(fn, m, 1, bias))
        if other != got:
            return (
                f"{where}. Your count changes with n_heads, but splitting into heads only "
                "reshapes the same four M x M projections"
            )
        if bias and got == 4 * m * m:
            return f"{where}. You left out the biases: each of the 4 projections has M of them"
        if got in (3 * m * m, 3 * m * m + 3 * m * bias):
            return f"{where}. You forgot the output projection W_O (the fourth M x M matrix)"
        if not bias and got == 4 * m * m + 4 * m:
            return f"{where}. With bias=False there are no biases to count"
        return where
    return None


# --- lesson 9: positional encoding ------------------------------------------------------------


@_checker("shuffling the tokens only shuffles attention's output; positions break that.")
def check_permutation_equivariance(fn: Callable[[Callable, Tensor, Tensor], bool]) -> str | None:
    """Check `fn(f, x (B, T, M), perm (T,)) -> bool`: is f(x[:, perm]) == f(x)[:, perm]?"""
    with _global_seed(10):
        mha = A.MultiHeadAttention(8, 2).eval()
        x = torch.randn(2, 5, 8)
    pe = A.sinusoidal_positional_encoding(5, 8)  # (T, M)
    causal = A.causal_mask(5)

    def self_attention(x):
        with torch.no_grad():
            return mha(x).output

    def with_positions(x):
        with torch.no_grad():
            return mha(x + pe).output

    def causal_attention(x):
        with torch.no_grad():
            return mha(x, mask=causal).output

    perm = torch.tensor([1, 2, 0, 4, 3])  # a 3-cycle, so perm and its inverse differ
    cases = (
        (self_attention, True, "plain self-attention"),
        (with_positions, False, "self-attention with positional encodings added"),
        (causal_attention, False, "causal self-attention"),
    )
    for f, want, label in cases:
        got = _call(fn, f, x, perm)
        if isinstance(got, Tensor) and got.numel() == 1 and got.dtype == torch.bool:
            got = bool(got)
        if not isinstance(got, bool):
            return f"expected a bool (e.g. from torch.allclose), got {type(got).__name__}"
        if got == want:
            continue
        if want:
            return (
                f"you said False for {label}, which is equivariant. Compare f(x[:, perm]) with "
                "f(x)[:, perm] (the output shuffled the same way, not f(x) itself and not the "
                "inverse shuffle), using torch.allclose: sums in another order differ in the "
                "last bits, so == is too strict"
            )
        return (
            f"you said True for {label}, which is not equivariant: position now matters. "
            "Does your function really call f on the shuffled input?"
        )
    return None


@_checker("PE[pos, 2i] = sin(pos / 10000^(2i/M)), PE[pos, 2i+1] = cos(the same angle).")
def check_positional_encoding(fn: Callable[[int, int], Tensor]) -> str | None:
    """Check `fn(seq_len, d_model) -> (seq_len, d_model)`, the sinusoidal table."""
    for t, m in ((6, 8), (50, 16)):
        got = _call(fn, t, m)
        want = A.sinusoidal_positional_encoding(t, m)  # (T, M)
        problem = _tensor_problem(got, want.shape)
        if problem:
            return f"for seq_len={t}, d_model={m}, {problem}"
        if not got.is_floating_point():
            return f"expected a floating tensor, got {got.dtype}"
        if _same(got, want, atol=1e-4):
            continue
        pos = torch.arange(t, dtype=torch.float64)[:, None]  # (T, 1)
        two_i = torch.arange(0, m, 2, dtype=torch.float64)  # (M/2,)
        angle = pos / 10000 ** (two_i / m)  # (T, M/2)
        swapped = torch.stack([torch.cos(angle), torch.sin(angle)], -1).reshape(t, m)
        halves = torch.cat([torch.sin(angle), torch.cos(angle)], -1)
        slow = pos / 10000 ** (two_i / 2 / m)  # the "forgot the 2" frequencies
        no_two = torch.stack([torch.sin(slow), torch.cos(slow)], -1).reshape(t, m)
        from_one = A.sinusoidal_positional_encoding(t, m, offset=1)
        if _same(got, swapped, atol=1e-4):
            return "sine and cosine are swapped: even columns (2i) hold sin, odd ones cos"
        if _same(got, halves, atol=1e-4):
            return (
                "you put all the sines first and all the cosines after; they interleave: "
                "column 2i is a sine and column 2i+1 the cosine of the same angle"
            )
        if _same(got, no_two, atol=1e-4):
            return (
                "the frequencies are off: the exponent is 2i / d_model, where 2i is the even "
                "column index (i counts pairs of columns)"
            )
        if _same(got, from_one, atol=1e-4):
            return "positions start at 0, not 1"
        return f"for seq_len={t}, d_model={m}, {_first_difference(got, want, atol=1e-4)}"
    return None


# --- lesson 10: the Transformer block ---------------------------------------------------------


@_checker(
    "each token is normalised over its own features, then scaled by gamma and shifted by beta."
)
def check_layer_norm(fn: Callable[[Tensor, Tensor, Tensor, float], Tensor]) -> str | None:
    """Check `fn(x (B, T, M), gamma (M,), beta (M,), eps) -> (B, T, M)` against F.layer_norm."""
    g = _seeded(11)
    x = torch.randn(3, 4, 6, generator=g) * 3 + 1  # (B, T, M)
    x[0, 0] = 2.5  # a constant token: its variance is 0
    x[1, 2] = torch.tensor([1, -1, 1, -1, 1, -1]) * 3e-3  # a token with a tiny variance
    gamma = torch.rand(6, generator=g) + 0.5
    beta = torch.randn(6, generator=g)
    eps = 1e-5
    got = _call(fn, x, gamma, beta, eps)
    want = F.layer_norm(x, (6,), gamma, beta, eps)
    problem = _tensor_problem(got, want.shape)
    if problem:
        return problem
    if _same(got, want, atol=1e-4):
        return None

    def norm(dims, correction=0, eps_inside=True, affine=True):
        mean = x.mean(dims, keepdim=True)
        var = x.var(dims, keepdim=True, correction=correction)
        den = (var + eps).sqrt() if eps_inside else var.sqrt() + eps
        y = (x - mean) / den
        return y * gamma + beta if affine else y

    if not bool(torch.isfinite(got).all()):
        return (
            "NaN or inf for the constant token (batch 0, position 0): its variance is 0, so "
            "add eps inside the square root: (x - mean) / sqrt(var + eps)"
        )
    if _same(got, norm(0), atol=1e-4):
        return "you normalised over the batch (dim 0): that is BatchNorm's axis, not LayerNorm's"
    if _same(got, norm((0, 1)), atol=1e-4):
        return (
            "you normalised each feature over batch and positions: that is BatchNorm1d; "
            "LayerNorm uses each token's own features (dim -1)"
        )
    if _same(got, norm(1), atol=1e-4):
        return "you normalised over the positions (dim 1); LayerNorm uses the features (dim -1)"
    if _same(got, norm(-1, correction=1), atol=1e-4):
        return (
            "you used the unbiased variance (divides by M - 1); LayerNorm divides by M: "
            "x.var(-1, unbiased=False) or correction=0"
        )
    if _same(got, norm(-1, eps_inside=False), atol=1e-4):
        return (
            "eps is in the wrong place: (x - mean) / (std + eps) differs for tokens with tiny "
            "variance (batch 1, position 2); use (x - mean) / sqrt(var + eps)"
        )
    if _same(got, norm(-1, affine=False), atol=1e-4):
        return "you normalised correctly but forgot gamma and beta: return y * gamma + beta"
    return _first_difference(got, want, atol=1e-4)


@_checker("4 M^2 + 4 M for attention, 2 M d_ff + d_ff + M for the FFN, 4 M for two LayerNorms.")
def check_parameter_count(fn: Callable[[int, int], int]) -> str | None:
    """Check `fn(d_model, d_ff) -> int`, every trainable parameter of one encoder layer."""
    for m, d_ff in ((8, 32), (16, 24), (512, 2048)):
        got = _as_int(_call(fn, m, d_ff))
        if not isinstance(got, int) or isinstance(got, bool):
            return f"expected an int, got {type(got).__name__}"
        with _global_seed(0):
            want = A.count_parameters(A.EncoderLayer(m, 1, d_ff))
        if got == want:
            continue
        where = f"for d_model={m}, d_ff={d_ff}: expected {want}, got {got}"
        weights = 4 * m * m + 2 * m * d_ff
        if got == weights:
            return (
                f"{where}. You counted the weight matrices only (the textbook 12 M^2 when "
                "d_ff = 4 M): add the biases (4 M in attention, d_ff + M in the FFN) and the "
                "two LayerNorms (2 M each)"
            )
        if got == 12 * m * m:
            return (
                f"{where}. 12 M^2 is the textbook estimate: it leaves out biases and LayerNorms "
                "and assumes d_ff = 4 M. Count exactly, with the d_ff you are given"
            )
        if got == want - 4 * m:
            return f"{where}. Add the two LayerNorms: each has a weight and a bias of size M"
        if got == want - 2 * m:
            return f"{where}. There are two LayerNorms (one per sub-layer), each with 2 M"
        d_ff4 = 4 * m
        if got == 4 * m * m + 4 * m + 2 * m * d_ff4 + d_ff4 + m + 4 * m:
            return f"{where}. You assumed d_ff = 4 * d_model; use the d_ff argument"
        return where
    return None
