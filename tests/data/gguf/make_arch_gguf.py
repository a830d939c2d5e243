#!/usr/bin/python3
"""A random-weight GGUF of an architecture make_random_gguf.py does not write, with the
vocabulary of a vocab-only or model GGUF copied in:
  phi3:   Phi-3's layout: fused attn_qkv, ffn_up holding [gate | up], partial rotary when
          --rope-dim is under the head dimension, attention.sliding_window;
  gemma2: Gemma 2's: separate q/k/v with --head-dim of its own, post_attention_norm and
          post_ffw_norm, GeGLU's ffn_gate/ffn_up, the output tied to token_embd, the window
          (on even layers, as llama.cpp builds it) and both soft-caps (--attn-cap,
          --final-cap). llama.cpp c392e50 runs gemma2 only at 26, 42 or 46 layers.
Used by make.sh; needs gguf-py from the llama.cpp snapshot (PYTHONPATH) and Debian's
python3-numpy.
Usage: make_arch_gguf.py OUT.gguf --vocab V.gguf [--arch phi3|gemma2 --layers 2 --dim 128
       --ff 320 --heads 4 --kv-heads 2 --head-dim D --rope-dim 24 --window 64 --ctx 256
       --attn-cap 50 --final-cap 30 --seed 21]"""
import argparse
import numpy as np
import gguf

ap = argparse.ArgumentParser()
ap.add_argument("out"); ap.add_argument("--vocab", required=True)
ap.add_argument("--layers", type=int, default=2); ap.add_argument("--dim", type=int, default=128)
ap.add_argument("--ff", type=int, default=320); ap.add_argument("--heads", type=int, default=4)
ap.add_argument("--kv-heads", type=int, default=2); ap.add_argument("--rope-dim", type=int, default=24)
ap.add_argument("--window", type=int, default=64); ap.add_argument("--ctx", type=int, default=256)
ap.add_argument("--seed", type=int, default=21)
ap.add_argument("--arch", default="phi3", choices=["phi3", "gemma2"])
ap.add_argument("--head-dim", type=int, default=0)
ap.add_argument("--attn-cap", type=float, default=50.0); ap.add_argument("--final-cap", type=float, default=30.0)
a = ap.parse_args()
hd = a.head_dim or a.dim // a.heads
rng = np.random.default_rng(a.seed)
src = gguf.GGUFReader(a.vocab)
w = gguf.GGUFWriter(a.out, a.arch)
w.add_name("random-p3" if a.arch == "phi3" else "random-g2")  # not "phi3": llama.cpp then looks up Phi-3's <|endoftext|>
w.add_context_length(a.ctx); w.add_embedding_length(a.dim); w.add_block_count(a.layers)
w.add_feed_forward_length(a.ff); w.add_head_count(a.heads); w.add_head_count_kv(a.kv_heads)
w.add_layer_norm_rms_eps(1e-5 if a.arch == "phi3" else 1e-6); w.add_rope_freq_base(10000.0)
if a.arch == "phi3":
    w.add_rope_dimension_count(a.rope_dim)
else:
    w.add_key_length(hd); w.add_value_length(hd)
    w.add_float32("gemma2.attn_logit_softcapping", a.attn_cap)
    w.add_float32("gemma2.final_logit_softcapping", a.final_cap)
w.add_uint32(a.arch + ".attention.sliding_window", a.window)
for name, f in src.fields.items():
    if not name.startswith("tokenizer."):
        continue
    kind = f.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        if f.types[1] == gguf.GGUFValueType.STRING:
            w.add_array(name, [bytes(f.parts[i]).decode("utf-8", errors="surrogateescape") for i in f.data])
        else:
            w.add_array(name, [f.parts[i].tolist()[0] for i in f.data])
    elif kind == gguf.GGUFValueType.STRING:
        w.add_string(name, bytes(f.parts[f.data[0]]).decode("utf-8"))
    else:
        v = f.parts[f.data[0]].tolist()[0]
        if kind == gguf.GGUFValueType.BOOL: w.add_bool(name, bool(v))
        elif kind == gguf.GGUFValueType.FLOAT32: w.add_float32(name, v)
        elif kind == gguf.GGUFValueType.INT32: w.add_int32(name, v)
        else: w.add_uint32(name, int(v))
vocab = len(src.fields["tokenizer.ggml.tokens"].data)

def matrix(name, rows, cols):
    w.add_tensor(name, (rng.standard_normal((rows, cols), dtype=np.float32) * cols ** -0.5).astype(np.float32))

def norm(name, n):
    w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32))

# Gemma scales its embeddings by sqrt(dim) on the way in and reads them as the output: small ones.
embd = rng.standard_normal((vocab, a.dim), dtype=np.float32)
w.add_tensor("token_embd.weight", embd if a.arch == "phi3" else (embd * a.dim ** -0.5).astype(np.float32))
for l in range(a.layers):
    p = f"blk.{l}."
    norm(p + "attn_norm.weight", a.dim)
    if a.arch == "phi3":
        matrix(p + "attn_qkv.weight", (a.heads + 2 * a.kv_heads) * hd, a.dim)
    else:
        matrix(p + "attn_q.weight", a.heads * hd, a.dim)
        matrix(p + "attn_k.weight", a.kv_heads * hd, a.dim)
        matrix(p + "attn_v.weight", a.kv_heads * hd, a.dim)
    matrix(p + "attn_output.weight", a.dim, a.heads * hd)
    if a.arch == "gemma2":
        norm(p + "post_attention_norm.weight", a.dim)
    norm(p + "ffn_norm.weight", a.dim)
    if a.arch == "phi3":
        matrix(p + "ffn_up.weight", 2 * a.ff, a.dim)
    else:
        matrix(p + "ffn_gate.weight", a.ff, a.dim)
        matrix(p + "ffn_up.weight", a.ff, a.dim)
    matrix(p + "ffn_down.weight", a.dim, a.ff)
    if a.arch == "gemma2":
        norm(p + "post_ffw_norm.weight", a.dim)
norm("output_norm.weight", a.dim)
if a.arch == "phi3":
    matrix("output.weight", vocab, a.dim)  # gemma2's output is token_embd
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print(a.out)
