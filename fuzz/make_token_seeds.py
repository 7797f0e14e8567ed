#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_token_file (fuzz/corpus/fuzz_token_file/).

Each seed is a prepared token folder packed in the target's input layout
(see fuzz/fuzz_token_file.cpp): an 8-byte header (flags, u16 vocab hint,
u16 meta.json length, u16 train.bin length, block_size - 1), then meta.json,
train.bin and val.bin. The folders look like what `atoll prepare` writes
(src/data/prepare.cpp), only tiny.
    python3 fuzz/make_token_seeds.py fuzz/corpus/fuzz_token_file
"""
import json
import os
import struct
import sys

META, TRAIN, VAL, HINT, NONIID = 1, 2, 4, 8, 16


def tokens(ids):
    return b"".join(struct.pack("<H", i) for i in ids)


def pack(flags, workers, block_size, meta, train, val, hint=0):
    meta_bytes = b"" if meta is None else (json.dumps(meta, indent=1) + "\n").encode()
    flags |= (workers - 1) << 5
    if meta is not None:
        flags |= META
    head = struct.pack("<BHHHB", flags | TRAIN | VAL, hint, len(meta_bytes), len(train), block_size - 1)
    return head + meta_bytes + train + val


def char_folder():
    text_train = "the cat sat\non the mat\nthe end"
    text_val = "a cat\nthe mat"
    vocab = sorted(set(text_train + text_val))
    ids = {c: i for i, c in enumerate(vocab)}
    train = [ids[c] for c in text_train]
    val = [ids[c] for c in text_val]
    meta = {"vocab_size": len(vocab), "tokenizer": "char", "source": "seed",
            "train_docs": [0, 12, 23], "val_docs": [0, 6],
            "train_tokens": len(train), "val_tokens": len(val),
            "char_vocab": [ord(c) for c in vocab], "char_vocab_from": "train+val"}
    return meta, tokens(train), tokens(val)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    meta, train, val = char_folder()
    seeds = {
        "char_iid_2workers": pack(0, 2, 4, meta, train, val),
        "char_noniid_3workers": pack(NONIID, 3, 3, meta, train, val),
        "byte_noniid_4workers": pack(NONIID, 4, 8, {
            "vocab_size": 256, "tokenizer": "byte", "train_docs": [0, 40, 90], "val_docs": [0]},
            bytes(range(32, 160)).ljust(256, b"x")[:240], b"hello world!" * 4),
        "bin_no_meta_hint": pack(HINT, 1, 16, None, tokens(range(0, 300, 3)) * 2, tokens(range(299, 0, -7)),
                                 hint=300),
        "bin_meta_vocab65536": pack(0, 8, 2, {"vocab_size": 65536, "tokenizer": "bin"},
                                    tokens([0, 65535, 1234, 42] * 20), tokens([7, 8, 9, 65535])),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
