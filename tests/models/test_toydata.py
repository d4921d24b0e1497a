"""Toy tasks: tokenizer round trip, targets, the deterministic split, teacher-forcing batches."""

import pytest
import torch

from attention.models.toy.data import (
    BOS,
    EOS,
    PAD,
    Tokenizer,
    ToyTask,
    batches,
    heldout_texts,
    is_heldout,
    make_batch,
    probe_text,
    sample_texts,
    shift_right,
)


def test_tokenizer_round_trip_and_specials():
    tok = Tokenizer("0123456789")
    assert tok.vocab_size == 13
    assert tok.encode("309") == [6, 3, 12]
    assert tok.decode([BOS, 6, 3, 12, EOS, 7, PAD]) == "309"  # stops at EOS
    assert tok.token_names([6, EOS, PAD, BOS]) == ["3", "<eos>", "<pad>", "<bos>"]


def test_tokenizer_errors():
    with pytest.raises(ValueError, match=r"symbols \['x'\] are not in the alphabet '0123456789'"):
        Tokenizer().encode("1x2")
    with pytest.raises(ValueError, match="alphabet: expected distinct symbols, got 'aa'"):
        Tokenizer("aa")


def test_task_targets_and_errors():
    assert ToyTask("reverse").target("3141") == "1413"
    assert ToyTask("sort").target("3141") == "1134"
    assert ToyTask("sort", alphabet="letters").target("dcab") == "abcd"
    with pytest.raises(
        ValueError, match=r"name: expected one of \('reverse', 'sort'\), got 'copy'"
    ):
        ToyTask("copy")
    with pytest.raises(ValueError, match="expected 1 <= min_len <= max_len, got 3, 2"):
        ToyTask(min_len=3, max_len=2)
    with pytest.raises(ValueError, match=r"alphabet: expected one of \('digits', 'letters'\)"):
        ToyTask(alphabet="emoji")


def test_make_batch_pads_and_shifts():
    batch = make_batch(ToyTask("reverse"), ["12", "345"])
    # ids: digit d is 3 + d
    assert batch.src.tolist() == [[4, 5, PAD], [6, 7, 8]]
    assert batch.tgt_out.tolist() == [[5, 4, EOS, PAD], [8, 7, 6, EOS]]
    assert batch.tgt_in.tolist() == [[BOS, 5, 4, EOS], [BOS, 8, 7, 6]]
    assert batch.targets == ("21", "543")
    assert len(batch) == 2


def test_make_batch_sort_and_errors():
    batch = make_batch(ToyTask("sort"), ["31"])
    assert batch.tgt_out.tolist() == [[4, 6, EOS]]
    with pytest.raises(ValueError, match=r"texts: '' has length 0, outside \[1, 10\]"):
        make_batch(ToyTask(), [""])
    with pytest.raises(ValueError, match="texts: expected at least one string"):
        make_batch(ToyTask(), [])


def test_shift_right_keeps_length_and_puts_bos_first():
    tgt_out = torch.tensor([[5, 6, EOS, PAD], [7, 8, 9, EOS]])
    got = shift_right(tgt_out)
    assert got.tolist() == [[BOS, 5, 6, EOS], [BOS, 7, 8, 9]]
    assert got.dtype == torch.long


def test_split_is_deterministic_and_disjoint():
    task = ToyTask("reverse")
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    a = sample_texts(task, 300, split="train", generator=g1)
    assert a == sample_texts(task, 300, split="train", generator=g2)
    held = heldout_texts(task, 300)
    assert held == heldout_texts(task, 300)  # same seed, same list
    assert held != heldout_texts(task, 300, seed=99)
    assert all(is_heldout(t) for t in held) and not any(is_heldout(t) for t in a)
    assert not set(a) & set(held)
    lengths = {len(t) for t in a}
    assert lengths == set(range(1, 11))  # every length is drawn
    # about one string in ten is held out
    every = [str(i) for i in range(10000)]
    assert 0.08 < sum(map(is_heldout, every)) / len(every) < 0.12


def test_sample_texts_rejects_unknown_split():
    with pytest.raises(ValueError, match="split: expected 'train' or 'heldout', got 'test'"):
        sample_texts(ToyTask(), 3, split="test", generator=torch.Generator())


def test_batches_stream_is_seeded():
    task = ToyTask("sort", min_len=2, max_len=5)
    s1 = batches(task, 8, generator=torch.Generator().manual_seed(1))
    s2 = batches(task, 8, generator=torch.Generator().manual_seed(1))
    b1, b2 = next(s1), next(s2)
    assert torch.equal(b1.src, b2.src) and b1.texts == b2.texts
    assert next(s1).texts != b1.texts  # fresh data each step
    assert all(2 <= len(t) <= 5 for t in b1.texts)


def test_probe_text_has_distinct_unsorted_symbols():
    text = probe_text(ToyTask())
    assert len(text) == 10 and len(set(text)) == 10
    assert text != "".join(sorted(text))
