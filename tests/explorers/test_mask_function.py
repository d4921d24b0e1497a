"""Masks and biases you write (lesson 20): the core's new masks, FlexAttention's functions
evaluated densely, the whitelist that keeps a learner's text from running anything else, the
comparison with the course's masks, and the MaskFunctionExplorer headless.

FlexAttention itself (torch.nn.attention.flex_attention, uncompiled on the CPU) is the
reference for mask_from_mod and scores_from_mod and for block_counts.
"""

from __future__ import annotations

import time
import warnings

import pytest
import torch

from attention.explore.mask_function import (
    PRESETS,
    MaskFunctionParams,
    explore_mask_function,
    known_masks,
)
from attention.functional import masked_softmax, scaled_dot_product_attention
from attention.masks import (
    block_counts,
    causal_mask,
    document_mask,
    mask_from_mod,
    prefix_lm_mask,
    scores_from_mod,
)
from attention.positional import alibi_bias
from attention.sandbox import (
    MaskFunctionError,
    compile_mask_function,
    document_ids,
    run_mask_function,
)
from attention.sandbox.whitelist import MAX_SOURCE

flex = pytest.importorskip("torch.nn.attention.flex_attention")


def _flex(*args, **kwargs):
    with warnings.catch_warnings():  # uncompiled on the CPU: it says so each call
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        return flex.flex_attention(*args, **kwargs)


# --- the core: new masks and FlexAttention's functions evaluated on every cell ----------------


def test_prefix_lm_mask_is_bidirectional_in_the_prefix_and_causal_after():
    m = prefix_lm_mask(6, 3)
    assert m[:3, :3].all() and m[0, 2]  # the prefix sees itself both ways
    assert torch.equal(m[3:], causal_mask(6)[3:] | (torch.arange(6) < 3))
    assert not m[3, 4] and not m[0, 3]  # no look-ahead past the prefix
    assert torch.equal(prefix_lm_mask(6, 1), causal_mask(6))
    assert prefix_lm_mask(6, 6).all()
    with pytest.raises(ValueError, match=r"prefix: expected an int in \[0, seq_len=6\], got 7"):
        prefix_lm_mask(6, 7)
    with pytest.raises(TypeError, match="prefix: expected an int, got float"):
        prefix_lm_mask(6, 2.0)


def test_document_mask_keeps_packed_documents_apart():
    ids = torch.tensor([0, 0, 1, 1, 1, 2])
    m = document_mask(ids)
    want = torch.tensor(
        [[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0],
         [0, 0, 1, 1, 0, 0], [0, 0, 1, 1, 1, 0], [0, 0, 0, 0, 0, 1]], dtype=torch.bool
    )  # fmt: skip
    assert torch.equal(m, want)
    assert torch.equal(document_mask(ids, causal=False), ids[:, None] == ids[None, :])
    with pytest.raises(ValueError, match=r"doc_ids: expected a non-empty 1-D tensor of ints"):
        document_mask(torch.tensor([0.0, 1.0]))


def test_mask_from_mod_broadcasts_indices_and_refuses_what_is_not_a_mask():
    assert torch.equal(mask_from_mod(lambda b, h, q, k: q >= k, 5), causal_mask(5))
    assert torch.equal(
        mask_from_mod(lambda b, h, q, k: k <= q + 2, 3, 5), causal_mask(3, 5, offset=2)
    )
    assert mask_from_mod(lambda b, h, q, k: h == 3, 2, h=3).all()
    with pytest.raises(TypeError, match="mask_mod: expected bools .* got torch.int64"):
        mask_from_mod(lambda b, h, q, k: q - k, 4)
    with pytest.raises(TypeError, match="mask_mod: expected it to return a tensor, got bool"):
        mask_from_mod(lambda b, h, q, k: True, 4)
    with pytest.raises(ValueError, match=r"does not broadcast to \(Tq, Tk\) = \(4, 4\)"):
        mask_from_mod(lambda b, h, q, k: torch.ones(2, 4, 4, dtype=torch.bool), 4)
    with pytest.raises(RuntimeError, match="Boolean value of Tensor"):
        mask_from_mod(lambda b, h, q, k: q >= k and q - k < 2, 4)
    with pytest.raises(ValueError, match="h: expected an int >= 0, got -1"):
        mask_from_mod(causal_mask, 4, h=-1)
    with pytest.raises(TypeError, match="b: expected an int, got float"):
        mask_from_mod(causal_mask, 4, b=0.0)


