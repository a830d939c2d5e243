#!/usr/bin/env bash
# tests/tools/kvpress_gpu_side_by_side.py (gpu-check's kvpress run) on any machine: bad
# arguments are one line and exit 2; once they are valid, a JSON names the step that
# failed (a tarball without kvpress, or what this machine cannot import) and its error.
# Usage: kvpress-side-by-side-test.sh SOURCE_DIR KVLENS WORK_DIR [KVPRESS_TARBALL]
set -uo pipefail
src=$1
kvlens=$2
work=$3
tarball=${4:-}
rm -rf "$work" && mkdir -p "$work"
tool="$src/tests/tools/kvpress_gpu_side_by_side.py"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
expect() {  # expect CODE 'stderr substring' -- args...
  local code=$1 want=$2
  shift 3
  python3 "$tool" --kvlens "$kvlens" "$@" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  [[ $rc -eq $code ]] || fail "'$*' exited $rc, not $code (stderr: $(cat "$work/stderr"))"
  [[ $(wc -l < "$work/stderr") -eq 1 ]] || fail "'$*' wrote not exactly one line on stderr: $(cat "$work/stderr")"
  grep -qF -- "$want" "$work/stderr" || fail "'$*': stderr lacks '$want': $(cat "$work/stderr")"
}
# field JSON KEY: the value, or nothing
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null; }

echo hi > "$work/x.txt" && tar -czf "$work/no-kvpress.tar.gz" -C "$work" x.txt
expect 2 "the following arguments are required: --kvpress-tar" -- --out "$work/k.json"
expect 2 "--kvpress-tar $work/nowhere.tar.gz: no such file" -- --kvpress-tar "$work/nowhere.tar.gz" --out "$work/k.json"
expect 2 "--prompt-len 'x' is not an integer" -- --kvpress-tar "$work/no-kvpress.tar.gz" --out "$work/k.json" --prompt-len x
expect 2 "--decode 0 must be at least 1" -- --kvpress-tar "$work/no-kvpress.tar.gz" --out "$work/k.json" --decode 0
expect 2 "--budget 16 must exceed the window (32) and be under --prompt-len 16384" -- \
  --kvpress-tar "$work/no-kvpress.tar.gz" --out "$work/k.json" --budget 16
expect 2 "--budget 4096 must exceed the window (32) and be under --prompt-len 2048" -- \
  --kvpress-tar "$work/no-kvpress.tar.gz" --out "$work/k.json" --budget 4096 --prompt-len 2048
expect 2 "--kvlens $work/no-kvlens: not an executable" -- --kvpress-tar "$work/no-kvpress.tar.gz" --out "$work/k.json" \
  --kvlens "$work/no-kvlens"

# The shape comes from `kvlens info --json`: a model kvlens cannot name, or not a llama, fails there.
for model in random:gpt5 "$src/tests/data/gguf/tiny-qwen2-Q8_0.gguf"; do
  python3 "$tool" --kvlens "$kvlens" --kvpress-tar "$work/no-kvpress.tar.gz" --out "$work/shape.json" --preflight \
    --model "$model" > "$work/stdout" 2>&1
  [[ $(field "$work/shape.json" failed_step) == "read the shape" ]] ||
    fail "--model $model: failed_step is '$(field "$work/shape.json" failed_step)', not 'read the shape'"
done

python3 "$tool" --kvlens "$kvlens" --kvpress-tar "$work/no-kvpress.tar.gz" --out "$work/bad.json" --preflight > "$work/stdout" 2>&1
[[ $? -eq 1 ]] || fail "a tarball without kvpress did not exit 1"
[[ $(field "$work/bad.json" status) == failed ]] || fail "a tarball without kvpress: status is not failed"
[[ $(field "$work/bad.json" failed_step) == "unpack kvpress" ]] || fail "a tarball without kvpress: failed_step is '$(field "$work/bad.json" failed_step)'"
grep -q "no kvpress/ package inside" "$work/bad.json" || fail "a tarball without kvpress: the error does not say so"
python3 -c 'import json,sys; s = json.load(open(sys.argv[1]))["shape"]; assert (s["hidden_size"], s["num_hidden_layers"],
  s["num_key_value_heads"], s["intermediate_size"]) == (4096, 32, 32, 11008), s' "$work/bad.json" ||
  fail "the shape read from kvlens info is not llama2-7b's"

# The carried source: it unpacks; what comes next depends on this machine's python.
if [[ -n "$tarball" && -f "$tarball" ]]; then
  python3 "$tool" --kvlens "$kvlens" --kvpress-tar "$tarball" --out "$work/pre.json" --preflight > "$work/stdout" 2>&1
  rc=$?
  status=$(field "$work/pre.json" status) step=$(field "$work/pre.json" failed_step)
  if [[ $status == preflight-ok ]]; then
    [[ $rc -eq 0 ]] || fail "preflight-ok but exit $rc"
  elif [[ $status == failed ]]; then
    [[ $rc -eq 1 ]] || fail "failed but exit $rc"
    [[ $step == "import torch" || $step == "import transformers" || $step == "import kvpress" ]] ||
      fail "the carried source failed at '$step' (the tarball should unpack): $(field "$work/pre.json" error)"
  else
    fail "the preflight wrote no status (exit $rc): $(cat "$work/stdout")"
  fi
  echo "carried kvpress source, preflight on this machine: $status ${step:+at $step}"
else
  echo "no kvpress tarball given: its preflight not checked"
fi
[[ $failures -eq 0 ]] || { echo "$failures failure(s)" >&2; exit 1; }
echo "kvpress side-by-side arguments and failures: all as expected"
