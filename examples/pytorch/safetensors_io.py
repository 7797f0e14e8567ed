"""Reading a .safetensors file with nothing but the standard library and torch.

The `safetensors` package reads these files too (safetensors.torch.load_file);
this reader keeps the example free of packages Debian does not ship.
Format: 8-byte little-endian header length, a JSON header mapping each name to
dtype, shape and byte offsets, then the raw little-endian data.
"""
import json
import struct

import torch

_DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = bytearray(blob[8 + n:])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        t = torch.frombuffer(data[begin:end], dtype=_DTYPES[info["dtype"]]) if end > begin else \
            torch.empty(0, dtype=_DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"]).clone()
    return tensors, header.get("__metadata__", {})