def test_scores_from_mod_adds_alibi_and_refuses_integer_scores():
    scores = torch.randn(5, 5, generator=torch.Generator().manual_seed(0))
    got = scores_from_mod(lambda s, b, h, q, k: s - 0.5 * (q - k).abs(), scores)
    torch.testing.assert_close(got, scores + alibi_bias(8, 5, 5)[0])
    with pytest.raises(TypeError, match="score_mod: expected floating scores, got torch.int64"):
        scores_from_mod(lambda s, b, h, q, k: q - k, scores)
    with pytest.raises(TypeError, match=r"scores: expected a 2-D floating tensor"):
        scores_from_mod(lambda s, b, h, q, k: s, scores[0])


def test_block_counts_equal_flexattentions_block_mask():
    doc = torch.repeat_interleave(torch.arange(4), torch.tensor([100, 300, 60, 52]))  # 512
    mods = {
        "causal": lambda b, h, q, k: q >= k,
        "window": lambda b, h, q, k: (q >= k) & (q - k < 100),
        "document": lambda b, h, q, k: (doc[q] == doc[k]) & (q >= k),
    }
    for name, mod in mods.items():
        dense = mask_from_mod(mod, 512)
        empty, full, partial = block_counts(dense, 128)
        bm = flex.create_block_mask(mod, None, None, 512, 512, device="cpu")
        assert full == int(bm.full_kv_num_blocks.sum()), name
        assert partial == int(bm.kv_num_blocks.sum()), name
        assert empty + full + partial == 16, name
    assert block_counts(causal_mask(512), 128) == (6, 6, 4)
    with pytest.raises(ValueError, match="multiples of block_size=128"):
        block_counts(causal_mask(100), 128)


def test_the_learners_functions_through_flex_attention_equal_the_dense_reference():
    """The explorer's compiled function is a mask_mod / score_mod FlexAttention accepts."""
    t, d = 12, 8
    q, k, v = torch.randn(3, 1, 1, t, d, generator=torch.Generator().manual_seed(1)).unbind(0)
    mask_fn = compile_mask_function(PRESETS["document"], t).fn
    block = flex.create_block_mask(mask_fn, None, None, t, t, device="cpu")
    dense = scaled_dot_product_attention(q, k, v, mask_from_mod(mask_fn, t))
    torch.testing.assert_close(_flex(q, k, v, block_mask=block), dense.output)

    score_fn = compile_mask_function(PRESETS["ALiBi (score)"], t).fn
    scores = (q @ k.transpose(-2, -1))[0, 0] / d**0.5  # (T, T)
    weights = masked_softmax(scores_from_mod(score_fn, scores), causal_mask(t))
    got = _flex(q, k, v, score_mod=score_fn, block_mask=flex.create_block_mask(
        lambda b, h, qi, ki: qi >= ki, None, None, t, t, device="cpu"))  # fmt: skip
    torch.testing.assert_close(got[0, 0], weights @ v[0, 0])


# --- the explore function: presets, comparisons ------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "equals"),
    [
        ("causal", "causal_mask(12)"),
        ("sliding window (4)", "sliding_window_mask(12, 4)"),
        ("prefix-LM (4)", "prefix_lm_mask(12, 4)"),
        ("document", "document_mask(doc)"),
    ],
)
def test_each_mask_preset_equals_the_course_mask_it_names(preset, equals):
    r = explore_mask_function(MaskFunctionParams(source=PRESETS[preset]))
    assert r.kind == "mask" and r.mask_match.equal and r.mask_match.name == equals
    reference = dict(known_masks(12))[equals]
    assert torch.equal(r.mask, reference)
    torch.testing.assert_close(r.weights, masked_softmax(r.scores, reference))
    assert f"its mask equals {equals}" in r.summary


