#!/usr/bin/env bash
# Builds a wheel of mxjit (the C++ library + mxjit._mxjit + the pure-Python package) into .whl/.
#
#   scripts/build_wheel.sh [--python PY] [--no-llvm] [--out DIR]
#
#   --python PY   the interpreter the wheel is for (default python3), e.g.
#                 /root/.pyenv/versions/3.12.1/bin/python for the GPU machine's Python 3.12
#   --no-llvm     leave out the LLVM CPU backend (hosts without LLVM 16: CPU tensors run the reference)
#   --out DIR     where the wheel goes (default .whl, git-ignored)
#
# When build/ holds a C++ build of this checkout configured with -DMXJIT_FMT_HEADER_ONLY=ON (so that
# the wheel needs no libfmt.so where it runs), its libraries are installed to build/py-prefix and
# linked (only the extension is compiled); otherwise the wheel builds the C++ library itself. Build
# requirements (scikit-build-core, nanobind) come from PY's environment when it has them, else pip
# fetches them into an isolated build environment.
set -euo pipefail
cd "$(dirname "$0")/.."
py=python3 llvm=ON out=.whl
while (($#)); do
  case "$1" in
    --python) py="$2"; shift 2 ;;
    --no-llvm) llvm=OFF; shift ;;
    --out) out="$2"; shift 2 ;;
    *) echo "build_wheel.sh: unknown argument $1 (see the header of this script)" >&2; exit 2 ;;
  esac
done
args=(-C "cmake.define.MXJIT_WITH_LLVM=$llvm" -C "build-dir=build/py-{wheel_tag}-llvm$llvm")
if [ -f build/CMakeCache.txt ] && [ -f build/cmake_install.cmake ] &&
   grep -q "^MXJIT_FMT_HEADER_ONLY:BOOL=ON" build/CMakeCache.txt; then
  cmake --build build -j"$(nproc)" --target mxjit_runtime mxjit_cache mxjit_codegen mxjit_dsl mxjit_reference \
        mxjit_templates $(grep -q "MXJIT_WITH_LLVM:BOOL=ON" build/CMakeCache.txt && echo mxjit_llvm)  # install needs it
  cmake --install build --prefix build/py-prefix --component dev >/dev/null
  args+=(-C "cmake.define.MXJIT_PREBUILT=$PWD/build/py-prefix")
fi
isolation=()
if "$py" -c "import scikit_build_core, nanobind" 2>/dev/null; then isolation=(--no-build-isolation); fi
"$py" -m pip wheel . --no-deps "${isolation[@]}" -w "$out" "${args[@]}"
ls -l "$out"/mxjit-*.whl
