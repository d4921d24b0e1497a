"""attention.models.toy.recall: the task's batches, the two models, training over several N."""

from __future__ import annotations

import pytest
import torch

import attention as A
from attention.models.toy import recall

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_batch_holds_distinct_keys_and_the_queried_pair() -> None:
    b = recall.make_batch(64, 8, 16, 10, torch.Generator().manual_seed(0))
    assert b.keys.shape == b.values.shape == (64, 8) and b.query.shape == b.answer.shape == (64,)
    assert all(len(set(row.tolist())) == 8 for row in b.keys)  # distinct keys in each row
    where = (b.keys == b.query[:, None]).int().argmax(-1)  # (B,) the queried pair's slot
    assert torch.equal(b.values[torch.arange(64), where], b.answer)
    assert int(b.values.max()) < 10 and int(b.keys.max()) < 16


def test_batch_refuses_more_pairs_than_keys() -> None:
    with pytest.raises(ValueError, match=r"n_pairs: expected 1..16 \(distinct keys\), got 17"):
        recall.make_batch(4, 17, 16, 10, torch.Generator())


def test_the_two_models_share_their_parameters_and_differ_in_attention() -> None:
    torch.manual_seed(0)
    soft = recall.RecallModel("softmax", 16, 32, 32)
    lin = recall.RecallModel("linear", 16, 32, 32)
    lin.load_state_dict(soft.state_dict())  # the same module, the same parameters
    b = recall.make_batch(4, 5, 32, 32, torch.Generator().manual_seed(1))
    x = torch.cat([soft.key(b.keys) + soft.value(b.values), soft.question(b.query)[:, None]], 1)
    q, k, v = (proj(x)[:, None] for proj in (soft.attn.q_proj, soft.attn.k_proj, soft.attn.v_proj))
    want = {
        "softmax": A.scaled_dot_product_attention(q, k, v).output,  # (B, 1, N + 1, M)
        "linear": A.linear_attention(q, k, v).output,
    }
    for model in (soft, lin):
        heads = want[model.kind][:, 0, -1]  # (B, M) the query's row
        logits = model.read_out(model.attn.out_proj(heads))
        torch.testing.assert_close(model(b.keys, b.values, b.query), logits)
    assert soft.memory_numbers(5) == 2 * 5 * 16 and lin.memory_numbers(5) == 16 * 17
    with pytest.raises(ValueError, match="kind: expected one of"):
        recall.RecallModel("mamba", 16, 32, 32)


def test_one_short_run_learns_every_n_it_cycles_through() -> None:
    before = torch.random.get_rng_state()
    run = recall.train_recall(
        "softmax", 16, pairs=(1, 2), steps=80, n_keys=8, n_values=8, eval_sequences=256
    )
    assert torch.equal(torch.random.get_rng_state(), before)  # the global generator untouched
    assert set(run.accuracy) == {1, 2}
    assert run.accuracy[1] > 0.5 and run.accuracy[2] > 0.5  # chance is 1/8
    assert run.parameters == sum(
        p.numel() for p in recall.RecallModel("softmax", 16, 8, 8).parameters()
    )
    assert run.memory_numbers(2) == 2 * 2 * 16
    again = recall.train_recall(
        "softmax", 16, pairs=(1, 2), steps=80, n_keys=8, n_values=8, eval_sequences=256
    )
    assert again.accuracy == run.accuracy and again.final_loss == run.final_loss  # seeded


def test_the_linear_state_loses_pairs_the_cache_keeps() -> None:
    """Lesson 19's claim in miniature: width 8, a state of 72 numbers, 2 and 16 pairs (1 s)."""
    kw = dict(pairs=(2, 16), steps=300, n_keys=16, n_values=16, eval_sequences=512)
    soft = recall.train_recall("softmax", 8, **kw)
    lin = recall.train_recall("linear", 8, **kw)
    assert lin.memory_numbers(16) == 72 and soft.memory_numbers(16) == 256
    assert soft.accuracy[2] > 0.9 and soft.accuracy[16] > 0.9  # measured: 0.99 and 0.98
    assert lin.accuracy[16] < soft.accuracy[16] - 0.4  # measured: 0.30
    assert lin.accuracy[16] < lin.accuracy[2] - 0.4  # measured: 0.87 at 2 pairs


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"kind": "rnn"}, ValueError, r"kind: expected one of \('softmax', 'linear'\), got 'rnn'"),
        ({"d_model": 0}, ValueError, r"d_model: expected an int in \[1, 1024\], got 0"),
        ({"d_model": 16.0}, TypeError, "d_model: expected an int, got float"),
        ({"pairs": ()}, ValueError, "pairs: expected at least one number of pairs, got none"),
        ({"pairs": (2, 65)}, ValueError, r"pairs: expected an int in \[1, 64\], got 65"),
        ({"steps": 0}, ValueError, r"steps: expected an int in \[1, 1000000\], got 0"),
        ({"lr": float("nan")}, ValueError, "lr: expected a positive finite number, got nan"),
        ({"lr": -1.0}, ValueError, "lr: expected a positive finite number, got -1.0"),
        ({"seed": -1}, ValueError, "seed: expected an int"),
        ({"n_values": True}, TypeError, "n_values: expected an int, got bool"),
    ],
)
def test_bad_settings_are_named(kwargs: dict, error: type, message: str) -> None:
    args = {"kind": "softmax", "d_model": 16} | kwargs
    with pytest.raises(error, match=message):
        recall.train_recall(args.pop("kind"), args.pop("d_model"), **args)
