#!/usr/bin/env bash
# The Python stage of the tests (after scripts/setup.sh and the C++ build in build/):
#   1. a venv (build/py-venv) with torch==2.11.*, torchao 0.18, numpy, pytest from PyPI;
#   2. `pip install .` that reuses the C++ build: build/ is installed to build/py-prefix and linked
#      (MXJIT_PREBUILT), so only the extension's few files compile;
#   3. pytest tests/python (GPU tests skip without a GPU), against the installed package.
#
#   scripts/test_python.sh [pytest args...]
#
# MXJIT_PY_VENV=<dir> uses (and, when absent, creates) that venv instead of build/py-venv;
# MXJIT_PYTHON=<python> picks the interpreter that creates it (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
t0=$(date +%s)
stamp() { echo "[test_python.sh] $(( $(date +%s) - t0 )) s: $*"; }

if [ ! -f build/CMakeCache.txt ]; then
  echo "test_python.sh: build the C++ project first (cmake -S . -B build && cmake --build build)" >&2
  exit 1
fi
venv=${MXJIT_PY_VENV:-build/py-venv}
if [ ! -x "$venv/bin/python" ]; then
  "${MXJIT_PYTHON:-python3}" -m venv "$venv"
fi
py="$venv/bin/python"
if ! "$py" -c "import torch, torchao, numpy, pytest, scikit_build_core, nanobind" 2>/dev/null; then
  "$py" -m pip install -q --upgrade pip
  "$py" -m pip install -q "torch==2.11.*" "torchao==0.18.*" numpy pytest "scikit-build-core>=0.10" "nanobind>=2.0"
fi
stamp "venv ready ($("$py" -c 'import torch, torchao; print("torch", torch.__version__, "torchao", torchao.__version__)'))"

cmake --build build -j"$(nproc)" --target mxjit_hash_corpus
cmake --install build --prefix build/py-prefix --component dev >/dev/null
"$py" -m pip install -q --no-deps --no-build-isolation --force-reinstall . \
  -C "cmake.define.MXJIT_PREBUILT=$root/build/py-prefix"
stamp "mxjit installed into $venv"

# From outside the source tree, so that `import mxjit` is the installed package.
cd "$root/build"
MXJIT_HASH_CORPUS="$root/build/tests/mxjit_hash_corpus" MXJIT_CACHE_DIR="$root/build/py-test-cache" \
  "$py" -m pytest -p no:cacheprovider -q "$root/tests/python" "$@"
stamp "pytest done"
