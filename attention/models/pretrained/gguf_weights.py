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

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

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


class GGUFFormatError(ValueError):
    """The bytes are not a complete GGUF file; the message says where reading stopped."""


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

    def check_count(self, count: int, min_size: int) -> None:
        """Refuse an array longer than the rest of the file could hold (garbage or truncated)."""
        if count * min_size > len(self.buf) - self.pos:
            raise GGUFFormatError(
                f"an array of {count} items at byte {self.pos} does not fit in the "
                f"{len(self.buf)}-byte file (truncated?)"
            )

    def value(self, type_id: int) -> object:
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
            self.check_count(count, 1)
            return [self.value(item_type) for _ in range(count)]
        raise GGUFFormatError(f"unknown metadata value type {type_id} at byte {self.pos}")


def _tensor_bytes(name: str, shape: tuple[int, ...], type_id: int) -> int:
    n = int(np.prod(shape))
    if type_id in TENSOR_TYPES:
        _, block, size = TENSOR_TYPES[type_id]
    else:
        try:
            from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

            block, size = GGML_QUANT_SIZES[GGMLQuantizationType(type_id)]
        except (ImportError, ValueError, KeyError):
            raise GGUFFormatError(
                f"tensor {name!r} has storage type {type_id}, which this reader does not know "
                f"(it reads {', '.join(t[0] for t in TENSOR_TYPES.values())}); "
                "pip install gguf to read the others"
            ) from None
    return n // block * size


def read_gguf(path: str | Path) -> GGUFFile:
    """Parse the GGUF file at `path` and dequantise every tensor to float32.

    Raises:
        GGUFFormatError: not a GGUF file, a truncated one, or an unknown tensor type.
    """
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
    metadata = {}
    for _ in range(n_kv):
        key = cur.string()
        metadata[key] = cur.value(cur.take("I"))
    header = []
    for _ in range(n_tensors):
        name = cur.string()
        dims = [cur.take("Q") for _ in range(cur.take("I"))]
        type_id, offset = cur.take("I"), cur.take("Q")
        header.append((name, tuple(reversed(dims)), type_id, offset))
    align = int(metadata.get("general.alignment", 32))
    data_start = -(-cur.pos // align) * align
    infos = []
    for name, shape, type_id, offset in header:
        n_bytes = _tensor_bytes(name, shape, type_id)
        info = TensorInfo(name, shape, type_id, data_start + offset, n_bytes)
        if info.offset + n_bytes > raw.size:
            raise GGUFFormatError(
                f"the file ends at byte {raw.size} but tensor {name!r} needs bytes up to "
                f"{info.offset + n_bytes} (truncated?)"
            )
        infos.append(info)
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
