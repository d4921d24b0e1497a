"""benchmarks/recall.py's parts, in seconds: the task's batches, the two models, one short run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

import attention as A
from attention.explore import one_thread

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "recall.py"
_spec = importlib.util.spec_from_file_location("recall_benchmark", _PATH)
recall = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = recall  # dataclasses look their module up there
_spec.loader.exec_module(recall)


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


def test_a_short_run_learns_two_pairs() -> None:
    with one_thread():  # as the benchmark runs: tiny batches, where a second thread only waits
        run = recall.train_recall(
            "softmax", 2, 16, steps=60, n_keys=8, n_values=8, eval_sequences=256
        )
    assert run.accuracy > 0.5  # chance is 1/8; one key-value lookup is quickly learned
    assert run.parameters == sum(
        p.numel() for p in recall.RecallModel("softmax", 16, 8, 8).parameters()
    )
