"""Read a GGUF file (llama.cpp's format) into metadata and float32 tensors, with torch alone.

Layout, little-endian:
    b"GGUF", version u32 (2 or 3), n_tensors u64, n_kv u64
    n_kv times:      key (u64 length + utf-8 bytes), value type u32, value
    n_tensors times: name, n_dims u32, dims u64 x n_dims (fastest-varying first), type u32,
                     offset u64 (from the start of the data section)
    zero padding up to a multiple of general.alignment (32), then the tensors' bytes.

Quantised types store blocks of 32 weights with float16 scales:
    Q8_0: d, 32 int8 q            x = d * q
    Q4_0: d, 16 bytes of nibbles  x = d * (q - 8),  q in 0..15
    Q4_1: d, m, 16 bytes          x = d * q + m
The first 16 weights of a 4-bit block are the low nibbles, the next 16 the high nibbles.

The `gguf` package (llama.cpp's own reader) parses the 100 000 vocabulary strings of a small
model in about 2 s and dequantises in numpy; this reader does both in a fraction of a second,
and the tests check it against `gguf` tensor by tensor. Other quantisation types are handed to
`gguf.dequantize` when that package is installed.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ..errors import WeightFileError

MAGIC = b"GGUF"

# value type id -> struct format of one scalar (8 = string and 9 = array are handled apart)
_SCALARS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
_NUMPY = {0: "u1", 1: "i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?"}
_NUMPY.update({10: "<u8", 11: "<i8", 12: "<f8"})

# tensor type id -> (name, weights per block, bytes per block)
TENSOR_TYPES = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    8: ("Q8_0", 32, 34),
    30: ("BF16", 1, 2),
}


MAX_DIMS = 4  # GGML_MAX_DIMS: llama.cpp's tensors have at most four dimensions
MAX_NESTING = 4  # arrays of arrays: no model file nests deeper than two
# The float32 made from a file may be at most this many times its size, whatever its header
# claims. With extents that may not overlap, the course's types stay far below (Q4_0: 32 float32
# from 18 bytes, 7.1x); llama.cpp's 1.56-bit IQ1_S, read through `gguf`, reaches 20.5x.
MAX_EXPANSION = 24


class GGUFFormatError(WeightFileError):
    """The bytes are not a complete GGUF file; the message says where reading stopped.

    `detail` is the message without the file's name (load_pretrained adds its own prefix).
    """

    def __init__(self, detail: str, path: str | Path | None = None) -> None:
        super().__init__(detail if path is None else f"{path}: {detail}")
        self.detail = detail


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's description from the file's header."""

    name: str
    shape: tuple[int, ...]  # torch order (slowest first): a linear layer's (out, in)
    type_id: int
    offset: int  # from the start of the file
    n_bytes: int


@dataclass(frozen=True)
class GGUFFile:
    """A parsed GGUF file: metadata key/values and dequantised float32 tensors."""

    version: int
    metadata: dict[str, object]  # e.g. "llama.block_count" -> 30
    tensors: dict[str, Tensor]  # name -> float32 tensor in torch order
    types: dict[str, str]  # name -> storage type in the file ("Q4_1", "F32", ...)