def test_a_mask_the_course_lacks_gets_the_first_cell_where_it_differs():
    r = explore_mask_function(MaskFunctionParams(source=PRESETS["chunked (4)"]))
    c = r.mask_match
    assert not c.equal and c.first is not None
    i, j = c.first
    ref = dict(known_masks(12))[c.name]
    assert bool(r.mask[i, j]) == c.yours and bool(ref[i, j]) == c.theirs != c.yours
    differ = (r.mask != ref).nonzero()
    assert tuple(differ[0].tolist()) == (i, j) and len(differ) == c.cells
    for _name, other in known_masks(12):  # no known mask is nearer
        assert int((r.mask != other).sum()) >= c.cells
    assert f"the first at query {i}, key {j}" in r.summary[1]


@pytest.mark.parametrize("head", [0, 3, 7])
def test_alibi_as_a_score_function_equals_the_core_bias_of_its_head(head):
    r = explore_mask_function(MaskFunctionParams(source=PRESETS["ALiBi (score)"], head=head))
    torch.testing.assert_close(r.new_scores, r.scores + alibi_bias(8, 12, 12)[head])
    assert r.score_match.equal and f"alibi_bias(8, 12, 12)[{head}]" in r.score_match.name
    assert r.mask.all() and r.bias is not None
    torch.testing.assert_close(r.weights, torch.softmax(r.new_scores, -1))


def test_softcap_and_a_masking_score_function_are_recognised():
    r = explore_mask_function(MaskFunctionParams(source=PRESETS["softcap 2 (score)"], seq_len=9))
    torch.testing.assert_close(r.new_scores, 2 * torch.tanh(r.scores / 2))
    assert r.score_match.equal and r.score_match.name.startswith("tanh softcap 2")
    src = "def score(score, b, h, q, k):\n    return torch.where(q >= k, score, -inf)\n"
    r = explore_mask_function(MaskFunctionParams(source=src, seq_len=9))
    assert torch.equal(r.mask, causal_mask(9)) and r.mask_match.name == "causal_mask(9)"
    assert r.score_match.name == "score unchanged" and r.score_match.equal


def test_every_preset_runs_at_every_length_without_nan():
    for preset, source in PRESETS.items():
        for t in (2, 5, 32):
            r = explore_mask_function(MaskFunctionParams(source=source, seq_len=t))
            assert r.weights.shape == (t, t) and not r.weights.isnan().any(), (preset, t)
            rows = r.weights.sum(-1)
            torch.testing.assert_close(rows, (~r.fully_masked).float())


def test_a_query_with_nothing_to_attend_gets_zero_weights_and_is_said():
    src = "def mask(b, h, q_idx, kv_idx):\n    return (q_idx > kv_idx)\n"
    r = explore_mask_function(MaskFunctionParams(source=src))
    assert r.fully_masked.tolist() == [True] + [False] * 11
    assert r.weights[0].sum() == 0
    assert "1 query row(s) may attend to nothing" in r.summary[-1]


def test_document_ids_pack_documents_of_the_stated_lengths():
    assert document_ids(12).tolist() == [0] * 5 + [1] * 3 + [2] * 4
    assert document_ids(20).tolist()[12:] == [3] * 6 + [4] * 2


def test_lambdas_and_short_argument_names_are_accepted():
    for src in (
        "lambda b, h, q, k: q >= k",
        "causal = lambda b, h, q_idx, kv_idx: q_idx >= kv_idx",
        'def m(b, h, q, k):\n    """Causal."""\n    x = q - k\n    x += 0\n    return x >= 0',
    ):
        r = explore_mask_function(MaskFunctionParams(source=src))
        assert r.mask_match.name == "causal_mask(12)", src


