"""Toy sequence-to-sequence tasks made in code: reverse or sort a short string of symbols.

    reverse: "3141" -> "1413"        sort: "3141" -> "1134"

A tokenizer maps symbols to ids after three special tokens: PAD = 0 (filler, never attended to),
BOS = 1 (the decoder's first input) and EOS = 2 (the decoder's "I am done").

A batch holds three (B, T) id tensors, for teacher forcing:

    src     = x_1 .. x_n  PAD..           what the encoder reads
    tgt_out = y_1 .. y_n  EOS  PAD..      what the decoder must predict at each position
    tgt_in  = BOS y_1 .. y_n  PAD..       tgt_out shifted right by one: what it is fed

The train/held-out split is a fixed rule on the string itself (a CRC32 checksum), so a held-out
sequence never appears in training, whatever the seed or the number of samples drawn.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import torch
from torch import Tensor

PAD, BOS, EOS = 0, 1, 2
SPECIALS = ("<pad>", "<bos>", "<eos>")
ALPHABETS = {"digits": "0123456789", "letters": "abcdefghijklmnopqrstuvwxyz"}
TASKS = ("reverse", "sort")
HELDOUT_EVERY = 10  # one string in ten (by checksum) is held out


@dataclass(frozen=True)
class Tokenizer:
    """Symbols <-> ids: ids 0, 1, 2 are PAD, BOS, EOS; symbol i of the alphabet is id 3 + i."""

    alphabet: str = ALPHABETS["digits"]

    def __post_init__(self) -> None:
        if not self.alphabet or len(set(self.alphabet)) != len(self.alphabet):
            raise ValueError(f"alphabet: expected distinct symbols, got {self.alphabet!r}")

    @property
    def vocab_size(self) -> int:
        return len(SPECIALS) + len(self.alphabet)

    def encode(self, text: str) -> list[int]:
        """'314' -> [6, 4, 7] (no BOS or EOS added)."""
        bad = sorted(set(text) - set(self.alphabet))
        if bad:
            raise ValueError(f"text: symbols {bad} are not in the alphabet {self.alphabet!r}")
        return [len(SPECIALS) + self.alphabet.index(c) for c in text]

    def decode(self, ids: Tensor | list[int]) -> str:
        """Ids -> text, stopping at the first EOS or PAD and skipping BOS."""
        out = []
        for i in torch.as_tensor(ids).tolist():
            if i in (EOS, PAD):
                break
            if i != BOS:
                out.append(self.alphabet[i - len(SPECIALS)])
        return "".join(out)

    def token_names(self, ids: Tensor | list[int]) -> list[str]:
        """Ids -> readable labels for plots: ['3', '1', '<eos>', '<pad>']."""
        return [
            SPECIALS[i] if i < len(SPECIALS) else self.alphabet[i - len(SPECIALS)]
            for i in torch.as_tensor(ids).tolist()
        ]


@dataclass(frozen=True)
class ToyTask:
    """Which task, over which symbols, at which lengths (inclusive)."""

    name: str = "reverse"
    alphabet: str = "digits"
    min_len: int = 1
    max_len: int = 10

    def __post_init__(self) -> None:
        if self.name not in TASKS:
            raise ValueError(f"name: expected one of {TASKS}, got {self.name!r}")
        if self.alphabet not in ALPHABETS:
            raise ValueError(f"alphabet: expected one of {tuple(ALPHABETS)}, got {self.alphabet!r}")
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(
                f"min_len, max_len: expected 1 <= min_len <= max_len, got {self.min_len}, "
                f"{self.max_len}"
            )

    @property
    def tokenizer(self) -> Tokenizer:
        return Tokenizer(ALPHABETS[self.alphabet])

    def target(self, text: str) -> str:
        """The answer for one input string."""
        return text[::-1] if self.name == "reverse" else "".join(sorted(text))


def is_heldout(text: str) -> bool:
    """The split rule: a string is held out when its CRC32 checksum is divisible by 10."""
    return zlib.crc32(text.encode()) % HELDOUT_EVERY == 0


def sample_texts(task: ToyTask, n: int, *, split: str, generator: torch.Generator) -> list[str]:
    """Draw n random input strings from one split ("train" or "heldout"), uniform lengths."""
    if split not in ("train", "heldout"):
        raise ValueError(f"split: expected 'train' or 'heldout', got {split!r}")
    symbols = ALPHABETS[task.alphabet]
    want_heldout = split == "heldout"
    out: list[str] = []
    while len(out) < n:
        # Draw more than needed: about 1 in 10 strings is held out, the rest train.
        m = 2 * (n - len(out)) + 16
        lengths = torch.randint(task.min_len, task.max_len + 1, (m,), generator=generator)
        chars = torch.randint(0, len(symbols), (m, task.max_len), generator=generator)
        for length, row in zip(lengths.tolist(), chars.tolist(), strict=True):
            text = "".join(symbols[c] for c in row[:length])
            if is_heldout(text) == want_heldout:
                out.append(text)
    return out[:n]


def heldout_texts(task: ToyTask, n: int = 1000, *, seed: int = 1234) -> list[str]:
    """A fixed list of n held-out strings (the same for the same task, n and seed)."""
    return sample_texts(task, n, split="heldout", generator=torch.Generator().manual_seed(seed))


def probe_text(task: ToyTask) -> str:
    """A fixed input of max_len distinct, unsorted symbols, for watching attention patterns."""
    symbols = ALPHABETS[task.alphabet]
    return "".join(symbols[(3 * i) % len(symbols)] for i in range(task.max_len))


def shift_right(tgt_out: Tensor, bos_id: int = BOS) -> Tensor:
    """(B, T) targets -> (B, T) decoder inputs: BOS first, every token moved one step later.

    The last column falls off; it is EOS or PAD, which the decoder never needs to read.
    """
    bos = torch.full_like(tgt_out[:, :1], bos_id)  # (B, 1)
    return torch.cat([bos, tgt_out[:, :-1]], dim=1)  # (B, T)


@dataclass(frozen=True)
class Batch:
    """One padded batch for teacher forcing (see the module docstring)."""

    src: Tensor  # (B, S) input ids, PAD after each input
    tgt_in: Tensor  # (B, T) BOS + target, PAD after
    tgt_out: Tensor  # (B, T) target + EOS, PAD after
    texts: tuple[str, ...]  # the input strings
    targets: tuple[str, ...]  # the answers

    def __len__(self) -> int:
        return self.src.shape[0]

    def to(self, device: torch.device | str) -> Batch:
        return Batch(
            self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device),
            self.texts, self.targets,
        )  # fmt: skip


def _pad(rows: list[list[int]]) -> Tensor:
    out = torch.full((len(rows), max(len(r) for r in rows)), PAD, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out


def make_batch(task: ToyTask, texts: list[str]) -> Batch:
    """Tokenize, add EOS, pad, and shift right: a list of input strings -> a Batch."""
    if not texts:
        raise ValueError("texts: expected at least one string, got an empty list")
    for t in texts:
        if not task.min_len <= len(t) <= task.max_len:
            raise ValueError(
                f"texts: {t!r} has length {len(t)}, outside [{task.min_len}, {task.max_len}]"
            )
    tok = task.tokenizer
    targets = [task.target(t) for t in texts]
    src = _pad([tok.encode(t) for t in texts])  # (B, S)
    tgt_out = _pad([tok.encode(y) + [EOS] for y in targets])  # (B, T), T = S + 1
    return Batch(src, shift_right(tgt_out), tgt_out, tuple(texts), tuple(targets))


def batches(task: ToyTask, batch_size: int, *, generator: torch.Generator, split: str = "train"):
    """An endless stream of fresh random training batches (the data never repeats in order)."""
    while True:
        yield make_batch(task, sample_texts(task, batch_size, split=split, generator=generator))
