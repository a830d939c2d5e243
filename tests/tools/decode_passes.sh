#!/usr/bin/env bash
# Decode speed against llama.cpp in interleaved passes (a developer instrument, not a CI test;
# docs/performance.md quotes its output). Per pass and file: llama.cpp's tg64 with its native
# build (../shared/tools/llamacpp-build) and with its AVX2-only build (made by
# llamacpp_quant_parity.sh into ~/.cache/kvlens-tools/llama.cpp-avx2), and `kvlens bench`'s
# decode of 64 tokens after 512, natively and under KVLENS_ISA=avx2; then each file's median
# ratio, every ratio, and max/min tok/s of each program over the passes (its spread).
# Usage: tests/tools/decode_passes.sh [--kvlens BIN] [--passes N] FILE.gguf...
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${KVLENS_SHARED:-$root/../shared}
kvlens=$root/build/app/kvlens
passes=5
files=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --kvlens) kvlens=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    --*) echo "decode_passes.sh: unknown flag '$1' (use --kvlens, --passes)" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
[[ ${#files[@]} -gt 0 ]] || { echo "decode_passes.sh: name at least one GGUF file" >&2; exit 2; }
[[ $passes =~ ^[1-9][0-9]*$ ]] || { echo "decode_passes.sh: --passes '$passes' is not a positive integer" >&2; exit 2; }
[[ -x $kvlens ]] || { echo "decode_passes.sh: $kvlens is not built (scripts/build kvlens)" >&2; exit 1; }
for f in "${files[@]}"; do [[ -f $f ]] || { echo "decode_passes.sh: no file $f" >&2; exit 1; }; done
native=$("$shared/tools/llamacpp-build")
avx2=${XDG_CACHE_HOME:-$HOME/.cache}/kvlens-tools/llama.cpp-avx2/build/bin
[[ -x $avx2/llama-bench ]] || { echo "decode_passes.sh: no $avx2/llama-bench (build it: cmake --build $avx2/.. --target llama-bench)" >&2; exit 1; }
# The model name alone ("AMD EPYC") does not tell one core generation from another: the
# family and model numbers do (family 25 model 1 is Zen 3, 26 is Zen 5).
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) (family $(grep -m1 '^cpu family' /proc/cpuinfo |
  cut -d: -f2 | xargs), model $(grep -m1 '^model[[:space:]]' /proc/cpuinfo | cut -d: -f2 | xargs)); flags: $(grep -m1 '^flags' /proc/cpuinfo |
  tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512bw|avx512_vnni|avx512_bf16|avx_vnni|amx_int8)$' | xargs)"
grep -qw avx512f /proc/cpuinfo ||
  echo "no AVX-512 here: KV Lens's native path is its AVX2 path, so its two columns measure the same code twice"
tg() { "$1/llama-bench" -m "$2" -p 0 -n 64 -t 2 -r 1 -o json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['avg_ts'])"; }
kv() { "$kvlens" bench --model "$1" --prompt-len 512 -n 64 --reps 1 --warmup 1 --threads 2 2>&1 |
  sed -n 's/.*decode .* tokens after [0-9]*: *\([0-9.]*\) tok.*/\1/p'; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((p = 1; p <= passes; ++p)); do
  for f in "${files[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\n' "$(basename "$f")" "$(tg "$native" "$f")" "$(kv "$f")" "$(tg "$avx2" "$f")" \
      "$(KVLENS_ISA=avx2 kv "$f")" | tee -a "$out" >&2
  done
done
python3 - "$out" <<'PY'
import statistics as st, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print("tok/s columns: llama.cpp native, KV Lens native, llama.cpp AVX2 build, KV Lens KVLENS_ISA=avx2")
print("| file | native | avx2 vs llama.cpp native | avx2 vs llama.cpp AVX2 | spread llama.cpp / KV Lens, native | spread, AVX2 |")
print("| --- | --- | --- | --- | --- | --- |")
for f in dict.fromkeys(r[0] for r in rows):
    ln, kn, la, ka = zip(*[tuple(map(float, r[1:])) for r in rows if r[0] == f])
    ratio = lambda a, b: sorted(x / y for x, y in zip(a, b))
    cell = lambda v: "**%.2fx** (%s)" % (st.median(v), " ".join("%.2f" % x for x in v))
    spread = lambda v: "%.2f" % (max(v) / min(v))
    print("| %s | %s | %s | %s | %s / %s | %s / %s |" % (f, cell(ratio(kn, ln)), cell(ratio(ka, ln)), cell(ratio(ka, la)),
          spread(ln), spread(kn), spread(la), spread(ka)))
PY
