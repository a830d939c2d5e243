#!/usr/bin/env bash
# llama.cpp parity over every quant type (a developer instrument, not a CI test; see
# llamacpp_quant_parity.md): random-weight Llamas of one shape (4 layers, width 256, FFN
# 768, 8 query / 2 KV heads) with a SentencePiece and a Llama-3 BPE vocabulary, quantised
# by llama-quantize into each type; llama.cpp's greedy run of each (the native build of
# ../shared/tools/llamacpp-build and an AVX2-only build of the same snapshot, whose
# difference is llama.cpp's own spread between instruction sets) against
# `kvlens generate --json` in f32 and in the compute dtype --dtype auto picks.
# Usage: tests/tools/llamacpp_quant_parity.sh [--kvlens BIN] [--work DIR] [--types "F16 Q8_0 ..."]
# Needs ../shared/tools and Debian's python3-numpy python3-sentencepiece python3-yaml.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${KVLENS_SHARED:-$root/../shared}
kvlens=$root/build/app/kvlens
work=${TMPDIR:-/tmp}/kvlens-quant-parity
types="F16 Q8_0 Q6_K Q5_K_M Q5_K_S Q5_1 Q5_0 Q4_K_M Q4_K_S Q4_1 Q4_0 Q3_K_L Q3_K_M Q3_K_S Q2_K IQ4_NL IQ4_XS"
while [[ $# -gt 0 ]]; do
  case $1 in
    --kvlens) kvlens=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --types) types=$2; shift 2 ;;
    *) echo "llamacpp_quant_parity.sh: unknown flag '$1' (use --kvlens, --work, --types)" >&2; exit 2 ;;
  esac
done
[[ -x $kvlens ]] || { echo "llamacpp_quant_parity.sh: $kvlens is not built (scripts/build kvlens)" >&2; exit 1; }
[[ -d $shared/tools ]] || { echo "llamacpp_quant_parity.sh: no $shared/tools (set KVLENS_SHARED)" >&2; exit 1; }
bin=$("$shared/tools/llamacpp-build")
# The same snapshot without -march=native: AVX2, FMA and F16C only.
avx2=${XDG_CACHE_HOME:-$HOME/.cache}/kvlens-tools/llama.cpp-avx2
if [[ ! -x $avx2/build/bin/llamacpp-reference ]]; then
  echo "building llama.cpp (AVX2 only) into $avx2 (about 6 minutes on 2 cores)" >&2
  mkdir -p "$avx2" && tar -xzf "$shared/tools/third_party/llama.cpp-c392e50.tar.gz" -C "$avx2"
  cmake -S "$avx2" -B "$avx2/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
    -DGGML_FMA=ON -DGGML_F16C=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
  cmake --build "$avx2/build" -j2 --target llama >/dev/null
  g++ -O2 -std=c++17 -I"$avx2/include" -I"$avx2/ggml/include" "$shared/tools/llamacpp-reference.cpp" \
    -L"$avx2/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$avx2/build/bin" -o "$avx2/build/bin/llamacpp-reference"
fi
b2=$avx2/build/bin
mkdir -p "$work"
P="Once upon a time, there was a little girl named Lily. She loved to play"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags: $(grep -m1 '^flags' /proc/cpuinfo |
  tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx512_bf16|amx_int8)$' | xargs)"
