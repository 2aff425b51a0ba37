#!/usr/bin/env bash
# Runs one libFuzzer binary for a fixed time: run_fuzzer.sh BINARY SEED_CORPUS WORK_DIR SECONDS
# New corpus entries go to WORK_DIR/corpus (the seed corpus in the source tree is only read);
# a crash leaves its input in WORK_DIR and fails the test.
set -euo pipefail
bin=$1 seeds=$2 work=$3 secs=$4
mkdir -p "$work/corpus"
cd "$work"
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$seeds" 2>&1 | tail -n 25
