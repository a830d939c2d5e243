#!/usr/bin/python3
# trim_vocab.py IN.gguf OUT.gguf N SPECIAL...: a vocab-only GGUF holding the first N
# tokens of IN's byte-level BPE vocabulary, the merges among them (in IN's order: the
# ranks keep their order) and the named special tokens after them, with bos/eos/eot
# ids moved along, for make.sh's small BPE models (a 100K-token vocabulary would make
# each test file tens of MB). Needs gguf-py on PYTHONPATH.
import sys

import gguf

src, dst, n, *specials = sys.argv[1:]
n = int(n)
r = gguf.GGUFReader(src)


def strings(name):
    f = r.fields[name]
    return [bytes(f.parts[i]).decode("utf-8", errors="surrogateescape") for i in f.data]


def scalar(name):
    f = r.fields.get(name)
    return None if f is None else f.parts[f.data[0]].tolist()[0]


tokens = strings("tokenizer.ggml.tokens")
types = [r.fields["tokenizer.ggml.token_type"].parts[i].tolist()[0] for i in r.fields["tokenizer.ggml.token_type"].data]
keep = tokens[:n]
kept_types = types[:n]
moved = {}
for s in specials:
    old = tokens.index(s)
    moved[old] = len(keep)
    keep.append(s)
    kept_types.append(types[old])
present = set(keep)
merges = [m for m in strings("tokenizer.ggml.merges")
          if all(p in present for p in m.split(" ", 1)) and m.replace(" ", "", 1) in present]

arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
w = gguf.GGUFWriter(dst, arch)
w.add_string("tokenizer.ggml.model", "gpt2")
w.add_string("tokenizer.ggml.pre", bytes(r.fields["tokenizer.ggml.pre"].parts[-1]).decode())
w.add_array("tokenizer.ggml.tokens", keep)
w.add_array("tokenizer.ggml.token_type", kept_types)
w.add_array("tokenizer.ggml.merges", merges)
for key in ("bos", "eos", "eot", "unknown", "padding"):
    old = scalar(f"tokenizer.ggml.{key}_token_id")
    if old is not None and (old < n or old in moved):
        w.add_uint32(f"tokenizer.ggml.{key}_token_id", old if old < n else moved[old])
if "tokenizer.chat_template" in r.fields:
    w.add_string("tokenizer.chat_template", bytes(r.fields["tokenizer.chat_template"].parts[-1]).decode())
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_ti_data_to_file()
w.close()
print(f"{dst}: {len(keep)} tokens, {len(merges)} merges", file=sys.stderr)
