#!/usr/bin/env bash
# Installs what mxjit needs from Debian's packages (idempotent). The CUDA 13 toolkit
# (headers + NVRTC) is expected under /usr/local/cuda, as on the project's machines.
set -euo pipefail
pkgs=(cmake g++ make libfmt-dev doctest-dev libsqlite3-dev libcli11-dev libdlpack-dev libxxhash-dev llvm-16-dev clang  # clang: the libFuzzer targets (tests/fuzz)
      python3-venv)  # scripts/test_python.sh makes a venv (Debian's python3 needs this for `python3 -m venv`)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "setup: the CUDA toolkit (>= 12.8, for NVRTC and headers) was not found under /usr/local/cuda" >&2
  exit 1
fi