echo "steps: greedy steps equal to llama.cpp's native build before its first near-tie (top-1 - top-2 < 0.03)"
echo "(N~ a near-tie at step N, N! a different token at step N); diff: max |logit difference| over llama.cpp's first-step top 8;"
echo "diff dequantised: the same weights dequantised to F32 by llama-quantize, KV Lens (f32) against llama.cpp;"
echo "exact: llama.cpp's run of that F32 file (no activation rounded to int8), against which *vs exact* counts"
echo "greedy steps before the exact run's first near-tie and measures first-step logits, of KV Lens f32, KV Lens with"
echo "every product in fp32 (KVLENS_ISA=scalar: no int8 activations) and llama.cpp native"
echo
echo "| file | steps f32 | steps auto | steps llama.cpp AVX2 | diff f32 | diff auto | diff llama.cpp AVX2 | diff dequantised | smallest margin | steps vs exact: f32 / fp32 products / llama.cpp | diff vs exact: f32 / fp32 products / llama.cpp |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for vocab in spm bpe; do
  base=$work/$vocab-f32.gguf
  if [[ ! -f $base ]]; then
    if [[ $vocab == spm ]]; then
      extra=(--vocab "$shared/testdata/vocab/ggml-vocab-llama-spm.gguf")
    else
      extra=(--vocab "$shared/testdata/vocab/ggml-vocab-dbrx.gguf" --llama3-rope --rope-base 500000)
    fi
    /usr/bin/python3 "$shared/tools/make_random_gguf.py" "$base" "${extra[@]}" --arch llama --layers 4 --dim 256 \
      --ff 768 --heads 8 --kv-heads 2 --ctx 512 --dtype f32 >/dev/null
  fi
  for t in $types; do
    f=$work/$vocab-$t
    [[ -f $f.gguf ]] || "$bin/llama-quantize" "$base" "$f.gguf" "$t" 2 >/dev/null 2>&1
    ids=$("$bin/llamacpp-reference" "$f.gguf" --tokenize "$P" | tr -d "[] ")
    "$bin/llamacpp-reference" "$f.gguf" 16 "$ids" >"$f.native.json" 2>/dev/null
    "$b2/llamacpp-reference" "$f.gguf" 16 "$ids" >"$f.avx2.json" 2>/dev/null
    "$kvlens" generate --model "$f.gguf" --prompt "$P" -n 16 --ignore-eos --json --dtype f32 >"$f.f32.json" 2>/dev/null
    "$kvlens" generate --model "$f.gguf" --prompt "$P" -n 16 --ignore-eos --json >"$f.auto.json" 2>/dev/null
    KVLENS_ISA=scalar "$kvlens" generate --model "$f.gguf" --prompt "$P" -n 16 --ignore-eos --json --dtype f32 \
      >"$f.scalar.json" 2>/dev/null
    # The same weights dequantised to F32 by llama.cpp: no activation is quantised on either side.
    [[ -f $f-deq.gguf ]] || "$bin/llama-quantize" --allow-requantize "$f.gguf" "$f-deq.gguf" F32 2 >/dev/null 2>&1
    "$bin/llamacpp-reference" "$f-deq.gguf" 16 "$ids" >"$f.deq-native.json" 2>/dev/null
    "$kvlens" generate --model "$f-deq.gguf" --prompt "$P" -n 1 --json --dtype f32 >"$f.deq-f32.json" 2>/dev/null
    /usr/bin/python3 - "$f" <<'PY'
import json, sys
f = sys.argv[1]
load = lambda s: json.load(open(f + s))
ref, avx2, f32, auto = load(".native.json"), load(".avx2.json"), load(".f32.json"), load(".auto.json")
scalar = load(".scalar.json")
deqRef, deq = load(".deq-native.json"), load(".deq-f32.json")
for k in (avx2, f32, auto, scalar):
    assert k["prompt_token_ids"] == ref["prompt_token_ids"], f + ": the prompt's token ids differ"
def steps(k, r=ref):
    margins = [a - b for a, b in zip(r["step_top1_logit"], r["step_top2_logit"])]
    for i, (want, got) in enumerate(zip(r["generated_token_ids"], k["generated_token_ids"])):
        if margins[i] < 0.03: return "%d~" % i
        if want != got: return "%d!" % i
    return str(len(margins))
margins = [a - b for a, b in zip(ref["step_top1_logit"], ref["step_top2_logit"])]
def diff(k, r=ref):
    a, b = dict(map(tuple, r["first_step_top8"])), dict(map(tuple, k["first_step_top8"]))
    return max(abs(a[i] - b[i]) for i in a if i in b)
name = f.rsplit("/", 1)[-1]
print("| %s | %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %.3f | %s / %s / %s | %.4f / %.4f / %.4f |" % (name, steps(f32),
      steps(auto), steps(avx2), diff(f32), diff(auto), diff(avx2), diff(deq, deqRef), min(margins), steps(f32, deqRef),
      steps(scalar, deqRef), steps(ref, deqRef), diff(f32, deqRef), diff(scalar, deqRef), diff(ref, deqRef)))
PY
  done
done
