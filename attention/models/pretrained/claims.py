"""Check what a weight file claims (counts, sizes, names) against the tensors it holds.

A file's header can claim anything: `llama.block_count = 4e9`, a tensor named
`encoder.layer.100000000.x`. The loaders build one name per layer and part, so a claim has to be
checked against the tensors actually present *before* any loop runs over it; then the work of
loading is bounded by the file, not by what it says. Each check raises ValueError naming the key
and what was expected and found; load_pretrained turns it into a WeightFileError naming the file.
"""

from __future__ import annotations

import math
import re

from torch import Tensor

LLAMA_PARTS = 9  # tensors per decoder block: 2 norms, q, k, v, output, gate, up, down
_LLAMA_INTS = (
    "llama.embedding_length",
    "llama.block_count",
    "llama.attention.head_count",
    "llama.attention.head_count_kv",
    "llama.feed_forward_length",
    "llama.context_length",
)
_LLAMA_FLOATS = ("llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon")


def _key(metadata: dict[str, object], key: str) -> object:
    if key not in metadata:
        raise ValueError(f"the metadata has no key {key!r}")
    return metadata[key]


def _count(key: str, value: object, high: int, why: str) -> int:
    if type(value) is not int:
        raise ValueError(f"{key}: expected an integer, got {type(value).__name__} {value!r:.40}")
    if not 1 <= value <= high:
        raise ValueError(f"{key}: expected an integer in [1, {high}] ({why}), got {value}")
    return value


def _strings(key: str, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise ValueError(f"{key}: expected an array of strings, got {type(value).__name__}")
    return value


def check_llama_metadata(metadata: dict[str, object], tensors: dict[str, Tensor]) -> None:
    """Refuse llama.* metadata that the tensors cannot back, before the model is built.

    block_count may not exceed the blocks whose tensors the file holds; every other size must
    be a positive integer no larger than the tensors allow; the tokenizer's arrays must be
    strings and integers of matching lengths.
    """
    blocks = {int(m[1]) for n in tensors if (m := re.match(r"blk\.(\d{1,9})\.", n))}
    present = len(blocks)
    _count("llama.block_count", _key(metadata, "llama.block_count"), max(present, 1),
           f"the file holds tensors for {present} blocks")  # fmt: skip
    for key in _LLAMA_INTS:  # sizes only shape modules built on the meta device: no loops
        if key != "llama.block_count":
            _count(key, _key(metadata, key), 2**31, "a size")
    for key in _LLAMA_FLOATS:
        value = _key(metadata, key)
        if type(value) not in (int, float) or not (math.isfinite(value) and value > 0):
            raise ValueError(f"{key}: expected a positive finite number, got {value!r:.40}")
    tokens = _strings("tokenizer.ggml.tokens", _key(metadata, "tokenizer.ggml.tokens"))
    merges = _strings("tokenizer.ggml.merges", _key(metadata, "tokenizer.ggml.merges"))
    bad = next((m for m in merges if " " not in m), None)
    if bad is not None:
        raise ValueError(f"tokenizer.ggml.merges: expected 'a b' pairs, got {bad!r:.40}")
    types = metadata.get("tokenizer.ggml.token_type", [1] * len(tokens))
    if not isinstance(types, list) or len(types) != len(tokens):
        raise ValueError(
            f"tokenizer.ggml.token_type: expected {len(tokens)} integers (one per token), got "
            f"{len(types) if isinstance(types, list) else type(types).__name__}"
        )
    for key in ("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"):
        value = metadata.get(key)
        if value is not None and (type(value) is not int or not 0 <= value < len(tokens)):
            raise ValueError(f"{key}: expected a token id in [0, {len(tokens)}), got {value!r}")


def encoder_layers(tensors: dict[str, Tensor]) -> int:
    """How many BERT layers `encoder.layer.{i}.*` the tensors hold: i must run 0, 1, ... n-1."""
    found = set()
    for name in tensors:
        if name.startswith("encoder.layer."):
            part = name.split(".")[2]
            if not (part.isascii() and part.isdigit()) or len(part) > 9:
                raise ValueError(f"tensor {name!r}: expected encoder.layer.<number>.<part>")
            found.add(int(part))
    if not found or found != set(range(len(found))):
        raise ValueError(
            f"encoder.layer.<i>: expected layers numbered 0 to n-1, got {len(found)} layers "
            f"numbered {sorted(found)[:4]}{' ...' if len(found) > 4 else ''}"
        )
    return len(found)
