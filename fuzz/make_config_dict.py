#!/usr/bin/env python3
"""Writes fuzz/fuzz_config.dict, the libFuzzer dictionary of fuzz_config:
TOML syntax, every [section] and key declared in visit_fields()
(src/config/fields.cpp), the short words validate() compares values with (enum
values, units: config/*.cpp, the strategy table and each method's rules, the
codec names, src/net/parse.cpp) and integers at the edges of int64 (so the fuzzer tries
overflowing values). Re-run when fields are added:
    python3 fuzz/make_config_dict.py > fuzz/fuzz_config.dict
"""
import os
import re

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
def read(*path):
    # Without #include lines: their paths are not words a config holds.
    text = open(os.path.join(root, "src", *path), encoding="utf-8").read()
    return "\n".join(l for l in text.splitlines() if not l.startswith("#include"))


src = read("config", "fields.cpp") + read("config", "sections.cpp") + read("config", "config.cpp")
# The words of the checks validate() gathers from the other areas: the
# strategy table and each method's rules, the codec names.
rules = read("strategy", "table.cpp") + read("compress", "codec_names.cpp") + "".join(
    read("strategy", f) for f in sorted(os.listdir(os.path.join(root, "src", "strategy")))
    if f.endswith("_config.cpp"))
net = read("net", "parse.cpp") + read("net", "validate_network.cpp") + read("net", "devices.cpp")

keys = re.findall(r'field\("([a-z_]+)\.([a-z0-9_]+)"', src)
sections = sorted({s for s, _ in keys}) + ["sweep"]
words = sorted({w for w in re.findall(r'"([A-Za-z0-9_./-]{1,24})"', src + rules + net)
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
         "# from src/config, src/strategy, src/compress and src/net/parse.cpp; do not edit."]
seen = set()
for s in syntax + ["[%s]" % s for s in sections] + [k for _, k in keys] + words + numbers:
    if s not in seen:
        seen.add(s)
        lines.append(entry(s))
print("\n".join(lines))
