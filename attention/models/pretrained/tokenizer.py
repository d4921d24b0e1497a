"""Text <-> token ids for the pretrained models, built from their own files with `tokenizers`.

MiniLM uses WordPiece (lower-cased words split into pieces such as "token", "##izer") from its
tokenizer.json. SmolLM2 uses byte-level BPE: text becomes UTF-8 bytes, each byte a printable
stand-in character ("Ġ" is a space, "Ċ" a newline), and learned merges join frequent pairs.
Its vocabulary, merges and special tokens are read from the GGUF file's metadata, so the
tokenizer always matches the weights.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from functools import lru_cache
from pathlib import Path

from tokenizers import AddedToken, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as Backend

_CONTROL = 3  # GGUF token type of special tokens such as <|im_start|>


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's map from the printable stand-in characters back to byte values 0..255."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    keep += range(ord("®"), ord("ÿ") + 1)
    stand_in, extra = {b: chr(b) for b in keep}, 0
    for b in range(256):
        if b not in stand_in:
            stand_in[b], extra = chr(256 + extra), extra + 1
    return {c: b for b, c in stand_in.items()}


@dataclass(eq=False)
class Tokenizer:
    """Encode text to ids and back, and name each token readably for plots.

    Args:
        backend: a `tokenizers.Tokenizer` with padding and truncation off.
        kind: "wordpiece" or "bpe" (byte-level), which decides how tokens() shows pieces.
        bos_id, eos_id: the ids that start and end a sequence or a chat turn (None if none).
        chat_template: the file's Jinja chat template, kept to show learners (None if none).
    """

    backend: Backend
    _: KW_ONLY
    kind: str
    bos_id: int | None = None
    eos_id: int | None = None
    chat_template: str | None = None

    def __post_init__(self) -> None:
        self.vocab_size = self.backend.get_vocab_size(with_added_tokens=True)
        # generation stops at the end of a chat turn or of a document
        ends = (self.eos_id, self.backend.token_to_id("<|endoftext|>"))
        self.stop_ids = frozenset(i for i in ends if i is not None)

    def __repr__(self) -> str:
        return f"Tokenizer(kind={self.kind!r}, vocab_size={self.vocab_size})"

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """Token ids of `text`; MiniLM adds [CLS] ... [SEP], SmolLM2 adds nothing.

        Special tokens written in the text (e.g. "<|im_start|>") become their single ids.
        """
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        return self.backend.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: list[int], *, skip_special_tokens: bool = False) -> str:
        """The text of `ids` (a list of ints or a 1-D tensor)."""
        ids = self._check_ids(ids)
        return self.backend.decode(ids, skip_special_tokens=skip_special_tokens)

    def tokens(self, ids: list[int]) -> list[str]:
        """One readable label per id: " capital", "##izer", "\\n", "<|im_start|>".

        Byte-level pieces are shown as the text their bytes spell; a piece that holds only part
        of a character (Chinese takes 3 bytes) shows its bytes as "\\xe6\\xb3".
        """
        ids = self._check_ids(ids)
        pieces = [self.backend.id_to_token(i) for i in ids]
        if self.kind == "bpe":
            table = byte_decoder()
            special = {t.content for t in self.backend.get_added_tokens_decoder().values()}
            pieces = [
                p
                if p in special or not all(c in table for c in p)
                else bytes(table[c] for c in p).decode("utf-8", errors="backslashreplace")
                for p in pieces
            ]
        return [p.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r") for p in pieces]

    def _check_ids(self, ids: object) -> list[int]:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise TypeError("ids: expected a list of ints or a 1-D integer tensor")
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(
                f"ids: token ids must lie in [0, {self.vocab_size}), got {bad[:5]}"
                + (" ..." if len(bad) > 5 else "")
            )
        return ids


def wordpiece_from_file(path: str | Path) -> Tokenizer:
    """MiniLM's tokenizer from its tokenizer.json, with padding and truncation turned off."""
    backend = Backend.from_file(str(path))
    backend.no_padding()
    backend.no_truncation()
    return Tokenizer(
        backend,
        kind="wordpiece",
        bos_id=backend.token_to_id("[CLS]"),
        eos_id=backend.token_to_id("[SEP]"),
    )


def bpe_from_gguf(metadata: dict[str, object]) -> Tokenizer:
    """SmolLM2's byte-level BPE from a GGUF file's tokenizer.ggml.* metadata."""
    tokens = metadata["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ", 1)) for m in metadata["tokenizer.ggml.merges"]]
    types = metadata.get("tokenizer.ggml.token_type", [1] * len(tokens))
    bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges)
    backend = Backend(bpe)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),  # as SmolLM2 was trained
            pre_tokenizers.ByteLevel(add_prefix_space=False),  # GPT-2's split into words
        ]
    )
    backend.decoder = decoders.ByteLevel()
    special = [t for t, kind in zip(tokens, types, strict=True) if kind == _CONTROL]
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    return Tokenizer(
        backend,
        kind="bpe",
        bos_id=metadata.get("tokenizer.ggml.bos_token_id"),
        eos_id=metadata.get("tokenizer.ggml.eos_token_id"),
        chat_template=metadata.get("tokenizer.chat_template"),
    )
