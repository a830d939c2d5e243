#!/usr/bin/env python3
"""NVIDIA kvpress on the GPU, for the side-by-side of scripts/gpu-check (a developer
instrument, not a CI test).

kvpress's own SnapKVPress (from the carried source, kvpress-8bb29b9.tar.gz) on the
machine's transformers LlamaForCausalLM with random weights of a KV Lens model's shape (as
`kvlens info --json` reports it, so the two run the same shape):
one compressed prefill of --prompt-len random tokens to --budget positions, then --decode
greedy steps on that cache, as kvpress's pipeline decodes (positions continue from the
prompt's length). Writes one JSON: prefill seconds, decode ms per token, the cache's
length after the press, torch.cuda.max_memory_allocated over both, the versions used;
or status "failed" with the step and the error, so that a transformers version kvpress
cannot run with says what broke. --preflight checks only that the source unpacks and
what imports.

  python3 tests/tools/kvpress_gpu_side_by_side.py --kvpress-tar T --kvlens BIN --out kvpress.json \
      [--model random:llama2-7b] [--prompt-len 16384] [--budget 1024] [--decode 32] \
      [--device cuda] [--dtype bf16] [--preflight]
"""
import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback

# KV Lens's SnapKV defaults (kvlens bench --help): window 32, pooling kernel 7.
WINDOW, KERNEL = 32, 7


def positive(name):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%s '%s' is not an integer" % (name, text))
        if value < 1:
            raise argparse.ArgumentTypeError("%s %d must be at least 1" % (name, value))
        return value
    return parse


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        sys.stderr.write("kvpress_gpu_side_by_side.py: %s\n" % message)
        sys.exit(2)


def parse_args(argv):
    p = OneLineParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kvpress-tar", required=True, help="kvpress-8bb29b9.tar.gz")
    p.add_argument("--out", required=True, help="the JSON to write")
    p.add_argument("--kvlens", required=True, help="the kvlens binary, whose `info --json` gives the shape")
    p.add_argument("--model", default="random:llama2-7b", help="a model kvlens names (its shape, not its weights)")
    p.add_argument("--prompt-len", type=positive("--prompt-len"), default=16384)
    p.add_argument("--budget", type=positive("--budget"), default=1024)
    p.add_argument("--decode", type=positive("--decode"), default=32)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--preflight", action="store_true", help="unpack and import only")
    a = p.parse_args(argv)
    if a.budget <= WINDOW or a.budget >= a.prompt_len:
        p.error("--budget %d must exceed the window (%d) and be under --prompt-len %d" % (a.budget, WINDOW, a.prompt_len))
    if not os.path.isfile(a.kvpress_tar):
        p.error("--kvpress-tar %s: no such file" % a.kvpress_tar)
    if not (os.path.isfile(a.kvlens) and os.access(a.kvlens, os.X_OK)):
        p.error("--kvlens %s: not an executable" % a.kvlens)
    return a


def llama_config_fields(info):
    """transformers' LlamaConfig fields from `kvlens info --json`."""
    if info.get("architecture") != "llama":
        raise RuntimeError("%s is a %s model: the side by side builds transformers' Llama only"
                           % (info.get("model"), info.get("architecture")))
    return dict(vocab_size=info["vocab"], hidden_size=info["embedding"], intermediate_size=info["ffn"],
                num_hidden_layers=info["layers"], num_attention_heads=info["heads"],
                num_key_value_heads=info["kv_heads"], head_dim=info["head_dim"], rope_theta=info["rope_theta"],
                rms_norm_eps=info["rms_eps"])


