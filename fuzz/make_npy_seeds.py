#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_npy (fuzz/corpus/fuzz_npy/).

Each seed is in the target's input layout (see fuzz/fuzz_npy.cpp): byte 0
says whether the rest is one .npy file (bit 0 clear) or an npy data folder
(bit 0 set, then flags, u16 lengths and four files). The .npy files are
written byte by byte here, the way numpy's format.py lays them out, so no
numpy is needed; a few are deliberately broken (Fortran order, big-endian,
float16, truncated data) so the fuzzer starts next to each refusal.
    python3 fuzz/make_npy_seeds.py fuzz/corpus/fuzz_npy
"""
import os
import struct
import sys

# descr -> struct format of one value (little-endian)
FORMATS = {"<f4": "<f", "<i8": "<q", "<i4": "<i", "<u2": "<H", "|u1": "<B", "<u1": "<B", ">f4": ">f",
           "<f2": "<e"}


def shape_text(shape):
    if len(shape) == 1:
        return "(%d,)" % shape[0]
    return "(" + ", ".join(str(d) for d in shape) + ")"


def npy(descr, shape, values, major=1, fortran=False, header=None):
    """A .npy file: magic, version, header length, padded header, values."""
    if header is None:
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
            descr, "True" if fortran else "False", shape_text(shape))
    length_format = "<H" if major == 1 else "<I"
    prefix = 6 + 2 + struct.calcsize(length_format)
    total = (prefix + len(header) + 1 + 63) // 64 * 64
    header = header + " " * (total - prefix - len(header) - 1) + "\n"
    data = b"".join(struct.pack(FORMATS[descr], v) for v in values)
    return (b"\x93NUMPY" + bytes([major, 0]) + struct.pack(length_format, len(header)) +
            header.encode("latin-1") + data)


def single(file_bytes):
    return b"\x00" + file_bytes


FOLDER, NONIID, TOKENS = 1, 2, 32


def folder(files, workers=1, noniid=False, tokens_vocab=0, omit=0):
    """files: the four .npy files in the order train_inputs, train_targets,
    val_inputs, val_targets."""
    flags = FOLDER | ((workers - 1) << 2) | (NONIID if noniid else 0) | (TOKENS if tokens_vocab else 0)
    head = bytes([flags, omit, max(tokens_vocab - 1, 0)])
    head += struct.pack("<HHH", len(files[0]), len(files[1]), len(files[2]))
    return head + b"".join(files)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    img_train = npy("<f4", (6, 1, 2, 2), [i / 24 for i in range(24)])
    img_val = npy("<f4", (2, 1, 2, 2), [0.5] * 8)
    lab_train = npy("<i8", (6,), [0, 1, 2, 0, 1, 2])
    lab_val = npy("<i8", (2,), [2, 1])
    tok_train = npy("<i4", (5, 4), [(3 * i) % 16 for i in range(20)])
    tok_val = npy("<i4", (2, 4), [i % 16 for i in range(8)])
    seeds = {
        "file_f4_v1_2x3": single(npy("<f4", (2, 3), [0.0, 1.5, -2.0, 3.25, 1e-3, 7.0])),
        "file_u2_v2": single(npy("<u2", (4,), [0, 1, 65535, 300], major=2)),
        "file_i8_v3_keys_reordered": single(npy("<i8", (2, 2), [1, -2, 3, 1 << 40], major=3,
                                                header="{'shape': (2, 2), 'descr': '<i8', 'fortran_order': False}")),
        "file_u1_1d": single(npy("|u1", (5,), [0, 1, 2, 254, 255])),
        "file_i4_3d": single(npy("<i4", (2, 1, 3), [1, -1, 2, -2, 3, -3])),
        "file_zero_rows": single(npy("<f4", (0, 3), [])),
        "file_fortran_order": single(npy("<f4", (2, 2), [1, 2, 3, 4], fortran=True)),
        "file_big_endian": single(npy(">f4", (2,), [1, 2])),
        "file_float16": single(npy("<f2", (2,), [1, 2])),
        "file_truncated": single(npy("<i8", (3,), [1, 2, 3])[:-5]),
        "folder_images_iid_2workers": folder([img_train, lab_train, img_val, lab_val], workers=2),
        "folder_images_noniid_3workers": folder([img_train, lab_train, img_val, lab_val], workers=3, noniid=True),
        "folder_tokens_noniid_2workers_vocab16": folder([tok_train, tok_train, tok_val, tok_val], workers=2,
                                                        noniid=True, tokens_vocab=16),
        "folder_u1_labels_column_4workers": folder(
            [npy("<u2", (8, 3), list(range(24))), npy("|u1", (8, 1), [3, 1, 2, 0, 3, 1, 2, 0]),
             npy("<u2", (1, 3), [5, 6, 7]), npy("|u1", (1, 1), [1])], workers=4, noniid=True),
        "folder_mismatched_lengths": folder([img_train, lab_val, img_val, lab_val]),
        "folder_missing_val_targets": folder([img_train, lab_train, img_val, lab_val], omit=8),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(seeds), out))


if __name__ == "__main__":
    main()