class _Cursor:
    """Reads little-endian values from a buffer, failing with the byte position."""

    def __init__(self, buf: memoryview) -> None:
        self.buf, self.pos = buf, 0

    def take(self, fmt: str) -> object:
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.buf):
            raise GGUFFormatError(
                f"the file ends at byte {len(self.buf)} while reading byte {self.pos + size} "
                "of the header (truncated?)"
            )
        (value,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        n = self.take("Q")
        if self.pos + n > len(self.buf):
            raise GGUFFormatError(
                f"the file ends at byte {len(self.buf)} inside a {n}-byte string (truncated?)"
            )
        text = bytes(self.buf[self.pos : self.pos + n]).decode("utf-8", errors="replace")
        self.pos += n
        return text

    def _strings(self, count: int) -> list[str]:
        buf, pos, out = self.buf, self.pos, []
        self.check_count(count, 8)
        for _ in range(count):
            n = int.from_bytes(buf[pos : pos + 8], "little")
            out.append(str(buf[pos + 8 : pos + 8 + n], "utf-8", "replace"))
            pos += 8 + n
        if pos > len(buf):
            raise GGUFFormatError(
                f"the file ends at byte {len(buf)} inside an array of strings (truncated?)"
            )
        self.pos = pos
        return out

    def check_count(self, count: int, min_size: int, what: str = "an array of {} items") -> None:
        """Refuse a count of items that the rest of the file could not hold (garbage or cut)."""
        if count * min_size > len(self.buf) - self.pos:
            raise GGUFFormatError(
                f"{what.format(count)} at byte {self.pos} does not fit in the "
                f"{len(self.buf)}-byte file (truncated?)"
            )

    def value(self, type_id: int, depth: int = 0) -> object:
        if type_id in _SCALARS:
            return self.take(_SCALARS[type_id])
        if type_id == 8:
            return self.string()
        if type_id == 9:
            item_type, count = self.take("I"), self.take("Q")
            if item_type in _NUMPY:  # numbers: one numpy read instead of a Python loop
                dtype = np.dtype(_NUMPY[item_type])
                end = self.pos + count * dtype.itemsize
                if end > len(self.buf):
                    raise GGUFFormatError(
                        f"the file ends at byte {len(self.buf)} inside an array (truncated?)"
                    )
                array = np.frombuffer(self.buf[self.pos : end], dtype=dtype).tolist()
                self.pos = end
                return array
            if item_type == 8:  # strings (a vocabulary): a tight loop, checked at the end
                return self._strings(count)
            if item_type == 9 and depth >= MAX_NESTING:
                raise GGUFFormatError(
                    f"arrays nested more than {MAX_NESTING} deep at byte {self.pos} "
                    "(no model file nests them)"
                )
            self.check_count(count, 12 if item_type == 9 else 1)
            return [self.value(item_type, depth + 1) for _ in range(count)]
        raise GGUFFormatError(f"unknown metadata value type {type_id} at byte {self.pos}")


def _tensor_bytes(name: str, shape: tuple[int, ...], type_id: int) -> int:
    """The bytes a tensor of `shape` takes in storage type `type_id` (Python ints: no overflow)."""
    n = math.prod(shape)
    if type_id in TENSOR_TYPES:
        type_name, block, size = TENSOR_TYPES[type_id]
    else:
        try:  # llama.cpp's own package, when present, knows the other quantisations
            from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

            block, size = GGML_QUANT_SIZES[GGMLQuantizationType(type_id)]
            type_name = GGMLQuantizationType(type_id).name
        except (ImportError, ValueError, KeyError):
            raise GGUFFormatError(
                f"tensor {name!r} has storage type {type_id}, which this reader does not know "
                f"(it reads {', '.join(t[0] for t in TENSOR_TYPES.values())}, as the course's "
                "model files use)"
            ) from None
    if n % block:
        raise GGUFFormatError(
            f"tensor {name!r}: {type_name} stores blocks of {block} weights, but its shape "
            f"{shape} holds {n}, not a multiple of {block}"
        )
    return n // block * size


def _alignment(metadata: dict[str, object]) -> int:
    align = metadata.get("general.alignment", 32)
    if type(align) is not int or align < 1 or align & (align - 1) or align > 2**20:
        raise GGUFFormatError(
            f"general.alignment: expected a power of two from 1 to 2^20 (the default is 32), "
            f"got {align!r}"
        )
    return align


def _check_extents(infos: list[TensorInfo], file_size: int, data_start: int, align: int) -> None:
    """Refuse tensors outside the file, off the alignment, or sharing bytes with another."""
    end_of = 0
    last = None
    for info in sorted(infos, key=lambda i: (i.offset, i.n_bytes)):
        where = f"tensor {info.name!r} at byte {info.offset}"
        if (info.offset - data_start) % align:
            raise GGUFFormatError(
                f"{where}: its offset {info.offset - data_start} in the data section is not a "
                f"multiple of general.alignment = {align}"
            )
        if info.offset + info.n_bytes > file_size:
            raise GGUFFormatError(
                f"the file ends at byte {file_size} but tensor {info.name!r} needs bytes up to "
                f"{info.offset + info.n_bytes} (truncated?)"
            )
        if last is not None and info.offset < end_of and info.n_bytes:
            raise GGUFFormatError(
                f"{where} overlaps tensor {last!r}, which ends at byte {end_of}: each "
                "tensor must have bytes of its own"
            )
        if info.n_bytes:
            end_of, last = info.offset + info.n_bytes, info.name


def read_gguf(path: str | Path) -> GGUFFile:
    """Parse the GGUF file at `path` and dequantise every tensor to float32.

    The work is bounded by the file: every count is checked against the bytes left before it
    is looped over, tensors may neither leave the file nor share bytes, so the float32 made
    is at most MAX_EXPANSION times the file's size.

    Raises:
        GGUFFormatError (a WeightFileError): not a GGUF file, a truncated or damaged one, or
            an unknown tensor type; the message names the file and where reading stopped.
    """
    try:
        return _read_gguf(path)
    except GGUFFormatError as err:
        raise GGUFFormatError(err.detail, path) from None
    except (ValueError, TypeError, RuntimeError, OverflowError, struct.error) as err:
        # a damage the checks above did not foresee: still a clear error about this file
        detail = f"damaged header or tensor data ({type(err).__name__}: {err})"
        raise GGUFFormatError(detail, path) from None


def _read_gguf(path: str | Path) -> GGUFFile:
    size = Path(path).stat().st_size
    if size < 24:  # also: numpy cannot map an empty file
        raise GGUFFormatError(f"expected at least a 24-byte header, got {size} bytes")
    # Map the file rather than read it: its pages are dropped again once all is dequantised.
    # mode "c" (copy-on-write) gives a writable array torch accepts; the file never changes.
    raw = np.memmap(path, dtype=np.uint8, mode="c")
    cur = _Cursor(memoryview(raw))
    if bytes(cur.buf[:4]) != MAGIC:
        raise GGUFFormatError(f"expected the magic bytes b'GGUF', got {bytes(cur.buf[:4])!r}")
    cur.pos = 4
    version = cur.take("I")
    if version not in (2, 3):
        raise GGUFFormatError(f"expected GGUF version 2 or 3, got {version}")
    n_tensors, n_kv = cur.take("Q"), cur.take("Q")
    cur.check_count(n_kv, 13, "{} metadata keys")  # key length, type, a 1-byte value: 13 bytes
    metadata = {}
    for _ in range(n_kv):
        key = cur.string()
        metadata[key] = cur.value(cur.take("I"))
    cur.check_count(n_tensors, 24, "{} tensors")  # name length, n_dims, type, offset: 24 bytes
    header = []
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.take("I")
        if n_dims > MAX_DIMS:
            raise GGUFFormatError(
                f"tensor {name!r} at byte {cur.pos}: expected at most {MAX_DIMS} dimensions, "
                f"got {n_dims}"
            )
        dims = [cur.take("Q") for _ in range(n_dims)]
        type_id, offset = cur.take("I"), cur.take("Q")
        header.append((name, tuple(reversed(dims)), type_id, offset))
    align = _alignment(metadata)
    data_start = -(-cur.pos // align) * align
    infos, seen = [], set()
    for name, shape, type_id, offset in header:
        if name in seen:
            raise GGUFFormatError(f"tensor {name!r} is described twice in the header")
        seen.add(name)
        n_bytes = _tensor_bytes(name, shape, type_id)
        infos.append(TensorInfo(name, shape, type_id, data_start + offset, n_bytes))
    _check_extents(infos, raw.size, data_start, align)
    made = sum(4 * math.prod(i.shape) for i in infos)
    if made > MAX_EXPANSION * raw.size:
        raise GGUFFormatError(
            f"the tensors would dequantise to {made} bytes of float32, more than "
            f"{MAX_EXPANSION} x the file's {raw.size} bytes"
        )
    data = torch.from_numpy(raw)
    tensors = {i.name: dequantize(data[i.offset : i.offset + i.n_bytes], i) for i in infos}
    types = {i.name: TENSOR_TYPES.get(i.type_id, (str(i.type_id),))[0] for i in infos}
    return GGUFFile(version=version, metadata=metadata, tensors=tensors, types=types)


def _f16(blocks: Tensor, start: int) -> Tensor:
    """Column `start:start+2` of uint8 blocks, read as one float16 per block -> (N, 1) float32."""
    return blocks[:, start : start + 2].contiguous().view(torch.float16).float()  # (N, 1)


def dequantize(raw: Tensor, info: TensorInfo) -> Tensor:
    """Turn one tensor's stored bytes (uint8, 1-D) into float32 of shape info.shape.

    The quantised types are written straight into the output, so that loading a model makes
    few temporary copies (they would stay in the process's memory after being freed).
    """
    name = TENSOR_TYPES.get(info.type_id, ("other",))[0]
    if name in ("F32", "F16", "BF16") and raw.storage_offset() % TENSOR_TYPES[info.type_id][2]:
        raw = raw.clone()  # an offset that is not a multiple of the element size (alignment 1)
    if name == "F32":
        x = raw.view(torch.float32).clone()
    elif name in ("F16", "BF16"):
        x = raw.view(torch.float16 if name == "F16" else torch.bfloat16).float()
    elif name == "Q8_0":
        blocks = raw.view(-1, 34)  # (N, 34): scale d, then 32 int8
        x = torch.empty(blocks.shape[0], 32)  # (N, 32)
        x.copy_(blocks[:, 2:].view(torch.int8)).mul_(_f16(blocks, 0))
    elif name in ("Q4_0", "Q4_1"):
        first = 2 if name == "Q4_0" else 4
        blocks = raw.view(-1, first + 16)  # (N, 18) or (N, 20)
        nibbles = blocks[:, first:]  # (N, 16)
        x = torch.empty(blocks.shape[0], 32)  # (N, 32)
        x[:, :16], x[:, 16:] = nibbles & 0x0F, nibbles >> 4  # q in 0..15
        if name == "Q4_0":
            x.sub_(8.0).mul_(_f16(blocks, 0))
        else:
            x.mul_(_f16(blocks, 0)).add_(_f16(blocks, 2))
    else:
        from gguf import GGMLQuantizationType
        from gguf import dequantize as gguf_dequantize

        x = torch.from_numpy(gguf_dequantize(raw.numpy(), GGMLQuantizationType(info.type_id)))
    return x.reshape(info.shape).float()
