"""attention/models/minimal_pairs.tsv: the evaluation set of lesson 18 is what its header says.

Every row parses; clean and corrupted are a true minimal pair under both models' tokenizers
(the same number of tokens, differing only where the changed words are); the answer and the
alternative are one token each in both; no pair appears twice.
"""

from __future__ import annotations

import pytest

from attention.models.cache import pretrained_model
from attention.models.interventions import (
    KINDS,
    PAIRS_FILE,
    encode_pairs,
    load_minimal_pairs,
)

PAIRS = load_minimal_pairs()


def test_the_file_parses_into_at_least_40_pairs_of_each_kind():
    assert len(PAIRS) >= 40
    for kind in KINDS:
        assert sum(p.kind == kind for p in PAIRS) >= 10, kind


def test_no_duplicates_and_each_pair_changes_something():
    assert len({(p.clean, p.corrupted) for p in PAIRS}) == len(PAIRS)
    assert len({p.clean for p in PAIRS}) == len(PAIRS)
    for p in PAIRS:
        assert p.clean != p.corrupted and p.answer != p.alternative, p


def _changed_words(p):
    a, b = p.clean.split(), p.corrupted.split()
    assert len(a) == len(b), p
    return [(x, y) for x, y in zip(a, b, strict=True) if x != y]


@pytest.mark.parametrize("name", ["smollm2", "minilm"])
def test_true_minimal_pairs_under_both_tokenizers(name):
    _, tok = pretrained_model(name)
    space = name == "smollm2"
    batch = encode_pairs(tok, PAIRS, space=space)  # raises if lengths differ or answers split
    for i, p in enumerate(PAIRS):
        words = _changed_words(p)
        assert 1 <= len(words) <= 2, p
        changed = batch.changed()[i].nonzero().flatten().tolist()
        # each changed word is one token in both sentences, so exactly as many tokens change
        assert len(changed) == len(words), (p, changed)
        clean_tokens = [tok.tokens([int(batch.clean[i, j])])[0] for j in changed]
        for (word, _), token in zip(words, clean_tokens, strict=True):
            assert token.strip("Ġ ").lower() == word.strip(".,").lower(), (p, token)
        # the target is the prefix's last word, before any [SEP]
        last = tok.tokens([int(batch.clean[i, batch.target[i]])])[0]
        assert last.strip("Ġ ").lower() == p.clean.split()[-1].lower(), (p, last)


def test_a_bad_file_is_refused_naming_the_row(tmp_path):
    bad = tmp_path / "pairs.tsv"
    bad.write_text(PAIRS_FILE.read_text().splitlines()[9] + "\nagreement\tonly two\n")
    with pytest.raises(ValueError, match=r"row 2: expected 5 fields"):
        load_minimal_pairs(bad)
    bad.write_text("kind\tclean\n")
    with pytest.raises(ValueError, match="expected the header"):
        load_minimal_pairs(bad)
