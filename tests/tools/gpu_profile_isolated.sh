#!/usr/bin/env bash
# Proves, on an ordinary Debian 12 machine with everything of scripts/setup
# installed, that the profile without Qt (-DKVLENS_GUI=OFF) builds and passes its
# tests with every third-party header and library taken from the bundle of
# scripts/gpu-bundle: it runs `scripts/gpu-check --build-only` in a private mount
# namespace where Debian's own copies are hidden (each header file and static
# library of the -dev packages the bundle replaces, their CMake configs, and Qt's
# and ImGui's headers and CMake configs are covered by an empty file or folder).
# Then it lists what the build read: the include folders of the compile commands
# and `ldd` of the programs. Needs root (unshare -m); not part of the suite (a
# whole build: about 25 minutes on 2 cores).
#
# usage: tests/tools/gpu_profile_isolated.sh [BUILD_DIR] [OUT_DIR]
#        (defaults: build-gpuprofile, /tmp/gpu-profile-proof; the bundle: gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ "${1:-}" != --inside ]]; then
  build=${1:-build-gpuprofile}
  out=${2:-/tmp/gpu-profile-proof}
  [[ $(id -u) -eq 0 ]] || { echo "gpu_profile_isolated.sh: needs root (it mounts in a private namespace)" >&2; exit 1; }
  [[ -f gpu-bundle/MANIFEST.txt ]] || { echo "gpu_profile_isolated.sh: no gpu-bundle here (run scripts/gpu-bundle)" >&2; exit 1; }
  mkdir -p "$out"
  exec unshare -m --propagation private "$0" --inside "$build" "$out"
fi
build=$2
out=$3
empty_dir=$(mktemp -d)
empty_file=$(mktemp)
hidden=0
hide() {  # hide PATH: an empty file over a regular file, an empty folder over a folder
  if [[ -d "$1" && ! -L "$1" ]]; then
    mount --bind "$empty_dir" "$1"
  elif [[ -f "$1" && ! -L "$1" ]]; then
    mount --bind "$empty_file" "$1"
  else
    return 0
  fi
  hidden=$((hidden + 1))
}
# Headers and static libraries of the packages the bundle replaces. Shared-library
# links (.so) are links into the runtime libraries that cmake and the compiler load
# themselves: they stay, and ldd below shows which copies the programs load.
for pkg in libsqlite3-dev zlib1g-dev libpng-dev libpcre2-dev libutf8proc-dev libsentencepiece-dev \
           nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev; do
  while IFS= read -r f; do
    case "$f" in
      /usr/include/*|*.a) [[ -f "$f" && ! -L "$f" ]] && hide "$f" ;;
    esac
  done < <(dpkg -L "$pkg")
done
for d in /usr/include/gtest /usr/include/gmock /usr/include/nlohmann /usr/include/benchmark /usr/include/libpng16 \
         /usr/lib/x86_64-linux-gnu/cmake/GTest /usr/lib/x86_64-linux-gnu/cmake/benchmark /usr/share/cmake/nlohmann_json \
         /usr/include/x86_64-linux-gnu/qt6 /usr/include/imgui /usr/lib/x86_64-linux-gnu/cmake/Qt6*; do
  hide "$d"
done
echo "gpu_profile_isolated.sh: hid $hidden files and folders of Debian's -dev packages, Qt and ImGui" >&2
# Nothing of them can be read now.
for f in /usr/include/sqlite3.h /usr/include/pcre2.h /usr/include/nlohmann/json.hpp /usr/include/gtest/gtest.h \
         /usr/include/x86_64-linux-gnu/qt6/QtCore/QtCore; do
  [[ ! -s "$f" ]] || { echo "gpu_profile_isolated.sh: $f is still readable" >&2; exit 1; }
done

rc=0
KVLENS_GPU_CHECK_PYTHON=${KVLENS_GPU_CHECK_PYTHON:-/usr/bin/python3} \
  scripts/gpu-check --build-only --bundle gpu-bundle --build-dir "$build" --out "$out" || rc=$?

# What the build read: include folders of every compile command, and the shared
# libraries its programs load.
{
  echo "# include folders of the compile commands (-I/-isystem), by count"
  if [[ -f "$build/build.ninja" ]]; then
    grep -oE '(-I|-isystem )[^ ]+' "$build/build.ninja" | sed 's/^-isystem /-isystem:/' | sort | uniq -c | sort -rn
  fi
  echo
  for p in "$build/app/kvlens" "$build/tests/kvlens_engine_tests" "$build/tests/sessions/kvlens_sessions_tests" \
           "$build/engine/libkvlens_sentencepiece.so"; do
    [[ -e "$p" ]] || continue
    echo "# ldd ${p#"$build"/}"
    ldd "$p" | grep -E 'sqlite|libz\.|png|pcre2|utf8proc|sentencepiece|benchmark|gtest|Qt|torch|c10' || true
  done
} > "$out/what-the-build-read.txt"
echo "gpu_profile_isolated.sh: gpu-check exited $rc; summary $out/gpu-check.json, includes and ldd in $out/what-the-build-read.txt" >&2
exit $rc
