#!/usr/bin/env bash
# The profile without Qt (-DKVLENS_GUI=OFF, the GPU machine's build) configures with
# Qt and pkg-config both switched off, and no compile or link line names Qt: a new
# Qt dependency outside ui/ and reports' Qt branch fails here, in seconds, rather than
# on the GPU machine. (tests/tools/gpu_profile_isolated.sh builds and tests it whole.)
# Usage: gui-off-configure-test.sh CMAKE SOURCE_DIR WORK_DIR
set -uo pipefail
cmake=$1
src=$2
work=$3
rm -rf "$work" && mkdir -p "$work"
if ! "$cmake" -S "$src" -B "$work" -DKVLENS_GUI=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Qt6=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON > "$work/configure.log" 2>&1; then
  echo "FAIL: the profile without Qt does not configure:" >&2
  grep -A4 'CMake Error' "$work/configure.log" | head -n 20 >&2
  exit 1
fi
if grep -rlis --include='*.make' --include='*.txt' --include='build.ninja' -e 'qt6' -e 'libQt' -e 'imgui' "$work" |
    grep -v -e 'configure.log' -e 'CMakeCache.txt' -e 'CMakeOutput.log' -e 'CMakeError.log' | head -n 5 | grep .; then
  echo "FAIL: the build files above of the profile without Qt name Qt or ImGui" >&2
  exit 1
fi
grep -q "KVLENS_GUI is OFF" "$work/configure.log" || { echo "FAIL: configure did not take KVLENS_GUI=OFF" >&2; exit 1; }
echo "the profile without Qt configures, and no build file names Qt or ImGui"
