#!/usr/bin/env bash
# The CI stage after the release build's tests (README, Testing): run from the repository root
# after ./scripts/setup.sh.
#   1. the dev preset: the whole tree built Debug by clang with -Wall -Wextra -Wshadow -Wconversion
#      -Werror and ASan + UBSan (build-dev/), then the `fast` tests under the sanitizers;
#   2. the tsan preset: the cache, runtime and CPU-backend test binaries built by clang with TSan
#      (build-tsan/), then their cases that are not `slow` (the multi-thread and multi-process cache
#      tests, concurrent compiles, the LLVM backend's thread pool).
# Usage: scripts/test_dev.sh [JOBS]   (default: all cores). Exits non-zero at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-$(nproc)}
start=$SECONDS
step() { printf '\n== test_dev.sh: %s (%d s so far)\n' "$1" $((SECONDS - start)); }

step "dev preset: configure and build (clang, warnings are errors, ASan + UBSan)"
cmake --preset dev >/dev/null
cmake --build --preset dev -j"$jobs"

step "dev preset: the fast tests under ASan + UBSan"
ctest --preset dev -L fast -j"$jobs"

step "tsan preset: configure and build the cache, runtime and CPU-backend tests (clang)"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j"$jobs"

step "tsan preset: their cases that are not slow, under TSan"
ctest --preset tsan -LE slow -j"$jobs"

step "done"