def test_if_on_a_head_or_batch_index_works_as_in_python():
    src = (
        "def mask(b, h, q_idx, kv_idx):\n"
        "    if h == 0:\n        return q_idx >= kv_idx\n"
        "    else:\n        return kv_idx <= q_idx + 100\n"
    )
    assert explore_mask_function(MaskFunctionParams(source=src)).mask_match.name.startswith(
        "causal"
    )
    r = explore_mask_function(MaskFunctionParams(source=src, head=1))
    assert r.mask.all()


# --- the whitelist: hostile text is refused, never run ----------------------------------------

M = "def mask(b, h, q, k):\n    return "  # a prefix: the returned expression follows


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (M + "__import__('os').system('echo hacked')", r"the name __import__ \(no double"),
        (
            M + "().__class__.__bases__",
            r"the name __bases__ \(no double-underscore names\) \(line 2, column 12\)",
        ),
        (M + "open('/etc/passwd')", r"calling open; the calls allowed are abs, min, max"),
        ("import os", r"expected one function.*got import \(line 1, column 1\)"),
        ("from os import system", "got import"),
        (M + "q >= k\nimport os", "got 2 statements"),
        (
            "def mask(b, h, q, k):\n    while True:\n        pass\n    return q >= k",
            r"a while loop \(loops are not allowed\) \(line 2, column 5\)",
        ),
        ("def mask(b, h, q, k):\n    for i in q:\n        pass\n    return q", "a for loop"),
        (M + "[x for x in q]", "a comprehension"),
        (M + "(q).T", r"the attribute \.T"),
        (M + "torch.ones(3)", "calling torch.ones"),
        (M + "torch.where", r"torch\.where without calling it"),
        (M + "q >= k if 'x' else q", "a string"),
        (M + "doc", r"doc on its own: it is a table"),
        (M + "doc[0:3]", "a slice"),
        (M + "q.__class__", r"the name __class__"),
        (M + "abs(q, k)", r"abs takes 1 argument, got 2 \(line 2, column 12\)"),
        (M + "torch.where(q >= k, q, q, q)", "torch.where takes 3 arguments, got 4"),
        (M + "abs(x=q)", "keyword arguments to abs"),
        (M + "q << 40", "the operator <<"),
        (M + "q @ k", "the operator @"),
        (M + "q is k", "the comparison `is`"),
        (M + "q in k", "the comparison `in`"),
        (M + "(x := q) >= k", "the := operator"),
        (M + "lambda: 1", "a nested lambda"),
        (M + "mask(b, h, q, k)", "calling mask"),
        (M + "eval('1')", "calling eval"),
        (M + "getattr(q, 'T')", "calling getattr"),
        ("def mask(b, h, q, k):\n    torch = q\n    return q >= k", "assigning to torch"),
        ("def mask(b, h, q, k):\n    doc[q] = 1\n    return q >= k", "assigning to anything"),
        ("@staticmethod\ndef mask(b, h, q, k):\n    return q >= k", "decorators"),
        ("def mask(b, h, q, k=0):\n    return q >= k", "defaults"),
        ("def mask(*args):\n    return True", r"\*args"),
        ("def mask(b, h, q, k):\n    return q >= k\n\ndef g(): pass", "got 2 statements"),
        ("class A: pass", "got a class"),
        (M + "q >= 99999999999999999999999", "too large for a 64-bit tensor"),
        ("def mask(b, h, q, k)\n    return q >= k", r"syntax error: expected ':' \(line 1"),
        ("def mask(b, h, q, k):\n    return q >= k\0", "null bytes"),
        (M + "-" * 1900 + "q", "nested too deeply"),
        (
            "#" * 100_000,
            f"source: 100,000 characters; a mask function needs at most {MAX_SOURCE:,}",
        ),
        ("", "got 0 statements"),
        (M + "x", "the name x: a function may read its arguments"),
        ("def mask(b, h, q, k):\n    _n0 = q\n    return q >= 1", r"the name _n0 \(names may not"),
    ],
)
def test_hostile_or_unsupported_text_is_refused_with_what_and_where(source, message):
    with pytest.raises(MaskFunctionError, match=message):
        explore_mask_function(MaskFunctionParams(source=source))


