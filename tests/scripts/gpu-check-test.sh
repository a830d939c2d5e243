#!/usr/bin/env bash
# scripts/gpu-check's argument handling and preflight failures, and scripts/gpu-bundle's refusals, on any machine:
# each failure is one line on stderr, exit 1 (2 for bad arguments), and, once
# the arguments are valid, a gpu-check.json that says why. A stand-in python stands
# in for PyTorch so that the outcome does not depend on what is installed.
# Usage: gpu-check-test.sh SOURCE_DIR WORK_DIR
set -uo pipefail
src=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
check="$src/scripts/gpu-check"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect CODE 'stderr substring' -- args...: runs the check, compares exit code and its one stderr line.
expect() {
  local code=$1 want=$2
  shift 3
  "$@" > "$work/stdout" 2> "$work/stderr"
  local rc=$?
  [[ $rc -eq $code ]] || fail "'$*' exited $rc, not $code (stderr: $(cat "$work/stderr"))"
  [[ $(wc -l < "$work/stderr") -eq 1 ]] || fail "'$*' wrote not exactly one line on stderr: $(cat "$work/stderr")"
  grep -qF -- "$want" "$work/stderr" || fail "'$*': stderr lacks '$want': $(cat "$work/stderr")"
}

# A stand-in python: prints the probe's answers from $STUB_ANSWERS, or fails like a missing module.
stub="$work/python"
cat > "$stub" <<'STUB'
#!/usr/bin/env bash
cat > /dev/null
if [[ -z "${STUB_ANSWERS:-}" ]]; then
  echo "Traceback (most recent call last):" >&2
  echo "ModuleNotFoundError: No module named 'torch'" >&2
  exit 1
fi
printf '%b' "$STUB_ANSWERS"
STUB
chmod +x "$stub"
export KVLENS_GPU_CHECK_PYTHON="$stub"
unset OUT

# Arguments.
"$check" --help > "$work/help" 2>&1 || fail "--help exited non-zero"
grep -q -- "--time-limit" "$work/help" || fail "--help does not list --time-limit"
expect 2 "unknown argument '--bogus'" -- "$check" --bogus
expect 2 "--time-limit 'soon' is not a number of seconds" -- "$check" --time-limit soon
expect 2 "--bench-lengths '4k' is not a list of numbers" -- "$check" --bench-lengths 4k
expect 2 "--kvpress-tar $work/no-kvpress.tar.gz is not a file" -- "$check" --kvpress-tar "$work/no-kvpress.tar.gz"
grep -q -- "--kvpress-tar" "$work/help" || fail "--help does not list --kvpress-tar"

# A bundle that is not one, and a library the profile needs that is missing (a
# stand-in compiler finds no sqlite3.h, wherever it looks).
expect 2 "--bundle $work/nowhere is not a folder (scripts/gpu-bundle --out $work/nowhere makes it)" -- \
  "$check" --bundle "$work/nowhere" --build-dir "$work/build" --out "$work/out"
mkdir -p "$work/not-a-bundle"
expect 1 "$work/not-a-bundle holds no MANIFEST.txt: not a bundle of scripts/gpu-bundle" -- \
  "$check" --bundle "$work/not-a-bundle" --build-dir "$work/build" --out "$work/out"
cat > "$work/cxx" <<'STUB'
#!/usr/bin/env bash
if [[ " $* " == *" -E "* ]]; then
  input=$(cat)
  [[ "$input" == *"<sqlite3.h>"* ]] && exit 1
  printf '%s\n' "$input" | exec c++ "$@"
fi
exec c++ "$@"
STUB
chmod +x "$work/cxx"
CXX="$work/cxx" expect 1 "missing SQLite (sqlite3.h, libsqlite3; Debian's libsqlite3-dev): make the bundle with scripts/gpu-bundle" -- \
  "$check" --build-dir "$work/build" --out "$work/out"
grep -q '"reason": "missing libraries: SQLite' "$work/out/gpu-check.json" || fail "summary lacks the missing library: $(cat "$work/out/gpu-check.json")"

# scripts/gpu-bundle's refusals, before it downloads anything: it replaces an earlier
# bundle and nothing else.
bundler="$src/scripts/gpu-bundle"
expect 2 "scripts/gpu-bundle: unknown argument '--bogus'" -- "$bundler" --bogus
mkdir -p "$work/precious" && echo keep > "$work/precious/file"
expect 1 "--out $work/precious exists and is not a bundle of this script: not replacing it" -- \
  "$bundler" --out "$work/precious"
[[ -f "$work/precious/file" ]] || fail "scripts/gpu-bundle removed a folder that was not its bundle"

# Preflight failures, each with its summary.
summary="$work/out/gpu-check.json"
json_field() { sed -n "s/^  \"$1\": \"\(.*\)\",*$/\1/p" "$summary"; }
expect 1 "PyTorch is not importable by $stub: ModuleNotFoundError: No module named 'torch'" -- \
  "$check" --build-dir "$work/build" --out "$work/out"
[[ -f "$summary" ]] || fail "no gpu-check.json after a preflight failure"
[[ "$(json_field status)" == failed ]] || fail "summary status is not 'failed': $(cat "$summary")"
grep -q '"reason": "PyTorch is not importable' "$summary" || fail "summary lacks the reason: $(cat "$summary")"
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$summary" || fail "gpu-check.json is not JSON"
fi

base='version=2.7.1\ncmake_prefix=/nonexistent\n'
STUB_ANSWERS="${base}cuda=None\navailable=0\ncxx11abi=1\n" \
  expect 1 "PyTorch 2.7.1 was built without CUDA" -- "$check" --build-dir "$work/build" --out "$work/out"
STUB_ANSWERS="${base}cuda=12.6\navailable=0\ncxx11abi=1\n" \
  expect 1 "no CUDA GPU visible to PyTorch 2.7.1 (torch.cuda.is_available() is False): the GPU check needs a GPU machine (--build-only" -- "$check" --build-dir "$work/build" --out "$work/out"
STUB_ANSWERS="${base}cuda=12.6\navailable=1\ncxx11abi=0\ncapability=9.0\ngpu=Stub GPU\n" \
  expect 1 "pre-C++11 string ABI" -- "$check" --build-dir "$work/build" --out "$work/out"
STUB_ANSWERS="${base}cuda=12.6\navailable=1\ncxx11abi=1\ncapability=9.0\ngpu=Stub GPU\n" CUDACXX="$work/no-nvcc" \
  expect 1 "CUDACXX=$work/no-nvcc is not an executable nvcc" -- "$check" --build-dir "$work/build" --out "$work/out"
grep -q '"torch": "2.7.1"' "$summary" || fail "summary lacks the machine's PyTorch version: $(cat "$summary")"
# $OUT is where the summary goes when --out is not given.
OUT="$work/from-env" STUB_ANSWERS="${base}cuda=None\navailable=0\ncxx11abi=1\n" \
  expect 1 "built without CUDA" -- "$check" --build-dir "$work/build"
[[ -f "$work/from-env/gpu-check.json" ]] || fail "\$OUT did not receive gpu-check.json"

if [[ $failures -gt 0 ]]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "gpu-check preflight and arguments: all checks passed"
