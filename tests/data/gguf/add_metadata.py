#!/usr/bin/python3
# add_metadata.py IN.gguf OUT.gguf KEY=TYPE:VALUE...: a copy of IN with the keys set
# (TYPE: str, u32 or f32), for make.sh's YaRN file. Needs gguf-py on PYTHONPATH.
import sys
import types


class _Bar:  # gguf-py's copy reports progress through tqdm, which this needs not
    def __init__(self, *args, **kwargs): pass
    def update(self, *args): pass
    def close(self): pass


sys.modules.setdefault("tqdm", types.SimpleNamespace(tqdm=_Bar))
import gguf  # noqa: E402
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata  # noqa: E402

src, dst, *pairs = sys.argv[1:]
types = {"str": gguf.GGUFValueType.STRING, "u32": gguf.GGUFValueType.UINT32, "f32": gguf.GGUFValueType.FLOAT32}
casts = {"str": str, "u32": int, "f32": float}
new = {}
for p in pairs:
    key, typed = p.split("=", 1)
    t, value = typed.split(":", 1)
    new[key] = MetadataDetails(types[t], casts[t](value))
reader = gguf.GGUFReader(src, "r")
arch = reader.get_field(gguf.Keys.General.ARCHITECTURE)
writer = gguf.GGUFWriter(dst, arch=str(bytes(arch.parts[arch.data[0]]), "utf-8"))
copy_with_new_metadata(reader, writer, new, [])