def test_a_huge_exponent_finishes_at_once_as_tensor_arithmetic():
    """Every number is a 0-d tensor before the code runs: 9**9**9 wraps, it never hangs."""
    start = time.perf_counter()
    r = explore_mask_function(MaskFunctionParams(source=M + "q >= k + 9**9**9"))
    assert time.perf_counter() - start < 2.0  # generous: a hang would take hours
    assert r.mask.shape == (12, 12)
    src = "def mask(b, h, q, k):\n    x = 99999999\n" + "    x = x*x*x*x*x*x*x*x\n" * 40
    start = time.perf_counter()
    explore_mask_function(MaskFunctionParams(source=src + "    return q >= x"))
    assert time.perf_counter() - start < 2.0


def test_the_code_runs_with_no_builtins_and_a_torch_of_five_functions():
    fn = compile_mask_function(PRESETS["causal"]).fn
    assert fn.__globals__["__builtins__"] == {}
    safe_torch = fn.__globals__["torch"]
    assert sorted(vars(safe_torch)) == ["abs", "inf", "maximum", "minimum", "tanh", "where"]


# --- every slip a learner makes gets a message, never a traceback ------------------------------


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def mask(i, j):\n    return i >= j", r"arguments: expected \(b, h, q_idx, kv_idx\)"),
        ("def mask(b, h, x, y):\n    return x >= y", r"got \(b, h, x, y\)"),
        (M + "1", "got torch.int64: numbers are not True/False; compare instead"),
        (M + "(q >= k) * 1.0", "got floats .* a float mask is a bias; write a score function"),
        (
            M + "q >= k and q - k < 4",
            r"use & and \| \(and ~ for not\) on index tensors, as "
            r"FlexAttention does.*\(line 2\)",
        ),  # fmt: skip
        (M + "q >= k or k < 2", "use & and |"),
        (M + "not q >= k", "use & and |"),
        (
            "def mask(b, h, q, k):\n    if q >= k:\n        return True\n    return False",
            r"torch.where\(cond, a, b\) for if \(line 2\)",
        ),  # fmt: skip
        ("def mask(b, h, q, k):\n    x = q >= k", "returned None; did you forget `return`"),
        (M + "doc[q + 1] == doc[k]", r"a table index is out of range \(line 2\)"),
        (M + "doc[q / 2] == doc[k]", "a table index must be whole numbers"),
        (M + "q // 0 >= k", r"division by zero \(line 2\)"),
        (
            "def mask(b, h, q, k):\n    if h == 1:\n        x = 1\n    return x",
            r"a name is read before it is assigned \(line 4\)",
        ),  # fmt: skip
        (
            "def score(score, b, h, q, k):\n    return q - k",
            "a score function returns the new score \\(floats\\), got torch.int64",
        ),  # fmt: skip
        ("def score(score, b, h, q, k):\n    return q >= k", "got torch.bool"),
        ("def score(score, b, h, q, k):\n    return score * 0.0 / 0.0", "returned NaN at query 0"),
        (
            "def score(score, b, h, q, k):\n    return torch.where(q >= k, score, inf)",
            "returned \\+inf at query 0, key 1; scores must be finite, or -inf to mask",
        ),  # fmt: skip
        (M + "~(q * 1.0) >= k", r"your function raised TypeError \(line 2\): ~"),
    ],
)
def test_slips_get_a_clear_message(source, message):
    with pytest.raises(MaskFunctionError, match=message):
        explore_mask_function(MaskFunctionParams(source=source))


