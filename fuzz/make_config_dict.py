#!/usr/bin/env python3
"""Writes fuzz/fuzz_config.dict, the libFuzzer dictionary of fuzz_config:
TOML syntax, every [section] and key declared in visit_fields()
(src/config/config.cpp), the short words the file compares values with (enum
values, units) and integers at the edges of int64 (so the fuzzer tries
overflowing values). Re-run when fields are added:
    python3 fuzz/make_config_dict.py > fuzz/fuzz_config.dict
"""
import os
import re

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
src = open(os.path.join(root, "src", "config", "config.cpp"), encoding="utf-8").read()
net = open(os.path.join(root, "src", "net", "parse.cpp"), encoding="utf-8").read()

keys = re.findall(r'field\("([a-z_]+)\.([a-z0-9_]+)"', src)
sections = sorted({s for s, _ in keys}) + ["sweep"]
words = sorted({w for w in re.findall(r'"([A-Za-z0-9_./-]{1,24})"', src + net)
                if not re.fullmatch(r"[a-z_]+\.[a-z0-9_]+", w)})
syntax = ["[", "]", "[[", "]]", "=", " = ", '"', "'", '"""', "'''", "\n", "#", ",", "{", "}", ".",
          "true", "false", "inf", "-inf", "nan", "+nan", "0x", "0o", "0b", "1e", "_", "\\u", "\\U",
          "1979-05-27T07:32:00Z", "07:32:00", "1979-05-27"]
numbers = ["9223372036854775807", "-9223372036854775808", "4294967296", "2147483648", "65536",
           "1e308", "-1", "0", "1e-320"]


def entry(s):
    out = ""
    for b in s.encode("utf-8"):
        c = chr(b)
        out += c if 32 <= b < 127 and c not in '"\\' else "\\x%02X" % b
    return '"' + out + '"'


lines = ["# libFuzzer dictionary for fuzz_config, written by fuzz/make_config_dict.py",
         "# from src/config/config.cpp and src/net/parse.cpp; do not edit."]
seen = set()
for s in syntax + ["[%s]" % s for s in sections] + [k for _, k in keys] + words + numbers:
    if s not in seen:
        seen.add(s)
        lines.append(entry(s))
print("\n".join(lines))
