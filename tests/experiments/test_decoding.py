"""measure_decoding (lesson 14): the same tokens with and without the KV cache, on a tiny model."""

import pytest

from attention.experiments.decoding import DecodingSpeed, measure_decoding
from attention.memory import kv_cache_bytes
from tests.experiments.tiny import ToyTokenizer, tiny_smollm2


def test_measure_decoding_writes_the_same_tokens_with_and_without_the_cache():
    model = tiny_smollm2()
    speed = measure_decoding(model, ToyTokenizer(), "hello world", 5)
    assert isinstance(speed, DecodingSpeed)
    assert speed.same_tokens and speed.new_tokens == 5 and speed.prompt_tokens == 11
    assert speed.cached_tokens == 11 + 5 - 1
    cfg = model.cfg
    assert speed.cache_bytes == kv_cache_bytes(
        n_layers=cfg.n_layers, n_kv_heads=cfg.n_kv_heads, d_head=cfg.d_head, seq_len=15
    )
    assert speed.cached_tokens_per_s == pytest.approx(5 / speed.seconds_cached)
    assert speed.speedup == pytest.approx(speed.seconds_uncached / speed.seconds_cached)
    assert len(speed.text.split()) == 5
    assert len(speed.step_seconds_cached) == len(speed.step_seconds_uncached) == 5
    assert sum(speed.step_seconds_cached) == pytest.approx(speed.seconds_cached)
    with_cache, without = speed.next_token_seconds
    assert with_cache == pytest.approx(sum(speed.step_seconds_cached[1:]) / 4)
    assert without == pytest.approx(sum(speed.step_seconds_uncached[1:]) / 4)