def test_params_are_checked():
    with pytest.raises(ValueError, match=r"seq_len: expected an int in \[2, 32\], got 33"):
        MaskFunctionParams(seq_len=33)
    with pytest.raises(ValueError, match=r"head: expected an int in \[0, 7\], got 8"):
        MaskFunctionParams(head=8)
    with pytest.raises(TypeError, match="source: expected a str, got int"):
        MaskFunctionParams(source=3)
    compiled = compile_mask_function(PRESETS["ALiBi (score)"])
    with pytest.raises(ValueError, match=r"a score function needs \(T, T\) = \(12, 12\) scores"):
        run_mask_function(compiled, 12)


# --- the explorer, headless ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def explorer():
    import widgets

    return widgets.MaskFunctionExplorer()


def test_the_explorer_draws_what_the_pure_function_computes(explorer):
    explorer.seq_len.value = 9
    r = explore_mask_function(MaskFunctionParams(source=PRESETS["causal"], seq_len=9))
    torch.testing.assert_close(torch.as_tensor(explorer.weights_view.matrix), r.weights)
    assert torch.equal(torch.as_tensor(explorer.mask_view.matrix), r.mask.float())
    assert "T = 9" in explorer.readout.value and "equals causal_mask(9)" in explorer.readout.value
    assert explorer.bias_view.layout.display == "none"


def test_a_preset_fills_the_text_and_an_edit_makes_it_custom(explorer):
    explorer.preset.value = "ALiBi (score)"
    assert explorer.code.value == PRESETS["ALiBi (score)"]
    assert explorer.result.kind == "score" and explorer.bias_view.layout.display is None
    torch.testing.assert_close(
        torch.as_tensor(explorer.bias_view.matrix), alibi_bias(8, 9, 9)[explorer.head.value]
    )
    before = explorer.refreshes
    explorer.code.value = "lambda b, h, q, k: (q >= k) & (q - k < 2)"
    assert explorer.preset.value == "custom (edited)" and explorer.refreshes == before + 1
    assert "sliding_window_mask(9, 2)" in explorer.readout.value


def test_a_bad_function_shows_a_message_and_keeps_the_last_good_panels(explorer):
    explorer.code.value = PRESETS["document"]
    good = explorer.result
    explorer.code.value = M + "__import__('os')"
    assert explorer.error.message.startswith("MaskFunctionError: not allowed: the name __import__")
    assert "Traceback" not in explorer.error.value and explorer.result is good
    assert "The panels show the last function that ran" in explorer.readout.value
    assert "document_mask(doc)" in explorer.readout.value
    explorer.code.value = M + "q >= k and k < 3"
    assert "use & and | (and ~ for not)" in explorer.error.message
    explorer.run_button.click()  # Run again: still the same message, no traceback
    assert "use & and |" in explorer.error.message
    explorer.preset.value = "causal"
    assert explorer.error.message == "" and explorer.result.mask_match.name == "causal_mask(9)"
    assert "last function that ran" not in explorer.readout.value


def test_bad_settings_are_refused():
    import widgets

    with pytest.raises(ValueError, match="preset: expected one of"):
        widgets.MaskFunctionExplorer(preset="nope")
    e = widgets.MaskFunctionExplorer(source=PRESETS["document"], seq_len=20)
    assert e.preset.value == "custom (edited)" and e.result.mask_match.name == "document_mask(doc)"


def test_the_explorer_carries_a_picture_of_its_shown_panels(monkeypatch):
    import widgets
    from widgets.views import picture

    monkeypatch.setattr(picture, "_setting", True)  # pictures on, for this test only
    mask = widgets.MaskFunctionExplorer()
    score = widgets.MaskFunctionExplorer(preset="softcap 2 (score)")
    for e, n in ((mask, 2), (score, 3)):  # a score function adds its bias panel
        data = e._repr_mimebundle_()
        data = data[0] if isinstance(data, tuple) else data
        assert data["image/png"] and f"MaskFunctionExplorer: {n} panels" in data["text/plain"]
