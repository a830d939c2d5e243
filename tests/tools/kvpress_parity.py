#!/usr/bin/env python3
"""kvpress parity: KV Lens's kept positions against NVIDIA kvpress's own press code.

A developer instrument, not a CI test (see kvpress_parity.md). It

1. unpacks kvpress (../shared/tools/third_party/kvpress-8bb29b9.tar.gz) into a temp dir and
   imports the press modules one by one (never kvpress/__init__.py), with a stub `transformers`
   in sys.modules that holds the few names they import (repeat_kv and rotate_half for real);
2. runs a small seeded Llama-like model (pure torch, fp32) on random token ids and keeps per
   layer the hidden states entering attention (after the input RMSNorm), the keys after RoPE,
   the values and the last W queries after RoPE; writes them as kvref-inputs-v1 files;
3. per method, ratio r and model (GQA and MHA) runs `kvlens select --inputs ... --json` with
   --budget int(T * (1 - r)) (kvpress's n_kept) and the same window, kernel and pooling as the
   kvpress press, which runs on the same tensors through a fake attention module (the model's
   real q_proj, its config, the RoPE cos/sin in kwargs["position_embeddings"]), so kvpress
   recomputes the same window queries;
4. compares per layer and KV head: identical, differing only at exact ties of kvpress's own
   scores at its cut, differing only at near-ties (|score - cut| <= 1e-5 x the row's largest
   |score|: fp32 rounding of two implementations), or really different; prints the first
   differing head of each really different case and one table.

Exit status: 0 when it ran (whatever the table says), 2 when it could not run.
"""

import argparse
import importlib
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import types
from pathlib import Path

try:
    import torch
    import torch.nn as nn
except ImportError:  # pragma: no cover
    # A pyenv or venv python without torch: Debian's python3-torch lives with /usr/bin/python3.
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    sys.exit("kvpress_parity: needs PyTorch (Debian 12: apt-get install -y python3-torch python3-numpy)")

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parents[1]
DEFAULT_TARBALL = PROJECT.parent / "shared" / "tools" / "third_party" / "kvpress-8bb29b9.tar.gz"
DEFAULT_KVLENS = PROJECT / "build" / "app" / "kvlens"

PRESS_MODULES = [
    "snapkv_press", "pyramidkv_press", "streaming_llm_press", "knorm_press", "keydiff_press",
    "tova_press", "lagkv_press", "cur_press", "chunkkv_press", "adakv_press",
    "expected_attention_press", "criticalkv_press",
]

# ---------------------------------------------------------------------------------------------
# 1. kvpress, imported press by press with a stub transformers