def run(a, result):
    step = "read the shape"
    try:
        info = subprocess.run([a.kvlens, "info", "--model", a.model, "--json"], capture_output=True, text=True)
        if info.returncode != 0:
            raise RuntimeError((info.stderr.strip().splitlines() or ["kvlens info failed"])[-1])
        shape = llama_config_fields(json.loads(info.stdout))
        result["shape"] = shape
        step = "unpack kvpress"
        where = tempfile.mkdtemp(prefix="kvpress-")
        atexit.register(shutil.rmtree, where, True)  # kept while kvpress's modules may load from it
        with tarfile.open(a.kvpress_tar) as tar:
            tar.extractall(where)
        roots = [os.path.join(where, d) for d in os.listdir(where) if os.path.isdir(os.path.join(where, d, "kvpress"))]
        if not roots:
            raise RuntimeError("no kvpress/ package inside " + a.kvpress_tar)
        sys.path.insert(0, roots[0])
        step = "import torch"
        import torch
        result["torch"] = torch.__version__
        step = "import transformers"
        import transformers
        result["transformers"] = transformers.__version__
        from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM
        step = "import kvpress"
        from kvpress import SnapKVPress
        result["kvpress"] = os.path.basename(a.kvpress_tar)
        if a.preflight:
            result["status"] = "preflight-ok"
            return
        step = "device"
        if a.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        device = torch.device(a.device)
        dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
        if a.device == "cuda":
            result["gpu"] = torch.cuda.get_device_name(device)
        step = "build the model"
        torch.manual_seed(a.seed)
        config = LlamaConfig(**shape, max_position_embeddings=a.prompt_len + a.decode + 64,
                             tie_word_embeddings=False, attn_implementation="sdpa")
        previous = torch.get_default_dtype()
        try:
            torch.set_default_dtype(dtype)  # the weights made in bf16 on the device, where torch allows it
        except (TypeError, RuntimeError):
            pass
        try:
            with device:
                model = LlamaForCausalLM(config)
        finally:
            torch.set_default_dtype(previous)
        model = model.to(dtype).eval()
        result["weights_bytes"] = sum(p.numel() * p.element_size() for p in model.parameters())

        def sync():
            if a.device == "cuda":
                torch.cuda.synchronize()

        def forward(ids, cache, positions=None):
            kwargs = dict(input_ids=ids, past_key_values=cache, use_cache=True)
            if positions is not None:
                kwargs["position_ids"] = positions
            try:
                return model(**kwargs, logits_to_keep=1)
            except TypeError:  # transformers before 4.50 names it num_logits_to_keep
                return model(**kwargs, num_logits_to_keep=1)

        ids = torch.randint(0, config.vocab_size, (1, a.prompt_len), device=device)
        press = SnapKVPress(compression_ratio=1.0 - a.budget / a.prompt_len, window_size=WINDOW, kernel_size=KERNEL)
        step = "warm-up"  # the same kernels on a short prompt, pressed to a quarter
        short = min(512, a.prompt_len)
        with torch.no_grad(), SnapKVPress(compression_ratio=0.75, window_size=WINDOW, kernel_size=KERNEL)(model):
            forward(ids[:, :short], DynamicCache())
        sync()
        step = "compressed prefill"
        if a.device == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        cache = DynamicCache()
        t0 = time.perf_counter()
        with torch.no_grad(), press(model):
            out = forward(ids, cache)
        sync()
        result["prefill_s"] = time.perf_counter() - t0
        result["kept_tokens"] = int(cache.get_seq_length())
        step = "decode"
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        position = a.prompt_len
        warm = 2
        with torch.no_grad():
            for i in range(warm + a.decode):
                if i == warm:
                    sync()
                    t0 = time.perf_counter()
                out = forward(token, cache, torch.tensor([[position]], device=device))
                token = out.logits[:, -1].argmax(-1, keepdim=True)
                position += 1
        sync()
        result["decode_ms_per_token"] = 1000.0 * (time.perf_counter() - t0) / a.decode
        result["peak_bytes"] = torch.cuda.max_memory_allocated(device) if a.device == "cuda" else None
        result["status"] = "ok"
    except Exception as e:  # what broke, where: the point of the JSON
        result["status"] = "failed"
        result["failed_step"] = step
        result["error"] = ("%s: %s" % (type(e).__name__, e))[:2000]
        result["traceback_tail"] = traceback.format_exc().strip().splitlines()[-12:]


def main(argv):
    a = parse_args(argv)
    result = {"status": "failed", "model": a.model, "prompt_len": a.prompt_len, "budget": a.budget,
              "window": WINDOW, "kernel": KERNEL, "decode_tokens": a.decode, "device": a.device, "dtype": a.dtype}
    run(a, result)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print("kvpress side by side: %s%s" % (result["status"], "" if result["status"] != "failed" else
          " at '%s': %s" % (result["failed_step"], result["error"].splitlines()[0] if result["error"] else "")))
    return 0 if result["status"] in ("ok", "preflight-ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
