"""Damaged and hostile model files: each is a WeightFileError naming the file, the place and the
fix, and none makes the reader allocate more than the file can back.

The files are crafted here with struct, a few hundred bytes each (the GGUF layout is in
attention/models/pretrained/gguf_weights.py). The three that made the old readers grow to
gigabytes are loaded in a subprocess whose address space is capped at 1 GiB above what it uses
after importing torch (resource.RLIMIT_AS): a reader that loops over a claimed count, or
dequantises one region a thousand times, hits MemoryError there instead of the test machine.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from attention.models.errors import WeightFileError
from attention.models.pretrained import GGUFFormatError, load_pretrained, read_gguf
from attention.models.toy.checkpoints import load_checkpoint

U32, F32, STR, ARR, U64 = 4, 6, 8, 9, 10  # GGUF metadata value types
T_F32, T_Q4_0, T_Q8_0 = 0, 2, 8  # GGUF tensor types


def _str(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _value(kind: int, value: object) -> bytes:
    if kind == STR:
        return _str(value)
    if kind == ARR:
        item_kind, items = value
        return struct.pack("<IQ", item_kind, len(items)) + b"".join(
            _value(item_kind, v) for v in items
        )
    return struct.pack({U32: "<I", F32: "<f", U64: "<Q"}[kind], value)


def gguf_bytes(kv: dict[str, tuple[int, object]], tensors=(), data=b"", align=32) -> bytes:
    """A GGUF v3 file: kv {key: (type, value)}, tensors [(name, dims, type, offset)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, (kind, value) in kv.items():
        out += _str(key) + struct.pack("<I", kind) + _value(kind, value)
    for name, dims, kind, offset in tensors:
        out += _str(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", kind, offset)
    out += bytes(-len(out) % align)
    return out + data


def llama_kv(**change: tuple[int, object]) -> dict[str, tuple[int, object]]:
    """The metadata of a tiny llama model; `change` replaces keys (dots written as __)."""
    kv = {
        "general.architecture": (STR, "llama"),
        "llama.embedding_length": (U32, 8),
        "llama.block_count": (U32, 1),
        "llama.attention.head_count": (U32, 2),
        "llama.attention.head_count_kv": (U32, 1),
        "llama.feed_forward_length": (U32, 16),
        "llama.context_length": (U32, 64),
        "llama.rope.freq_base": (F32, 10000.0),
        "llama.attention.layer_norm_rms_epsilon": (F32, 1e-5),
        "tokenizer.ggml.tokens": (ARR, (STR, ["a", "b", "c", "ab"])),
        "tokenizer.ggml.merges": (ARR, (STR, ["a b"])),
    }
    kv.update({k.replace("__", "."): v for k, v in change.items()})
    return kv


def write(tmp_path: Path, name: str, raw: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(raw)
    return path


def load_smol(path: Path) -> None:
    load_pretrained("smollm2", path=path)


# ------------------------------------------------------------------ each damage, a clear error

# (case, file bytes, message pattern); the message of load_pretrained also names the file and
# ends with "point path= at an intact copy" (checked for every case below).
GGUF_CASES = [
    (
        "alignment 0 (was ZeroDivisionError)",
        gguf_bytes(llama_kv(general__alignment=(U32, 0))),
        r"general\.alignment: expected a power of two from 1 to 2\^20 .*got 0",
    ),
    (
        "arrays nested 5,000 deep (was RecursionError)",
        b"GGUF"
        + struct.pack("<IQQ", 3, 0, 1)
        + _str("x")
        + struct.pack("<I", ARR)
        + struct.pack("<IQ", ARR, 1) * 5000
        + struct.pack("<IQ", U32, 0),
        r"arrays nested more than 4 deep at byte \d+",
    ),
    (
        "block_count as a string (was TypeError)",
        gguf_bytes(llama_kv(llama__block_count=(STR, "30"))),
        r"llama\.block_count: expected an integer, got str '30'",
    ),
    (
        "dimensions 2^32 x 2^32 (was RuntimeError)",
        gguf_bytes(llama_kv(), [("token_embd.weight", (2**32, 2**32), T_F32, 0)], bytes(64)),
        r"tensor 'token_embd\.weight' needs bytes up to 7378697629483820\d{4}",
    ),
    (
        "a product that overflows int64 to a negative size (was RuntimeError)",
        gguf_bytes(llama_kv(), [("token_embd.weight", (2**62, 2, 3), T_F32, 0)], bytes(64)),
        r"the file ends at byte \d+ but tensor 'token_embd\.weight' needs bytes up to",
    ),
    (
        "an offset off the alignment (was RuntimeError)",
        gguf_bytes(llama_kv(), [("token_embd.weight", (4, 8), T_F32, 1)], bytes(160)),
        r"tensor 'token_embd\.weight' at byte \d+: its offset 1 in the data section is not a "
        r"multiple of general\.alignment = 32",
    ),
    (
        "a Q8_0 tensor of 33 weights (was RuntimeError)",
        gguf_bytes(llama_kv(), [("token_embd.weight", (33,), T_Q8_0, 0)], bytes(96)),
        r"'token_embd\.weight': Q8_0 stores blocks of 32 weights, but its shape \(33,\) holds 33",
    ),
    (
        "two tensors on the same bytes (was accepted)",
        gguf_bytes(
            llama_kv(),
            [("a", (8,), T_F32, 0), ("b", (8,), T_F32, 0)],
            bytes(32),
        ),
        r"tensor '(a|b)' at byte \d+ overlaps tensor '(a|b)', which ends at byte \d+",
    ),
    (
        "the same name twice (was accepted, the first silently dropped)",
        gguf_bytes(llama_kv(), [("a", (8,), T_F32, 0), ("a", (8,), T_F32, 32)], bytes(64)),
        r"tensor 'a' is described twice in the header",
    ),
    (
        "a storage type the reader does not know (said: pip install gguf)",
        gguf_bytes(llama_kv(), [("a", (8,), 99, 0)], bytes(32)),
        r"tensor 'a' has storage type 99, which this reader does not know \(it reads F32, F16, "
        r"Q4_0, Q4_1, Q8_0, BF16",
    ),
    (
        "a negative RoPE base (was accepted, NaN at run time)",
        gguf_bytes(llama_kv(llama__rope__freq_base=(F32, -1.0))),
        r"llama\.rope\.freq_base: expected a positive finite number, got -1\.0",
    ),
    (
        "a vocabulary of numbers (was TypeError inside tokenizers)",
        gguf_bytes(llama_kv(tokenizer__ggml__tokens=(ARR, (U32, [1, 2, 3])))),
        r"tokenizer\.ggml\.tokens: expected an array of strings, got list",
    ),
]


@pytest.mark.parametrize(
    ("raw", "pattern"), [c[1:] for c in GGUF_CASES], ids=[c[0] for c in GGUF_CASES]
)
def test_damaged_gguf_is_a_weight_file_error(tmp_path, raw, pattern):
    path = write(tmp_path, "bad.gguf", raw)
    with pytest.raises(WeightFileError, match=rf"bad\.gguf: .*{pattern}") as info:
        load_smol(path)
    message = str(info.value)
    assert message.endswith("point path= at an intact copy"), message
    assert "pip install gguf" not in message


def test_read_gguf_errors_name_the_file_and_are_weight_file_errors(tmp_path):
    path = write(tmp_path, "zero.gguf", gguf_bytes(llama_kv(general__alignment=(U32, 0))))
    with pytest.raises(GGUFFormatError, match=r"zero\.gguf: general\.alignment: expected"):
        read_gguf(path)
    assert issubclass(GGUFFormatError, WeightFileError)


def test_checkpoint_of_text_is_a_weight_file_error(tmp_path):
    """torch.load on a text file raised KeyError: 101 out of load_checkpoint."""
    path = write(tmp_path, "notes.pt", b"hello world\n")
    with pytest.raises(
        WeightFileError,
        match=r"notes\.pt is truncated or corrupt \(12 bytes\), torch\.load said: KeyError: "
        r"101; save it again with save_checkpoint",
    ):
        load_checkpoint(path)


def test_checkpoint_with_a_damaged_config_is_a_weight_file_error(tmp_path):
    from attention.models.toy.checkpoints import CHECKPOINT_FORMAT

    path = tmp_path / "odd.pt"
    torch.save({"format": CHECKPOINT_FORMAT, "config": {"colour": 1}}, path)
    with pytest.raises(WeightFileError, match=r"odd\.pt is damaged: TypeError: .*'colour'"):
        load_checkpoint(path)


def test_gguf_at_alignment_one_reads_odd_offsets(tmp_path):
    """Alignment 1 is legal: an F32 tensor at an odd byte is read, not refused."""
    values = torch.arange(4, dtype=torch.float32)
    kv = {"general.alignment": (U32, 1)}
    raw = gguf_bytes(kv, [("a", (1,), T_F32, 0), ("b", (4,), T_F32, 5)], bytes(5), align=1)
    raw += values.numpy().tobytes()
    out = read_gguf(write(tmp_path, "one.gguf", raw))
    assert torch.equal(out.tensors["b"], values)


# --------------------------------------------------------- hostile files under a memory cap


def safetensors_bytes(tensors: dict[str, tuple[int, ...]]) -> bytes:
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 4 * int(torch.tensor(shape).prod()) if shape else 4
        header[name] = {
            "dtype": "F32",
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def hostile_files(folder: Path) -> dict[str, tuple[str, Path]]:
    """{case: (model name, path)} for the three files that grew the old readers to GBs."""
    blocks = write(folder, "blocks.gguf", gguf_bytes(llama_kv(llama__block_count=(U64, 4 * 10**9))))
    # 200 Q4_0 tensors of 1 MiB of blocks, all on the same bytes: 7 MiB of float32 each
    n_blocks = 2**20 // 18
    shared = [(f"t{i}", (32 * n_blocks,), T_Q4_0, 0) for i in range(200)]
    overlap = write(folder, "overlap.gguf", gguf_bytes(llama_kv(), shared, bytes(18 * n_blocks)))
    minilm = folder / "minilm"
    minilm.mkdir()
    (minilm / "tokenizer.json").write_text("{}")
    write(
        minilm,
        "model.safetensors",
        safetensors_bytes(
            {
                "embeddings.word_embeddings.weight": (4, 12),
                "embeddings.position_embeddings.weight": (4, 12),
                "embeddings.token_type_embeddings.weight": (1, 12),
                "encoder.layer.0.intermediate.dense.weight": (4, 12),
                "encoder.layer.100000000.x": (1,),
            }
        ),
    )
    return {
        "block_count 4e9 in 544 bytes": ("smollm2", blocks),
        "200 tensors on one 1 MiB region": ("smollm2", overlap),
        "encoder.layer.100000000 in 1 KB": ("minilm", minilm),
    }


CAPPED = textwrap.dedent(
    """
    import json, resource, sys
    from attention.models.pretrained import load_pretrained

    def vm_bytes():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

    cap = vm_bytes() + 2**30  # 1 GiB above the imports
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    results = {}
    for case, (name, path) in json.loads(sys.argv[1]).items():
        try:
            load_pretrained(name, path=path)
            results[case] = ["none", ""]
        except BaseException as err:
            results[case] = [type(err).__name__, str(err)[:400]]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"results": results, "peak_rss_mib": peak / 1024}))
    """
)


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    files = hostile_files(tmp_path_factory.mktemp("hostile"))
    argv = json.dumps({case: (name, str(path)) for case, (name, path) in files.items()})
    run = subprocess.run(
        [sys.executable, "-c", CAPPED, argv], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return files, json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("case", "pattern"),
    [
        (
            "block_count 4e9 in 544 bytes",
            r"blocks\.gguf: does not hold a LLaMA-style model like SmolLM2 \(llama\.block_count: "
            r"expected an integer in \[1, 1\] \(the file holds tensors for 0 blocks\), got "
            r"4000000000\)",
        ),
        (
            "200 tensors on one 1 MiB region",
            r"overlap\.gguf: not a complete GGUF file: tensor 't\d+' at byte \d+ overlaps tensor",
        ),
        (
            "encoder.layer.100000000 in 1 KB",
            r"model\.safetensors: does not hold a BERT model like all-MiniLM-L6-v2 "
            r"\(encoder\.layer\.<i>: expected layers numbered 0 to n-1, got 2 layers numbered "
            r"\[0, 100000000\]\)",
        ),
    ],
)
def test_hostile_file_is_refused_within_a_memory_cap(capped, case, pattern):
    _files, report = capped
    kind, message = report["results"][case]
    assert kind == "WeightFileError", (kind, message)
    assert __import__("re").search(pattern, message), message


def test_float32_made_is_bounded_by_the_file(tmp_path, monkeypatch):
    """The total dequantised bytes are checked against the file's size before any is made."""
    from attention.models.pretrained import gguf_weights

    raw = gguf_bytes({}, [("q", (64,), T_Q4_0, 0)], bytes(36))  # 64 weights in 36 bytes
    path = write(tmp_path, "q.gguf", raw)
    assert read_gguf(path).tensors["q"].shape == (64,)
    monkeypatch.setattr(gguf_weights, "MAX_EXPANSION", 0.5)
    with pytest.raises(
        GGUFFormatError, match=r"would dequantise to 256 bytes of float32, more than 0\.5 x the"
    ):
        read_gguf(path)