def _repeat_kv(hidden_states, n_rep):
    """transformers' repeat_kv: [b, kv, s, d] -> [b, kv * n_rep, s, d], query head h reads kv h // n_rep."""
    b, kv, s, d = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    return hidden_states[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


def _rotate_half(x):
    """transformers' rotate_half (Llama's RoPE layout: the two halves of the head dim)."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


class _StubModule(types.ModuleType):
    """A transformers (sub)module: every capitalised name it is asked for is a distinct empty
    class (so kvpress's isinstance(module, Phi3Attention) checks are False)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        cls = type(name, (), {"__module__": self.__name__})
        setattr(self, name, cls)
        return cls


def install_transformers_stub():
    names = [
        "transformers", "transformers.models", "transformers.models.llama",
        "transformers.models.llama.modeling_llama", "transformers.models.gemma3",
        "transformers.models.gemma3.modeling_gemma3", "transformers.models.phi3",
        "transformers.models.phi3.modeling_phi3", "transformers.models.qwen3",
        "transformers.models.qwen3.modeling_qwen3", "transformers.models.qwen2",
        "transformers.models.qwen2.modeling_qwen2", "transformers.cache_utils", "transformers.modeling_utils",
    ]
    for name in names:
        module = _StubModule(name)
        module.__path__ = []  # a package, so the dotted imports below it resolve to sys.modules
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
    llama = sys.modules["transformers.models.llama.modeling_llama"]
    llama.repeat_kv, llama.rotate_half, llama.apply_rotary_pos_emb = _repeat_kv, _rotate_half, _apply_rotary_pos_emb


def load_kvpress(tarball, into):
    """Unpacks kvpress under `into` and imports its press modules one by one. Returns
    ({module name: module}, {module name: error})."""
    with tarfile.open(tarball) as tar:
        tar.extractall(into)
    roots = [p.parent for p in Path(into).rglob("presses") if (p / "scorer_press.py").is_file()]
    if not roots:
        raise SystemExit(f"kvpress_parity: no kvpress/presses/scorer_press.py in {tarball}")
    pkg_dir = roots[0]  # .../kvpress (the package folder)
    install_transformers_stub()
    # The kvpress package and its presses subpackage as bare namespaces: kvpress/__init__.py
    # (which imports every press, the pipeline and transformers' model classes) never runs.
    for name, path in (("kvpress", pkg_dir), ("kvpress.presses", pkg_dir / "presses")):
        module = types.ModuleType(name)
        module.__path__ = [str(path)]
        sys.modules[name] = module
    sys.modules["kvpress"].presses = sys.modules["kvpress.presses"]
    loaded, failed = {}, {}
    for name in PRESS_MODULES:
        try:
            loaded[name] = importlib.import_module("kvpress.presses." + name)
        except Exception as e:  # noqa: BLE001 - report and go on
            failed[name] = f"{type(e).__name__}: {e}"
    return loaded, failed


# ---------------------------------------------------------------------------------------------
# 2. A small seeded Llama-like model


class TinyLlama:
    def __init__(self, layers, hidden, heads, kv_heads, head_dim, vocab, seed, theta=10000.0):
        g = torch.Generator().manual_seed(seed)
        self.L, self.hidden, self.H, self.KV, self.D, self.theta = layers, hidden, heads, kv_heads, head_dim, theta
        self.eps = 1e-6

        def linear(n_in, n_out, std):
            lin = nn.Linear(n_in, n_out, bias=False).requires_grad_(False)
            with torch.no_grad():
                lin.weight.copy_(torch.randn(n_out, n_in, generator=g) * std)
            return lin

        s = 1.0 / math.sqrt(hidden)
        self.embed = torch.randn(vocab, hidden, generator=g)
        self.layers = []
        for _ in range(layers):
            self.layers.append({
                "in_norm": 1.0 + 0.1 * torch.randn(hidden, generator=g),
                "post_norm": 1.0 + 0.1 * torch.randn(hidden, generator=g),
                # q and k a little larger than 1/sqrt(hidden): peaked attention, few near-ties
                "q_proj": linear(hidden, heads * head_dim, 2.0 * s),
                "k_proj": linear(hidden, kv_heads * head_dim, 2.0 * s),
                "v_proj": linear(hidden, kv_heads * head_dim, s),
                "o_proj": linear(heads * head_dim, hidden, s),
                "gate": linear(hidden, 2 * hidden, s),
                "up": linear(hidden, 2 * hidden, s),
                "down": linear(2 * hidden, hidden, s / math.sqrt(2)),
            })

    def rms_norm(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def rope(self, T):
        """transformers' Llama rotary embedding: cos, sin of shape [1, T, D]."""
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, self.D, 2, dtype=torch.float32) / self.D))
        freqs = torch.outer(torch.arange(T, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[None], emb.sin()[None]

    @torch.no_grad()
    def forward(self, ids):
        """Returns per layer {hidden [1,T,hidden] (after the input RMSNorm), keys, values [1,KV,T,D]
        (keys after RoPE)}, and the RoPE (cos, sin)."""
        T = ids.numel()
        cos, sin = self.rope(T)
        h = self.embed[ids][None]  # [1, T, hidden]
        out = []
        mask = torch.full((T, T), float("-inf")).triu(1)
        for w in self.layers:
            x = self.rms_norm(h, w["in_norm"])
            q = w["q_proj"](x).view(1, T, self.H, self.D).transpose(1, 2)
            k = w["k_proj"](x).view(1, T, self.KV, self.D).transpose(1, 2)
            v = w["v_proj"](x).view(1, T, self.KV, self.D).transpose(1, 2)
            q, k = _apply_rotary_pos_emb(q, k, cos, sin)
            kr, vr = _repeat_kv(k, self.H // self.KV), _repeat_kv(v, self.H // self.KV)
            a = torch.softmax(q @ kr.transpose(2, 3) / math.sqrt(self.D) + mask, dim=-1)
            o = (a @ vr).transpose(1, 2).reshape(1, T, self.H * self.D)
            h = h + w["o_proj"](o)
            y = self.rms_norm(h, w["post_norm"])
            h = h + w["down"](torch.nn.functional.silu(w["gate"](y)) * w["up"](y))
            out.append({"hidden": x, "keys": k.contiguous(), "values": v.contiguous()})
        return out, (cos, sin)

    def window_queries(self, layer, hidden, cos_sin, W):
        """The last W queries after RoPE [1, H, W, D], computed as kvpress's
        SnapKVPress.compute_window_attention does (q_proj of the last W hidden states)."""
        with torch.no_grad():
            q = self.layers[layer]["q_proj"](hidden[:, -W:]).view(1, W, self.H, self.D).transpose(1, 2)
            cos, sin = cos_sin
            cos, sin = cos[:, -W:], sin[:, -W:]
            return q * cos.unsqueeze(1) + _rotate_half(q) * sin.unsqueeze(1)


def read_gguf_f32(path):
    """The metadata and F32 tensors of a GGUF file (v2/v3), as {key: value} and {name: tensor in
    transformers' [out, in] layout}. Enough for the project's testbed (F32 throughout)."""
    import struct
    data = Path(path).read_bytes()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        v = data[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return v

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t in scalar:
            return take(scalar[t])
        if t == 8:
            return string()
        if t == 9:
            inner, n = take("I"), take("Q")
            return [value(inner) for _ in range(n)]
        raise ValueError(f"{path}: GGUF value type {t} unknown")

    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    pos = 4
    version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version}")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        infos.append((name, dims, take("I"), take("Q")))
    align = int(meta.get("general.alignment", 32))
    start = (pos + align - 1) // align * align
    tensors = {}
    for name, dims, ggml_type, offset in infos:
        if ggml_type != 0:
            raise ValueError(f"{path}: tensor {name} is ggml type {ggml_type}, not F32")
        n = math.prod(dims)
        flat = torch.frombuffer(bytearray(data[start + offset:start + offset + 4 * n]), dtype=torch.float32)
        tensors[name] = flat.reshape(list(reversed(dims)))  # GGUF's ne0 is the fastest axis
    return meta, tensors


def testbed_model(path):
    """The project's trained testbed (a GGUF Llama, F32) as a TinyLlama: llama.cpp's rotary
    layout (adjacent pairs) is transformers' (halves) with q and k's rows permuted back."""
    meta, t = read_gguf_f32(path)
    arch = meta["general.architecture"]
    if arch != "llama":
        raise ValueError(f"{path}: architecture {arch}, this tool reads llama")
    g = lambda k: meta[f"{arch}.{k}"]
    L, hidden, H, KV = g("block_count"), g("embedding_length"), g("attention.head_count"), g("attention.head_count_kv")
    D = hidden // H
    m = TinyLlama.__new__(TinyLlama)
    m.L, m.hidden, m.H, m.KV, m.D = L, hidden, H, KV, D
    m.theta = float(meta.get(f"{arch}.rope.freq_base", 10000.0))
    m.eps = float(meta.get(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6))

    def unpermute(w, heads):  # inverse of convert_hf_to_gguf's permute
        return w.reshape(heads, w.shape[0] // heads // 2, 2, w.shape[1]).transpose(1, 2).reshape(w.shape)

    def linear(w):
        lin = nn.Linear(w.shape[1], w.shape[0], bias=False).requires_grad_(False)
        with torch.no_grad():
            lin.weight.copy_(w)
        return lin

    m.embed = t["token_embd.weight"]
    m.layers = []
    for l in range(L):
        b = lambda n: t[f"blk.{l}.{n}.weight"]
        m.layers.append({
            "in_norm": b("attn_norm"), "post_norm": b("ffn_norm"),
            "q_proj": linear(unpermute(b("attn_q"), H)), "k_proj": linear(unpermute(b("attn_k"), KV)),
            "v_proj": linear(b("attn_v")), "o_proj": linear(b("attn_output")),
            "gate": linear(b("ffn_gate")), "up": linear(b("ffn_up")), "down": linear(b("ffn_down")),
        })
    return m


def testbed_ids(kvlens, model_path, prompt_path):
    p = subprocess.run([kvlens, "tokenize", "--model", str(model_path), "--prompt-file", str(prompt_path), "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"kvlens tokenize: {p.stderr.strip()}")
    return torch.tensor(json.loads(p.stdout)["token_ids"])


class FakeConfig(types.SimpleNamespace):
    pass


class FakeAttention(nn.Module):
    """What kvpress's presses read from a transformers attention layer."""

    def __init__(self, model, layer_idx):
        super().__init__()
        w = model.layers[layer_idx]
        self.config = FakeConfig(num_attention_heads=model.H, num_key_value_heads=model.KV,
                                 num_hidden_layers=model.L, head_dim=model.D, hidden_size=model.hidden,
                                 _attn_implementation="sdpa", rope_theta=model.theta)
        self.layer_idx, self.head_dim = layer_idx, model.D
        self.num_key_value_groups = model.H // model.KV
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = w["q_proj"], w["k_proj"], w["v_proj"], w["o_proj"]
        self._model = model

    def rotary_emb(self, x, position_ids):  # Expected Attention's future positions
        inv_freq = 1.0 / (self._model.theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        freqs = position_ids[..., None].float() * inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def write_inputs(model, captured, cos_sin, W, folder, tag):
    paths = []
    for l, c in enumerate(captured):
        q = model.window_queries(l, c["hidden"], cos_sin, W)[0]
        T = c["keys"].shape[2]
        doc = {
            "schema": "kvref-inputs-v1", "shape_tag": tag, "layer": l, "n_q_heads": model.H,
            "n_kv_heads": model.KV, "head_dim": model.D, "seq_len": T, "window": W,
            "q_window_positions": [T - W, T - 1],
            # fp32 values as Python floats: json writes the shortest text that reads back to
            # the same double, which KV Lens turns back into the same fp32.
            "q_window": q.tolist(), "keys": c["keys"][0].tolist(), "values": c["values"][0].tolist(),
            # W_o [hidden, H x D]: CriticalKV's second stage ranks by ||W_o^(h) v||_1.
            "o_proj": model.layers[l]["o_proj"].weight.tolist(),
        }
        path = Path(folder) / f"inputs_{tag}_layer{l}.json"
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    return paths


# ---------------------------------------------------------------------------------------------
# 3. The methods on both sides


class Case:
    """One method: how kvpress builds its press, how KV Lens is asked, how to compare."""

    def __init__(self, name, kvlens_args, make_press, kind="scorer"):
        self.name, self.kvlens_args, self.make_press, self.kind = name, kvlens_args, make_press, kind


def build_cases(kv, W, K, lag, chunk, alpha, beta, convention="paper"):
    snap = kv["snapkv_press"].SnapKVPress
    pyr = kv["pyramidkv_press"].PyramidKVPress
    win = ["--window", str(W), "--kernel", str(K), "--pool", "avg", "--gqa", "kv-head"]
    scorers = {
        "snapkv": (lambda r: snap(compression_ratio=r, window_size=W, kernel_size=K), win),
        "knorm": (lambda r: kv["knorm_press"].KnormPress(compression_ratio=r), []),
        "keydiff": (lambda r: kv["keydiff_press"].KeyDiffPress(compression_ratio=r), []),
        "tova": (lambda r: kv["tova_press"].TOVAPress(compression_ratio=r), []),
        "cur": (lambda r: kv["cur_press"].CURPress(compression_ratio=r, num_sinks=4), ["--sinks", "4"]),
        "lagkv": (lambda r: kv["lagkv_press"].LagKVPress(compression_ratio=r, n_sink=4, lag_size=lag),
                  ["--sinks", "4", "--lag", str(lag)]),
    }
    cases = [Case("snapkv", ["--method", "snapkv"] + win, scorers["snapkv"][0])]
    # Under --convention kvpress the schedule is kvpress's own (--schedule is not read).
    for schedule in (("exact", "factory") if convention == "paper" else ("kvpress",)):
        cases.append(Case(f"pyramidkv/{schedule}",
                          ["--method", "pyramidkv", "--beta", str(beta)] + win +
                          (["--schedule", schedule] if convention == "paper" else []),
                          lambda r: pyr(compression_ratio=r, window_size=W, kernel_size=K, beta=beta), "pyramid"))
    cases.append(Case("streamingllm", ["--method", "streamingllm", "--sinks", "4"],
                      lambda r: kv["streaming_llm_press"].StreamingLLMPress(compression_ratio=r, n_sink=4)))
    for name in ("knorm", "keydiff", "tova", "lagkv", "cur"):
        cases.append(Case(name, ["--method", name] + scorers[name][1], scorers[name][0]))
    ada = kv["adakv_press"].AdaKVPress
    for s in ("snapkv", "knorm", "keydiff", "tova", "cur", "lagkv"):
        cases.append(Case(f"adakv/{s}", ["--method", "adakv", "--scorer", s, "--alpha", str(alpha)] + scorers[s][1],
                          (lambda make: lambda r: ada(press=make(r), alpha_safeguard=alpha))(scorers[s][0]), "adakv"))
    chunkkv = kv["chunkkv_press"].ChunkKVPress
    for s in ("snapkv", "knorm", "keydiff", "tova", "cur", "lagkv"):
        cases.append(Case(f"chunkkv-kvpress/{s}",
                          ["--method", "chunkkv-kvpress", "--scorer", s, "--chunk", str(chunk)] + scorers[s][1],
                          (lambda make: lambda r: chunkkv(press=make(r), chunk_length=chunk))(scorers[s][0]), "chunk"))
    crit = kv["criticalkv_press"]
    for s in ("snapkv", "knorm", "keydiff", "tova", "cur", "lagkv"):
        cases.append(Case(f"criticalkv/{s}", ["--method", "criticalkv", "--scorer", s] + scorers[s][1],
                          (lambda make: lambda r: crit.CriticalKVPress(press=make(r)))(scorers[s][0])))
        cases.append(Case(f"criticaladakv/{s}",
                          ["--method", "criticaladakv", "--scorer", s, "--alpha", str(alpha)] + scorers[s][1],
                          (lambda make: lambda r: crit.CriticalAdaKVPress(press=make(r), alpha_safeguard=alpha))(
                              scorers[s][0]), "criticaladakv"))
    # Under the paper's convention KV Lens ranks LagKV's chunks by its raw scores / 2, kvpress's
    # cross_scoring=True form (the default, False, ranks within each partition): that form too.
    if convention != "paper":
        return cases
    lag_cross = lambda r: kv["lagkv_press"].LagKVPress(compression_ratio=r, n_sink=4, lag_size=lag, cross_scoring=True)
    cases.append(Case("chunkkv-kvpress/lagkv-cross",
                      ["--method", "chunkkv-kvpress", "--scorer", "lagkv", "--chunk", str(chunk)] + scorers["lagkv"][1],
                      lambda r: chunkkv(press=lag_cross(r), chunk_length=chunk), "chunk"))
    return cases


NOT_CHECKED = [
    ("expected", "ExpectedAttentionPress", "needs a model (pre-RoPE queries of the whole prompt)"),
    ("h2o", "ObservedAttentionPress", "needs a model (every query's attention)"),
    ("random", "RandomPress", "not comparable: different RNGs"),
]


def masked_kept(module, KV, T):
    """The kept positions per KV head of a press that keeps the keys and masks the pruned
    (head, position) pairs (AdaKV, CriticalAdaKV: module.masked_key_indices), which it clears."""
    _, heads, seqs = module.masked_key_indices
    del module.masked_key_indices
    pruned = [set() for _ in range(KV)]
    for h, t in zip(heads.tolist(), seqs.tolist()):
        pruned[h].add(t)
    return [sorted(set(range(T)) - pruned[h]) for h in range(KV)]


def kvpress_run(case, ratio, module, hidden, keys, values, kwargs):
    """kvpress's own press on one layer: kept positions per KV head (from its compress), the
    scores it ranked and what to compare at the cut."""
    press = case.make_press(ratio)
    T = keys.shape[2]
    with torch.no_grad():
        out_keys, _ = press.compress(module, hidden, keys.clone(), values.clone(), None, kwargs)
        KV = keys.shape[1]
        info = {}
        if case.kind == "criticaladakv":
            # Its final scores are what its last topk (the bottom-k across heads) ranked: read
            # them from that call, kvpress's code unchanged.
            seen = []
            topk = torch.topk

            def recording(x, *a, **k):
                seen.append(x)
                return topk(x, *a, **k)
            torch.topk = recording
            try:
                press = case.make_press(ratio)
                press.compress(module, hidden, keys.clone(), values.clone(), None, kwargs)
            finally:
                torch.topk = topk
            kept = masked_kept(module, KV, T)
            ranked = (-seen[-1]).view(KV, T)
            info["global"] = True
            # Its scorer's scores and the cuts of its safeguard and first stage, per head.
            info["inner"] = press.press.score(module, hidden, keys, values, None, kwargs)[0]
            n_kept = int(T * (1 - ratio))
            info["stage1"] = [[int(n_kept * press.alpha_safeguard), int(len(kept[h]) * press.first_stage_ratio)]
                              for h in range(KV)]
            norms = kv_critical(press).vwl1norm(values, module)[0]
            info["second"] = (info["inner"] + press.epsilon) * norms
        elif case.kind == "adakv":
            # kvpress keeps the keys and masks the pruned (head, position) pairs.
            kept = masked_kept(module, KV, T)
            # The scores its global bottom-k ranked (the safeguard's top n_safe set to the max).
            scores = press.press.score(module, hidden, keys, values, None, kwargs)[0]
            n_kept = int(T * (1 - ratio))
            n_safe = int(n_kept * press.alpha_safeguard)
            top = torch.topk(scores, n_safe, dim=-1).indices
            ranked = scores.clone().scatter(-1, top, torch.finfo(scores.dtype).max)
            info["safe_cut"] = [float(scores[h][top[h]].min()) if n_safe else None for h in range(KV)]
            info["global"] = True
            info["raw"] = scores
        else:
            # The kept rows of compress's output, found back among the input keys (distinct rows).
            kept = []
            for h in range(KV):
                index = {tuple(row): t for t, row in enumerate(keys[0, h].tolist())}
                if len(index) != T:
                    raise RuntimeError("equal key rows: cannot map kvpress's output back to positions")
                kept.append(sorted(index[tuple(row)] for row in out_keys[0, h].tolist()))
            if case.kind == "chunk":
                inner = press.press.score(module, hidden, keys, values, None, kwargs)  # [1, KV, T]
                C = press.chunk_length
                total = inner.sum(dim=1)[0]  # over heads, as ChunkKVPress does
                chunk_scores = [float(total[i:i + C].mean()) for i in range(0, T, C)]
                ranked = torch.tensor([chunk_scores[t // C] for t in range(T)]).expand(KV, T)
            else:
                ranked = press.score(module, hidden, keys, values, None, kwargs)[0]  # [KV, T]
                if hasattr(press, "first_stage_ratio"):  # CriticalKV: its scorer's scores, its first stage's size
                    info["inner"] = press.press.score(module, hidden, keys, values, None, kwargs)[0]
                    info["stage1"] = [[int((1 - ratio) * T * press.first_stage_ratio)]] * KV
                    info["second"] = (info["inner"] + press.epsilon) * press.vwl1norm(values, module)[0]
            if case.kind == "pyramid":
                info["budget"] = press.get_layer_budget(module, T)
        return kept, ranked, info


def kv_critical(press):
    """kvpress's CriticalKVPress class (its vwl1norm), from the module the press came from."""
    return sys.modules[type(press).__module__].CriticalKVPress


class stable_topk:
    """Within the block, torch.topk (and Tensor.topk) order equal values by index, lower first,
    as KV Lens breaks ties: kvpress's own code then runs with that tie order. A head whose sets
    differ from kvpress's plain run but equal this one differs only in how torch orders ties
    (CriticalKV's first stage over padded scores, AdaKV's budgets over tied heads)."""

    def __enter__(self):
        self.saved = torch.topk, torch.Tensor.topk

        def topk(x, k, dim=-1, largest=True, sorted=True):
            values, indices = torch.sort(x, dim=dim, descending=largest, stable=True)
            return torch.return_types.topk((values.narrow(dim, 0, k), indices.narrow(dim, 0, k)))
        torch.topk = topk
        torch.Tensor.topk = topk
        return self

    def __exit__(self, *exc):
        torch.topk, torch.Tensor.topk = self.saved
        return False


def run_kvlens(binary, paths, args, budget, ratio=None):
    """KV Lens on the same tensors: --budget n_kept (the paper's convention), or with `ratio`
    --compression-ratio r --convention kvpress."""
    how = ["--budget", str(budget)] if ratio is None else ["--compression-ratio", repr(ratio), "--convention", "kvpress"]
    cmd = [binary, "select", "--inputs", *paths, *args, *how, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip() or p.stdout.strip()).splitlines()[-1:] or ["exit %d" % p.returncode]
    return json.loads(p.stdout), None


# ---------------------------------------------------------------------------------------------
# 4. The comparison


def classify(kp, kl, ranked_row, cut, near_tol, global_cut=False):
    """identical / tie / near / diff for one head: kp, kl kept sets; ranked_row kvpress's scores
    (what it ranked), cut its lowest kept score."""
    if kp == kl:
        return "identical"
    if len(kp) != len(kl) and not global_cut:  # a layer-wide cut (AdaKV) moves lengths between heads
        return "diff"
    sym = kp ^ kl
    vals = [float(ranked_row[t]) for t in sym]
    if all(v == cut for v in vals):
        return "tie"
    if all(abs(v - cut) <= near_tol for v in vals):
        return "near"
    return "diff"


def describe_diff(case, model_tag, ratio, layer, head, kp, kl, ranked_row, cut, extra):
    only_p, only_l = sorted(kp - kl), sorted(kl - kp)
    fmt = lambda ts: ", ".join(f"{t}:{float(ranked_row[t]):.6g}" for t in ts[:8]) + (" ..." if len(ts) > 8 else "")
    lines = [f"[{case.name} {model_tag} r={ratio}] first different: layer {layer} KV head {head}: "
             f"kvpress keeps {len(kp)}, KV Lens {len(kl)}; kvpress cut score {cut:.6g}{extra}",
             f"    only kvpress ({len(only_p)}), position:kvpress score: {fmt(only_p)}",
             f"    only KV Lens ({len(only_l)}), position:kvpress score: {fmt(only_l)}"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kvlens", default=str(DEFAULT_KVLENS), help="the kvlens binary (default: build/app/kvlens)")
    ap.add_argument("--tarball", default=str(DEFAULT_TARBALL), help="kvpress source tarball")
    ap.add_argument("--ratios", default="0.25,0.5,0.875", help="kvpress compression ratios")
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--kernel", type=int, default=5)
    ap.add_argument("--lag", type=int, default=16, help="LagKV partition (kvpress lag_size, KV Lens --lag)")
    ap.add_argument("--chunk", type=int, default=20, help="ChunkKV chunk (kvpress chunk_length, KV Lens --chunk)")
    ap.add_argument("--alpha", type=float, default=0.2)
    ap.add_argument("--beta", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--methods", default="", help="comma-separated case names to run (default: all)")
    ap.add_argument("--kvpress-only", action="store_true", help="run the kvpress side alone (no kvlens binary)")
    ap.add_argument("--keep", metavar="DIR", help="keep the kvref-inputs-v1 files in DIR")
    ap.add_argument("--convention", choices=("paper", "kvpress"), default="paper",
                    help="paper: KV Lens's default form at --budget int(T(1 - r)); kvpress: "
                         "--compression-ratio r --convention kvpress (expected: identical up to ties)")
    ap.add_argument("--testbed", default=str(PROJECT / "models" / "kvlens-testbed.gguf"),
                    help="a third model, the project's trained testbed GGUF (F32 Llama; 'none' to leave out)")
    ap.add_argument("--testbed-prompt", default=str(PROJECT / "docs" / "testbed" / "demo-prompt.txt"),
                    help="its prompt, tokenized by kvlens tokenize")
    args = ap.parse_args()

    ratios = [float(r) for r in args.ratios.split(",")]
    tmp = tempfile.mkdtemp(prefix="kvpress_parity_")
    try:
        kv, failed = load_kvpress(args.tarball, tmp)
        for name, err in failed.items():
            print(f"kvpress import failed: {name}: {err}")
        if not args.kvpress_only and not os.access(args.kvlens, os.X_OK):
            print(f"kvlens binary not found at {args.kvlens}: running the kvpress side alone")
            args.kvpress_only = True
        cases = build_cases(kv, args.window, args.kernel, args.lag, args.chunk, args.alpha, args.beta,
                            args.convention)
        if args.methods:
            want = set(args.methods.split(","))
            cases = [c for c in cases if c.name in want or c.name.split("/")[0] in want]
        folder = args.keep or tmp
        os.makedirs(folder, exist_ok=True)
        # GQA (8 query heads over 2 KV heads) and MHA, two prompt lengths in 200..400.
        def random_model(shape, T):
            return lambda: (TinyLlama(vocab=1000, seed=args.seed + T, **shape),
                            torch.randint(0, 1000, (T,), generator=torch.Generator().manual_seed(args.seed)))

        models = [("gqa", random_model(dict(layers=4, hidden=64, heads=8, kv_heads=2, head_dim=8), 400)),
                  ("mha", random_model(dict(layers=4, hidden=64, heads=8, kv_heads=8, head_dim=8), 333))]
        if args.testbed != "none" and Path(args.testbed).is_file():
            if args.kvpress_only:
                print("--kvpress-only: the testbed needs kvlens tokenize, left out")
            else:
                models.append(("testbed", lambda: (testbed_model(args.testbed),
                                               testbed_ids(args.kvlens, args.testbed, args.testbed_prompt))))
        elif args.testbed != "none":
            print(f"no testbed at {args.testbed}: the two random models only")
        rows, details = [], []
        for tag, make in models:
            model, ids = make()
            T = ids.numel()
            captured, cos_sin = model.forward(ids)
            paths = write_inputs(model, captured, cos_sin, args.window, folder, f"{tag}_T{T}")
            modules = [FakeAttention(model, l) for l in range(model.L)]
            kwargs = {"position_embeddings": cos_sin, "cache_position": torch.arange(T), "attention_mask": None}
            for case in cases:
                for r in ratios:
                    budget = int(T * (1 - r))  # kvpress's n_kept
                    counts = {"identical": 0, "tie": 0, "near": 0, "diff": 0}
                    note, first = "", None
                    kl_json, err = (None, None) if args.kvpress_only else \
                        run_kvlens(args.kvlens, paths, case.kvlens_args, budget,
                                   r if args.convention == "kvpress" else None)
                    if err:
                        rows.append((case.name, tag, r, None, "kvlens refused: " + err[0][:90]))
                        continue
                    pyr_budgets = []
                    for l, c in enumerate(captured):
                        kept_p, ranked, info = kvpress_run(case, r, modules[l], c["hidden"], c["keys"], c["values"], kwargs)
                        stable = None  # kvpress's kept sets with ties ordered by index, when needed
                        if "budget" in info:
                            pyr_budgets.append(info["budget"])
                        if kl_json is None:
                            continue
                        kept_l = kl_json["layers"][l]["heads"]
                        if len(kept_l) != len(kept_p):
                            raise SystemExit(f"{case.name}: KV Lens gave {len(kept_l)} heads, kvpress {len(kept_p)}")
                        layer_cut = None
                        if info.get("global"):
                            layer_cut = min(float(ranked[h][t]) for h in range(len(kept_p)) for t in kept_p[h])
                        for h in range(len(kept_p)):
                            kp, klset = set(kept_p[h]), set(kept_l[h])
                            row = ranked[h]
                            cut = layer_cut if layer_cut is not None else min(float(row[t]) for t in kp)
                            finite = [abs(float(v)) for v in row if math.isfinite(float(v)) and abs(float(v)) < 1e30]
                            tol = 1e-5 * (max(finite) if finite else 1.0)
                            verdict = classify(kp, klset, row, cut, tol, layer_cut is not None)
                            if verdict == "diff" and info.get("safe_cut"):
                                # AdaKV: a tie at the safeguard's own cut (its top n_safe per head)
                                # moves a position in or out too.
                                sc, raw = info["safe_cut"][h], info["raw"][h]
                                if all(float(row[t]) == cut or float(raw[t]) == sc for t in kp ^ klset):
                                    verdict = "tie"
                            if verdict == "diff":
                                if stable is None:
                                    with stable_topk():
                                        stable = kvpress_run(case, r, modules[l], c["hidden"], c["keys"], c["values"],
                                                             kwargs)[0]
                                if set(stable[h]) == klset:
                                    verdict = "tie"
                            if verdict == "diff" and "inner" in info:
                                # CriticalKV: its first stage (and safeguard) rank the scorer's
                                # scores: positions at those cuts within fp32 rounding are near-ties
                                # too, and so are the second-stage positions they make room for.
                                inner = info["inner"][h]
                                order = sorted((float(v) for v in inner), reverse=True)
                                big = max(abs(v) for v in order if math.isfinite(v) and abs(v) < 1e30)
                                cuts = [order[k - 1] for k in info["stage1"][h] if 0 < k <= len(order)]
                                near1 = lambda t: any(abs(float(inner[t]) - x) <= 1e-5 * big for x in cuts)
                                # The rest: pairs across the two sides whose second-stage scores
                                # ((score + 1e-4) x norm, before any stage set them to the maximum)
                                # are equal within fp32 rounding.
                                second = info["second"][h]
                                tol2 = 1e-5 * max(abs(float(v)) for v in second)
                                moved = [t for t in kp ^ klset if not near1(t)]
                                if all(abs(float(second[t]) - float(second[u])) <= tol2
                                       for t in moved for u in moved if (t in kp) != (u in kp)):
                                    verdict = "near"
                            counts[verdict] += 1
                            if verdict == "diff" and first is None:
                                extra = ""
                                if case.kind == "pyramid":
                                    extra = (f"; layer budgets kvpress {pyr_budgets_all(case, r, modules, T)} "
                                             f"KV Lens {kl_json.get('layer_budgets')}")
                                first = describe_diff(case, tag, r, l, h, kp, klset, row, cut, extra)
                    if kl_json is None:
                        note = "kvpress side ran" + (f" (layer budgets {pyr_budgets})" if pyr_budgets else "")
                    if first:
                        details.append(first)
                    rows.append((case.name, tag, r, counts, note))

        for name, press, why in NOT_CHECKED:
            rows.append((name, "-", None, None, f"not checked: {why} ({press})"))
        for name, err in failed.items():
            rows.append((name, "-", None, None, "kvpress import failed"))
        for d in details:
            print(d)
        print()
        print(f"{'method':<27} {'model':<7} {'ratio':>5}  {'identical':>9} {'tie-only':>8} {'near-tie':>8} {'different':>9}  note")
        for name, tag, r, counts, note in rows:
            if counts is None or sum(counts.values()) == 0:
                print(f"{name:<27} {tag:<7} {'' if r is None else r:>5}  {'-':>9} {'-':>8} {'-':>8} {'-':>9}  {note}")
            else:
                print(f"{name:<27} {tag:<7} {r:>5}  {counts['identical']:>9} {counts['tie']:>8} {counts['near']:>8} "
                      f"{counts['diff']:>9}  {note}")
        print("\nheads = layers x KV heads per row; tie-only: the sets differ only at positions whose kvpress score"
              " equals its cut, or they equal\nkvpress's own run with torch.topk ordering equal scores by index"
              " (lower first, as KV Lens); near-tie: within 1e-5 of the\nrow's largest |score| of the cut (fp32"
              " rounding).")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def pyr_budgets_all(case, r, modules, T):
    press = case.make_press(r)
    return [press.get_layer_budget(m, T) for m in modules]


if __name__ == "__main__":
    sys.exit(main())
