#!/usr/bin/env bash
# End-to-end tests of the `mxjit` command-line tool, run by ctest:
#   cli_test.sh MXJIT TESTGEN WORK_DIR cpu   casts on the CPU reference match the library's reference
#                                            byte for byte; compile/cache/info work; every bad input
#                                            gives exit status 2 and one `mxjit: error:` line
#   cli_test.sh MXJIT TESTGEN WORK_DIR gpu   casts on the GPU match the CPU casts byte for byte
#                                            (exit 77 = skipped, with one line, without a GPU)
set -uo pipefail
mxjit=$1 testgen=$2 work=$3 mode=$4
rm -rf "$work"
mkdir -p "$work"
export MXJIT_CACHE_DIR="$work/cache"
passed=0 failed=0

pass() { passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# ok DESC CMD...: the command succeeds.
ok() {
  local desc=$1; shift
  if "$@" >"$work/out.txt" 2>"$work/err.txt"; then pass; else
    fail "$desc: exit $? from: $*"; sed 's/^/  | /' "$work/err.txt"; fi
}

# err DESC PATTERN LINES CMD...: exit status 2, stderr starts with `mxjit: error:`, contains PATTERN
# (grep -E), has LINES lines (1, or 3 for spec errors with their source and caret lines), and
# shows no crash.
err() {
  local desc=$1 pattern=$2 lines=$3; shift 3
  "$@" >"$work/out.txt" 2>"$work/err.txt"
  local rc=$?
  local first n
  first=$(head -n 1 "$work/err.txt")
  n=$(wc -l <"$work/err.txt")
  if [ "$rc" != 2 ]; then fail "$desc: exit $rc, expected 2: $*"; sed 's/^/  | /' "$work/err.txt"
  elif [[ "$first" != "mxjit: error: "* ]]; then fail "$desc: stderr does not start with 'mxjit: error:': $first"
  elif ! grep -qE -- "$pattern" "$work/err.txt"; then fail "$desc: message lacks /$pattern/: $(cat "$work/err.txt")"
  elif [ "$n" != "$lines" ]; then fail "$desc: $n stderr lines, expected $lines:"; sed 's/^/  | /' "$work/err.txt"
  elif grep -qiE "terminate|abort|segmentation|stack|core dumped" "$work/err.txt"; then fail "$desc: crashed"
  else pass; fi
}

# fails DESC PATTERN CMD...: exit status 1 (a failure that is not the user's mistake), PATTERN
# (grep -E) in stdout or stderr, and no crash.
fails() {
  local desc=$1 pattern=$2; shift 2
  "$@" >"$work/out.txt" 2>"$work/err.txt"
  local rc=$?
  if [ "$rc" != 1 ]; then fail "$desc: exit $rc, expected 1: $*"; sed 's/^/  | /' "$work/err.txt"
  elif ! grep -qE -- "$pattern" "$work/out.txt" "$work/err.txt"; then
    fail "$desc: output lacks /$pattern/: $(cat "$work/out.txt" "$work/err.txt")"
  elif grep -qiE "terminate|abort|segmentation|core dumped" "$work/err.txt"; then fail "$desc: crashed"
  else pass; fi
}

# same DESC A B: the two files are byte-identical.
same() {
  if cmp -s "$2" "$3"; then pass; else fail "$1: $2 and $3 differ"; fi
}

# check_cast NAME SPEC_FOR_REFERENCE INPUT [--groups FILE] -- TOOL_ARGS...: runs the tool on the CPU
# and compares every output with what the library's reference gives for the spec on a C-order
# copy of the input.
check_cast() {
  local name=$1 spec=$2 input=$3; shift 3
  local offs=()
  if [ "${1:-}" = --offsets ]; then offs=("$2"); shift 2; fi
  [ "${1:-}" = -- ] && shift
  ok "$name: reference" "$testgen" expect "$spec" "$input" "$work/$name/want" "${offs[@]}"
  ok "$name: mxjit cast" "$mxjit" cast "$input" --device cpu --out-dir "$work/$name/got" "$@"
  local f
  for f in "$work/$name/want"/*.npy; do
    same "$name: $(basename "$f")" "$f" "$work/$name/got/$(basename "$f")"
  done
  local nwant ngot
  nwant=$(ls "$work/$name/want" | wc -l); ngot=$(ls "$work/$name/got" | wc -l)
  [ "$nwant" = "$ngot" ] && pass || fail "$name: $ngot output files, expected $nwant"
}

gen() { "$testgen" input "$@" || fail "testgen input $*"; }

if [ "$mode" = gpu ]; then
  # ---- GPU casts equal CPU casts byte for byte -------------------------------------------------
  if ! "$mxjit" info >"$work/info.txt" 2>&1; then echo "FAIL: mxjit info"; exit 1; fi
  if grep -q "no GPU" "$work/info.txt"; then
    echo "skipped: $(grep -m1 'no GPU' "$work/info.txt" | sed 's/^gpu: *//')"
    exit 77
  fi
  gen "$work/x_c.npy" bf16 256,320 c 11 adversarial
  gen "$work/x_f.npy" bf16 256,320 f 11 adversarial
  gen "$work/x_f32.npy" f32 200,96 c 12 adversarial
  gen "$work/x3.npy" f16 4,128,64 c 13
  gpu_vs_cpu() {
    local name=$1 input=$2; shift 2
    ok "$name: gpu" "$mxjit" cast "$input" --device gpu --out-dir "$work/$name/gpu" "$@"
    ok "$name: cpu" "$mxjit" cast "$input" --device cpu --out-dir "$work/$name/cpu" "$@"
    local f
    for f in "$work/$name/cpu"/*.npy; do same "$name: $(basename "$f")" "$f" "$work/$name/gpu/$(basename "$f")"; done
  }
  gpu_vs_cpu dim0_rceil "$work/x_c.npy" --rule rceil
  gpu_vs_cpu dim1_fortran_in "$work/x_f.npy" --block-axis 0 --elems-layout col_major --scales-layout blocked128x4
  gpu_vs_cpu dim1_c_in "$work/x_c.npy" --block-axis 0 --elems-layout col_major --rule rceil --nan-policy satfinite
  gpu_vs_cpu fp4 "$work/x_f32.npy" --elem e2m1 --rule even --scales-layout blocked128x4
  gpu_vs_cpu fp6_floor "$work/x_f32.npy" --elem e3m2 --block 16 --amax
  gpu_vs_cpu int8_2d "$work/x_c.npy" --elem int8 --block 32x32
  gpu_vs_cpu fp32_scales "$work/x_c.npy" --scale fp32 --elem e5m2
  # blocks whose amax rounds past FLT_MAX under EVEN (issue 36), dim0 and dim1
  "$testgen" fill "$work/bmax.npy" bf16 64,64 7f7f || fail "testgen fill"
  gpu_vs_cpu even_fltmax "$work/bmax.npy" --rule even --elem e2m1
  gpu_vs_cpu even_fltmax_dim1 "$work/bmax.npy" --rule even --block-axis 0 --elems-layout col_major
  gpu_vs_cpu expert "$work/x3.npy" --block-axis 1 --elems-layout expert_col_major
  gpu_vs_cpu two_casts "$work/x_c.npy" --spec \
    "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) ; mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4 amax"
  # NVFP4: where the GPU generator rejects it, --device gpu is a usage error and auto falls back
  # to the CPU reference with one notice line; where it accepts it, GPU must equal CPU.
  if "$mxjit" cast "$work/x_c.npy" --preset nvfp4 --device gpu --out-dir "$work/nvfp4_probe" >/dev/null 2>&1; then
    gpu_vs_cpu nvfp4_te "$work/x_c.npy" --preset nvfp4
    gpu_vs_cpu nvfp4_torchao "$work/x_f32.npy" --preset nvfp4 --convention torchao --amax
  else
    ok "nvfp4 auto" "$mxjit" cast "$work/x_c.npy" --preset nvfp4 --out-dir "$work/nvfp4"
    grep -q "^mxjit: note: .*CPU reference" "$work/err.txt" && pass || fail "nvfp4 auto: no fallback notice"
    err "nvfp4 on --device gpu" "NVFP4" 1 "$mxjit" cast "$work/x_c.npy" --preset nvfp4 --device gpu --out-dir "$work/n2"
  fi
  # Jagged groups: the same, for the per-group FP32 scales.
  "$testgen" offsets "$work/offs.npy" 100,180,256 || fail "testgen offsets"
  if "$mxjit" cast "$work/x_c.npy" --scale fp32 --groups "$work/offs.npy" --device gpu --out-dir "$work/g_probe" \
      >/dev/null 2>&1; then
    gpu_vs_cpu groups "$work/x_c.npy" --scale fp32 --groups "$work/offs.npy"
  else
    ok "groups auto" "$mxjit" cast "$work/x_c.npy" --scale fp32 --groups "$work/offs.npy" --out-dir "$work/groups"
    grep -q "^mxjit: note: .*CPU reference" "$work/err.txt" && pass || fail "groups auto: no fallback notice"
  fi
  # explore: only the schedules asked for, each timed in interleaved rounds; one that does not
  # apply to the pipeline is refused by name.
  ok "explore schedules" "$mxjit" explore --spec "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32)" --shape 512,512 --no-layouts \
    --no-store --rounds 3 --schedule "tune(chunks_per_thread=2)" --schedule "tune(chunks_per_thread=4)"
  [ "$(grep -c ' as given .* ok$' "$work/out.txt")" = 2 ] && pass || fail "explore schedules: $(cat "$work/out.txt")"
  err "explore schedule that does not apply" "schedule 'tune\\(stages=2\\)' does not apply to variant 'as given': .*stages does not apply to the direct kernel" 1 \
    "$mxjit" explore --spec "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32)" --shape 512,512 --schedule "tune(stages=2)"
  echo "tools_cli_gpu: $passed checks passed, $failed failed"
  [ "$failed" = 0 ]
  exit
fi

# ---- CPU casts match the library's reference -----------------------------------------------------
gen "$work/x.npy" bf16 64,96 c 1
gen "$work/x_f.npy" bf16 64,96 f 1          # the same logical values, Fortran order
gen "$work/adv.npy" f32 64,128 c 2 adversarial
gen "$work/adv_f.npy" f32 64,128 f 2 adversarial
gen "$work/h.npy" f16 40,64 c 3 adversarial
gen "$work/x3.npy" bf16 4,64,32 c 4
gen "$work/odd.npy" f32 64,33 c 5
"$testgen" offsets "$work/offs.npy" 10,40,64 || fail "testgen offsets"

check_cast dim0 "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32)" "$work/x.npy" -- --rule rceil
check_cast dim0_fortran "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32)" "$work/x_f.npy" -- --rule rceil
# dim1 with column-major codes: elems.npy is still the logical tensor in C order
check_cast dim1_colmajor "bf16[2] -> mxfp8.e4m3 floor blocks(0,32)" "$work/x_f.npy" -- \
  --block-axis 0 --elems-layout col_major
check_cast dim1_blocked "f32[2] -> mxfp8.e5m2 even satfinite blocks(0,32) s:blocked128x4" "$work/adv_f.npy" -- \
  --elem e5m2 --rule even --nan-policy satfinite --block-axis 0 --elems-layout col_major --scales-layout blocked128x4
check_cast fp4 "f32[2] -> mxfp4.e2m1 rceil blocks(1,32) s:blocked8x4" "$work/adv.npy" -- \
  --elem e2m1 --rule rceil --scales-layout blocked8x4
check_cast packed_ue8m0 "bf16[2] -> mxfp8.e4m3 ceil blocks(1,32) s:mn_major_tma_packed" "$work/x.npy" -- \
  --rule ceil --scales-layout mn_major_tma_packed
check_cast split_layout "f32[2] -> mxfp8.e4m3 rceil blocks(0,32) s:modes(*,r/16,c,r%16).align(c,3)" "$work/adv.npy" -- \
  --rule rceil --block-axis 0 --scales-layout "modes(*,r/16,c,r%16).align(c,3)"
check_cast fp6_e2m3 "f16[2] -> mxfp6.e2m3 ceil blocks(1,16)" "$work/h.npy" -- --elem e2m3 --rule ceil --block 16
check_cast fp6_e3m2 "f32[2] -> mxfp6.e3m2 floor flush blocks(1,32) amax" "$work/adv.npy" -- --elem e3m2 --flush --amax
check_cast int8_2d "bf16[2] -> mxint8 floor blocks(0,1,32x32)" "$work/x.npy" -- --elem int8 --block 32x32
check_cast fp32_scales "f32[2] -> fp8.e4m3 blocks(1,32)" "$work/adv.npy" -- --scale fp32
check_cast groups "bf16[2] -> fp8.e4m3 groups(0,offs)" "$work/x.npy" --offsets "$work/offs.npy" -- \
  --scale fp32 --groups "$work/offs.npy" --group-axis 0
check_cast expert "bf16[3] -> mxfp8.e4m3 floor blocks(1,32)" "$work/x3.npy" -- \
  --block-axis 1 --elems-layout expert_col_major
check_cast nvfp4_torchao "f32[2] -> nvfp4 torchao blocks(1,16) amax" "$work/adv.npy" -- \
  --preset nvfp4 --convention torchao --amax
check_cast nvfp4_te "bf16[2] -> nvfp4 te blocks(1,16)" "$work/x.npy" -- --scale e4m3 --elem e2m1
check_cast spec_two_casts "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) ; mxfp8.e5m2 rceil blocks(0,32) amax" \
  "$work/x.npy" -- --spec "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) ; mxfp8.e5m2 rceil blocks(0,32) q:col_major amax"
# Whole-axis blocks and a peer's scale definition (vLLM's) in the text form, on the LLVM backend.
vllm_rows="f32[2] -> fp8.e4m3 scale(stored=div(fmax(amax,1e-10),448), factor=stored, apply=divide, clamp=ignore_nan(-448,448), amax_nan=ignore) blocks(1,whole)"
check_cast spec_vllm_rowwise "$vllm_rows" "$work/adv.npy" -- --spec "$vllm_rows"
check_cast spec_tensorwise "f32[2] -> fp8.e5m2 blocks(0,1,wholexwhole) ; fp8.e4m3 blocks(0,1,wholex128) amax" "$work/adv.npy" -- \
  --spec "f32[2] -> fp8.e5m2 blocks(0,1,wholexwhole) ; fp8.e4m3 blocks(0,1,wholex128) amax"
# FP4 column-major: codes packed two per byte along axis 0 (the block axis) -> elems.npy is [32,33]
ok "fp4 col_major" "$mxjit" cast "$work/odd.npy" --device cpu --elem e2m1 --block-axis 0 --elems-layout col_major \
  --out-dir "$work/fp4cm"
grep -q "elems.npy |u1\[32,33\]" "$work/out.txt" && pass || fail "fp4 col_major: elems.npy shape: $(cat "$work/out.txt")"
# --device auto without a GPU runs on the CPU reference
ok "device auto" "$mxjit" cast "$work/x.npy" --rule rceil --out-dir "$work/auto"
same "device auto = cpu" "$work/auto/elems.npy" "$work/dim0/got/elems.npy"

# ---- compile and the cache -------------------------------------------------------------------------
# A fresh cache: the casts above stored the CPU backend's objects in the shared one.
export MXJIT_CACHE_DIR="$work/cache_compile"
ok "compile cuda" "$mxjit" compile --rule rceil --arch sm_90a --emit cuda --out "$work/k.cu"
grep -q "__global__" "$work/k.cu" && pass || fail "compile cuda: no __global__ in the source"
ok "compile cubin" "$mxjit" compile --rule rceil --arch sm_90a --out "$work/k.cubin"
grep -q "from the disk cache" "$work/out.txt" && pass || fail "compile cubin: expected a cache hit: $(cat "$work/out.txt")"
[ "$(head -c 4 "$work/k.cubin" | od -An -c | tr -d ' ')" = "177ELF" ] && pass || fail "compile cubin: not an ELF file"
ok "compile ptx sm_100a" "$mxjit" compile --spec "bf16[2] -> mxfp4.e2m1 rceil blocks(1,32)" --arch sm_100a --emit ptx \
  --out "$work/k.ptx"
grep -q "\.target sm_100a" "$work/k.ptx" && pass || fail "compile ptx: no .target sm_100a"
ok "compile resource usage" "$mxjit" compile --arch sm_90a --input-order f --block-axis 0 --elems-layout col_major \
  --resource-usage --out "$work/k2.cubin"
grep -q "registers" "$work/out.txt" && pass || fail "compile --resource-usage: no ptxas report"
ok "cache ls" "$mxjit" cache ls
grep -q "^2 entries" "$work/out.txt" && pass || fail "cache ls: expected 2 entries: $(cat "$work/out.txt")"
key=$(grep -m1 "sm_90a" "$work/out.txt" | cut -c1-32)
ok "cache stats" "$mxjit" cache stats
grep -q "^entries: *2" "$work/out.txt" && pass || fail "cache stats"
ok "cache verify" "$mxjit" cache verify
ok "cache dump" "$mxjit" cache dump "${key:0:10}" --out "$work/dump.cubin"
ok "info" "$mxjit" info
grep -q "^nvrtc:" "$work/out.txt" && grep -q "^cache size: .*2 entries" "$work/out.txt" && pass || fail "info: $(cat "$work/out.txt")"

# ---- bad input: exit 2 and one clear line --------------------------------------------------------------
"$testgen" bad "$work/bad" || fail "testgen bad"
out=(--out-dir "$work/o")
err "bad magic" "not a \.npy file" 1 "$mxjit" cast "$work/bad/bad_magic.npy" "${out[@]}"
err "bad header dict" "malformed \.npy header.*fortran_order" 1 "$mxjit" cast "$work/bad/bad_dict.npy" "${out[@]}"
err "header without shape" "has no 'shape'" 1 "$mxjit" cast "$work/bad/no_shape.npy" "${out[@]}"
err "truncated header" "truncated \.npy file" 1 "$mxjit" cast "$work/bad/short_header.npy" "${out[@]}"
err "descr <i8" "unsupported dtype '<i8'" 1 "$mxjit" cast "$work/bad/i8.npy" "${out[@]}"
err "descr >f4" "big-endian dtype '>f4'" 1 "$mxjit" cast "$work/bad/big_endian.npy" "${out[@]}"
err "truncated data" "truncated \.npy data.*needs 512 bytes" 1 "$mxjit" cast "$work/bad/truncated.npy" "${out[@]}"
err "huge shape" "too many elements" 1 "$mxjit" cast "$work/bad/huge.npy" "${out[@]}"
err "scalar input" "needs rank >= 1" 1 "$mxjit" cast "$work/bad/scalar.npy" "${out[@]}"
err "u8 input" "cast input must be <u2" 1 "$mxjit" cast "$work/bad/u8.npy" "${out[@]}"
err "missing input" "does not exist" 1 "$mxjit" cast "$work/nope.npy" "${out[@]}"
err "unknown --elem" "--elem: e4m4 not in" 1 "$mxjit" cast "$work/x.npy" --elem e4m4 "${out[@]}"
err "unknown --rule" "--rule: rceli not in" 1 "$mxjit" cast "$work/x.npy" --rule rceli "${out[@]}"
err "unknown --scales-layout" "--scales-layout" 1 "$mxjit" cast "$work/x.npy" --scales-layout blocked64 "${out[@]}"
err "unknown --device" "--device: tpu not in" 1 "$mxjit" cast "$work/x.npy" --device tpu "${out[@]}"
err "malformed --block" "--block: block size '3y'" 1 "$mxjit" cast "$work/x.npy" --block 3y "${out[@]}"
err "spec typo" "spec:1:23: unknown rule 'rceli'" 3 "$mxjit" cast "$work/x.npy" --spec "bf16[2] -> mxfp8.e4m3 rceli" \
  "${out[@]}"
grep -q "^ *\^$" "$work/err.txt" && pass || fail "spec typo: no caret line"
err "spec and flags" "--spec excludes --elem" 1 "$mxjit" cast "$work/x.npy" --spec "bf16[2] -> mxint8" --elem e5m2 \
  "${out[@]}"
err "spec dtype mismatch" "holds bf16\[64,96\].*spec's input is f32\[2\]" 1 "$mxjit" cast "$work/x.npy" \
  --spec "f32[2] -> mxfp8.e4m3" "${out[@]}"
err "spec rank mismatch" "spec's input is bf16\[3\]" 1 "$mxjit" cast "$work/x.npy" --spec "bf16[3] -> mxfp8.e4m3" \
  "${out[@]}"
err "fp4 odd extent" "FP4 packs two codes per byte along axis 1, whose extent 33 is odd" 1 \
  "$mxjit" cast "$work/odd.npy" --elem e2m1 "${out[@]}"
err "block not a power of two" "block size 48 is not a power of two" 1 "$mxjit" cast "$work/x.npy" --block 48 "${out[@]}"
err "block axis out of range" "axis 5 is out of range" 1 "$mxjit" cast "$work/x.npy" --block-axis 5 "${out[@]}"
err "2-D block with an axis" "drop --block-axis" 1 "$mxjit" cast "$work/x.npy" --block 32x32 --block-axis 0 "${out[@]}"
err "e4m3 scale, wrong elem" "needs --elem e2m1" 1 "$mxjit" cast "$work/x.npy" --scale e4m3 --elem e5m2 "${out[@]}"
err "rule without e8m0" "--rule ceil applies to E8M0 scales only" 1 "$mxjit" cast "$work/x.npy" --scale fp32 --rule ceil \
  "${out[@]}"
err "preset and elem" "--preset excludes --elem" 1 "$mxjit" cast "$work/x.npy" --preset nvfp4 --elem e4m3 "${out[@]}"
err "groups wrong dtype" "group ends must be a 1-D <i4" 1 "$mxjit" cast "$work/x.npy" --scale fp32 --groups "$work/x.npy" \
  "${out[@]}"
err "group-axis without groups" "--group-axis requires --groups" 1 "$mxjit" cast "$work/x.npy" --group-axis 1 "${out[@]}"
if "$mxjit" info 2>/dev/null | grep -q "no GPU"; then
  err "--device gpu without GPU" "--device gpu: no GPU" 1 "$mxjit" cast "$work/x.npy" --device gpu "${out[@]}"
  err "compile without --arch" "--arch is required without a GPU" 1 "$mxjit" compile
fi
touch "$work/a_file"
err "unwritable out dir" "--out-dir '.*a_file/sub': cannot create it" 1 "$mxjit" cast "$work/x.npy" \
  --out-dir "$work/a_file/sub"
err "bad arch" "arch 'sm_91x'" 1 "$mxjit" compile --arch sm_91x
err "cubin to stdout" "give --out FILE" 1 "$mxjit" compile --arch sm_90a
err "unwritable --out" "--out '/nonexistent-dir/k.cubin'" 1 "$mxjit" compile --arch sm_90a --out /nonexistent-dir/k.cubin
err "cache dump bad key" "must be 4 to 32 hex digits" 1 "$mxjit" cache dump zz --out "$work/d.cubin"
err "cache dump absent key" "no cache entry has a key starting with 'abcdef12'" 1 \
  "$mxjit" cache dump abcdef12 --out "$work/d.cubin"
err "bench bad schedule" "schedule 'tune\\(1,2\\)': the positional form of generator 23" 1 "$mxjit" bench --schedule "tune(1,2)"
err "explore bad schedule" "schedule 'tune\\(cluster=4, unroll=2\\)': unknown field 'unroll'" 1 "$mxjit" explore \
  --spec "bf16[2] -> mxfp8.e4m3 blocks(1,32)" --shape 64,64 --schedule "tune(cluster=4)" --tuning "tune(cluster=4, unroll=2)"
err "compile schedule that does not apply" "stages does not apply to the direct kernel, which runs this cast" 1 \
  "$mxjit" compile --arch sm_90a --emit cuda --schedule "tune(stages=2)"
ok "compile with a schedule" "$mxjit" compile --arch sm_90a --emit cuda --out "$work/tiled.cu" --schedule "tune(kernel=tiled, tile_rows=32)"
grep -q "kernel=tiled, tile_rows=32" "$work/tiled.cu" && pass || fail "compile --schedule: the banner does not name the schedule"
err "explore rounds" "--rounds: Value 0 not in range 1 to 100" 1 "$mxjit" explore --spec "bf16[2] -> mxfp8.e4m3 blocks(1,32)" \
  --shape 64,64 --rounds 0
err "no subcommand" "A subcommand is required" 1 "$mxjit"
err "unknown subcommand" "unknown command 'cats' \\(commands: bench, cache, cast" 1 "$mxjit" cats

# ---- hostile input (issue 36): never a crash, a hang or a wrong result ------------------------
# bounded CMD...: at most 20 s and 4 GB of address space (a regression must not take the machine).
bounded() { ( ulimit -v 4000000; exec timeout 20 "$@" ); }
export MXJIT_CACHE_DIR="$work/cache_hostile"
# 1. rank-1 casts through the direct kernel (blocks of 8 or more) generate and compile
ok "rank 1 cubin sm_90a" bounded "$mxjit" compile --rank 1 --arch sm_90a --out "$work/r1.cubin"
ok "rank 1 cubin sm_100a" bounded "$mxjit" compile --spec "f32[1] -> mxfp8.e4m3" --arch sm_100a --out "$work/r1b.cubin"
# 2. blocks past the CPU backend's tile: the reference runs them (one notice), same bytes
gen "$work/x64.npy" f32 64,64 c 36 adversarial
for blk in 4294967296 2147483648x2; do
  ok "block $blk on the reference" bounded "$mxjit" cast "$work/x64.npy" --block $blk --device reference --out-dir "$work/blk_ref"
  ok "block $blk on --device cpu" bounded "$mxjit" cast "$work/x64.npy" --block $blk --device cpu --out-dir "$work/blk_cpu"
  grep -q "^mxjit: note: CPU backend: blocks of .* exceed its tile of 2^22 values; running the CPU reference$" "$work/err.txt" \
    && [ "$(wc -l <"$work/err.txt")" = 1 ] && pass || fail "block $blk: expected one notice: $(cat "$work/err.txt")"
  same "block $blk: elems" "$work/blk_ref/elems.npy" "$work/blk_cpu/elems.npy"
  same "block $blk: scales" "$work/blk_ref/scales.npy" "$work/blk_cpu/scales.npy"
done
# 3. a bf16 block of 0x7f7f rounds past FLT_MAX under EVEN: E4M3 byte 247, E2M1 253, INT8 254 (the
#    reference once gave 118, 124, 126); the CPU backend gives the same bytes
"$testgen" fill "$work/bmax.npy" bf16 4,64 7f7f || fail "testgen fill"
for fe in e4m3:247 e2m1:253 int8:254; do
  ok "even ${fe%:*} on the reference" "$mxjit" cast "$work/bmax.npy" --rule even --elem "${fe%:*}" --device reference \
    --out-dir "$work/even_ref"
  [ "$(tail -c 1 "$work/even_ref/scales.npy" | od -An -tu1 | tr -d ' ')" = "${fe#*:}" ] && pass \
    || fail "even ${fe%:*}: scale byte $(tail -c 1 "$work/even_ref/scales.npy" | od -An -tu1), expected ${fe#*:}"
  ok "even ${fe%:*} on --device cpu" "$mxjit" cast "$work/bmax.npy" --rule even --elem "${fe%:*}" --device cpu \
    --out-dir "$work/even_cpu"
  same "even ${fe%:*}: elems" "$work/even_ref/elems.npy" "$work/even_cpu/elems.npy"
  same "even ${fe%:*}: scales" "$work/even_ref/scales.npy" "$work/even_cpu/scales.npy"
done
# 7. a block past 2^40 is refused when the pipeline is built; past a GPU tile, when it is generated
err "block past 2^40" "block size 4611686018427387904 exceeds the limit 2\^40" 1 \
  bounded "$mxjit" compile --block 4611686018427387904 --arch sm_90a --out "$work/k7.cubin"
err "block past a GPU tile" "GPU generator: blocks of 1x1099511627776 elements .* do not fit one tile" 1 \
  bounded "$mxjit" compile --block 1099511627776 --arch sm_90a --out "$work/k7.cubin"
# 4. an empty tensor costs O(1), whatever its other extents; its outputs are empty .npy files
for shape in 0,4611686018427387904,4611686018427387904 4611686018427387904,4611686018427387904,0 0,1000000000; do
  gen "$work/empty.npy" f32 "$shape" c 1
  for dev in cpu reference; do
    ok "empty [$shape] on $dev" bounded "$mxjit" cast "$work/empty.npy" --device $dev --out-dir "$work/empty_$dev"
  done
  same "empty [$shape]: elems" "$work/empty_cpu/elems.npy" "$work/empty_reference/elems.npy"
  same "empty [$shape]: scales" "$work/empty_cpu/scales.npy" "$work/empty_reference/scales.npy"
done
grep -q "elems.npy |u1\[0,1000000000\]" "$work/out.txt" && pass || fail "empty: $(cat "$work/out.txt")"
# 6. the .npy reader checks the header before reading data, and reads only regular files
err "/dev/zero" "cannot read '/dev/zero': it is not a regular file \(a device\)" 1 bounded "$mxjit" cast /dev/zero \
  --out-dir "$work/o"
mkfifo "$work/fifo.npy"
err "a FIFO" "it is not a regular file \(a FIFO\)" 1 bounded "$mxjit" cast "$work/fifo.npy" --out-dir "$work/o"
truncate -s 3G "$work/junk.npy"  # sparse: no disk blocks
err "3 GB of junk" "junk.npy: not a \.npy file" 1 bounded "$mxjit" cast "$work/junk.npy" --out-dir "$work/o"
cp "$work/x64.npy" "$work/long.npy" && truncate -s 3G "$work/long.npy"
err "3 GB after a 64x64 header" "3221208960 unexpected bytes after the data of shape \(64, 64\)" 1 \
  bounded "$mxjit" cast "$work/long.npy" --out-dir "$work/o"
rm -f "$work/fifo.npy" "$work/junk.npy" "$work/long.npy"
# 5. layout draw checks every count: huge shapes are refused at once, a bad --cell by name
err "draw (2^63-1)^2" "needs more than max_cells 65536 cells" 1 bounded "$mxjit" layout draw --layout blocked128x4 \
  --shape 9223372036854775807,9223372036854775807 --out "$work/l1.svg"
[ ! -e "$work/l1.svg" ] && pass || fail "draw (2^63-1)^2 wrote an SVG"
err "draw 2^62 x 4" "needs more than max_cells 65536 cells" 1 bounded "$mxjit" layout draw --layout blocked128x4 \
  --shape 4611686018427387904,4 --out "$work/l2.svg"
err "draw --cell -5" "--cell: Value -5 not in range 8 to 256" 1 "$mxjit" layout draw --layout blocked128x4 --shape 36,5 \
  --cell -5 --out "$work/l3.svg"
ok "draw 36x5" "$mxjit" layout draw --layout blocked128x4 --shape 36,5 --out "$work/l4.svg"
# 11. messages: the user's bad group ends on --device cpu are an error (no fallback note first);
# spec errors escape control characters; --spec "" is an error; a write that fails (here: past
# the file size limit, as on a full disk) exits 1 and leaves no file and no partial output line
"$testgen" offsets "$work/offs_bad.npy" 10,5,64 || fail "testgen offsets"
err "bad group ends on --device cpu" "^mxjit: error: offsets 'offs': group end \[1\] = 5 is below the previous end 10" 1 \
  "$mxjit" cast "$work/x.npy" --scale fp32 --groups "$work/offs_bad.npy" --device cpu --out-dir "$work/o"
err "spec with control characters" "unknown option '\\\\x1b\[31mred'" 3 "$mxjit" cast "$work/x.npy" \
  --spec "$(printf 'bf16[2] -> mxfp8.e4m3 \033[31mred')" --out-dir "$work/o"
! grep -q "$(printf '\033')" "$work/err.txt" && pass || fail "spec with control characters: a raw ESC on stderr"
err "--spec ''" "spec:1:1: empty spec" 3 "$mxjit" cast "$work/x.npy" --spec "" --out-dir "$work/o"
rm -rf "$work/full"
fails "cast past the file size limit" "output 'q': cannot write '.*/full/elems.npy': File too large \(nothing was written\)" \
  bash -c "ulimit -f 2; trap '' XFSZ; exec \"\$0\" cast \"\$1\" --device reference --out-dir \"\$2\"" "$mxjit" "$work/x.npy" "$work/full"
[ -z "$(ls -A "$work/full")" ] && [ ! -s "$work/out.txt" ] && pass || fail "cast past the file size limit left: $(ls -A "$work/full") $(cat "$work/out.txt")"
fails "compile past the file size limit" "--out '.*k_full.cu': cannot write .*File too large" \
  bash -c "ulimit -f 2; trap '' XFSZ; exec \"\$0\" compile --arch sm_90a --emit cuda --out \"\$1\"" "$mxjit" "$work/k_full.cu"
[ ! -e "$work/k_full.cu" ] && pass || fail "compile past the file size limit left a partial file"
# 12. a spec of 3000 casts is refused at once
err "3000 casts" "a spec has at most 8 casts" 3 bounded "$mxjit" compile --arch sm_90a --emit cuda \
  --spec "bf16[2] -> $(for i in $(seq 2999); do printf 'mxfp8.e4m3 ; '; done)mxfp8.e4m3"
# 14. two casts into one --out-dir at once leave the files of one of them, never a mix
gen "$work/race_a.npy" bf16 1024,2048 c 21
gen "$work/race_b.npy" bf16 1024,2048 c 22
ok "race: a" "$mxjit" cast "$work/race_a.npy" --device reference --out-dir "$work/race_a"
ok "race: b" "$mxjit" cast "$work/race_b.npy" --device reference --out-dir "$work/race_b"
mixed=0
for round in $(seq 20); do
  rm -rf "$work/race"
  "$mxjit" cast "$work/race_a.npy" --device reference --out-dir "$work/race" >/dev/null 2>&1 &
  "$mxjit" cast "$work/race_b.npy" --device reference --out-dir "$work/race" >/dev/null 2>&1
  wait
  for w in a b; do
    cmp -s "$work/race/elems.npy" "$work/race_$w/elems.npy" && e=$w
    cmp -s "$work/race/scales.npy" "$work/race_$w/scales.npy" && sc=$w
  done
  [ "${e:-x}" = "${sc:-y}" ] || mixed=$((mixed + 1))
  unset e sc
done
[ "$mixed" = 0 ] && [ "$(ls -A "$work/race" | wc -l)" = 2 ] && pass \
  || fail "race: $mixed of 20 rounds mixed two casts' files; left: $(ls -A "$work/race")"
# 8-10, 13. the cache tool says what is true
export MXJIT_CACHE_DIR="$work/c"
ok "cache with one entry" "$mxjit" compile --arch sm_90a --emit cuda --out "$work/c.cu"
cp "$work/c/kernels.sqlite" "$work/good.sqlite"
fresh_cache() { rm -rf "$work/c"; mkdir -m 700 "$work/c"; cp "$work/good.sqlite" "$work/c/kernels.sqlite"; chmod 600 "$work/c/kernels.sqlite"; }
poke() { printf "$2" | dd of="$work/c/kernels.sqlite" bs=1 seek="$1" conv=notrunc status=none; }  # poke OFFSET BYTES
fresh_cache; poke 4101 '\xff\xff'  # page 2's cell content area past the page: quick_check fails at open
fails "verify a damaged file" "^file damaged: fails quick_check \(\*\*\* in database main \*\*\* .*moved it aside to" \
  "$mxjit" cache verify
[ "$(grep -c . "$work/err.txt")" = 1 ] && pass || fail "verify a damaged file: $(cat "$work/err.txt")"  # one line
ls "$work/c" | grep -q "kernels.sqlite.bad-" && pass || fail "verify a damaged file: not moved aside"
fresh_cache; chmod 666 "$work/c/kernels.sqlite"
fails "verify a cache writable by others" "^mxjit: error: cache verify: the disk cache is not usable .*nothing was checked" \
  "$mxjit" cache verify
fails "clear a cache writable by others" "^mxjit: error: cache clear: .*nothing was deleted" "$mxjit" cache clear
rm -rf "$work/c"; mkdir -m 700 "$work/c"; mkfifo -m 600 "$work/c/kernels.sqlite"
fails "verify a FIFO" "is not a regular file; using memory only" "$mxjit" cache verify
rm -rf "$work/c"; mkdir -p -m 700 "$work/c/kernels.sqlite"
fails "verify a directory" "is not a regular file; using memory only" "$mxjit" cache verify
MXJIT_CACHE=off fails "verify a disabled cache" "the disk cache is disabled \(MXJIT_CACHE=off\); nothing was checked" \
  "$mxjit" cache verify
fresh_cache  # 9. a DELETE that fails (here: the journal past the file size limit) deletes nothing, exit 1
fails "clear that cannot write" "cache clear: nothing was deleted" bash -c "ulimit -f 8; trap '' XFSZ; exec \"\$0\" cache clear" "$mxjit"
ok "cache ls after a failed clear" "$mxjit" cache ls
grep -q "^1 entry" "$work/out.txt" && pass || fail "failed clear: $(cat "$work/out.txt")"
for fault in "18 \x05" "47 \x0c"; do  # 10. header damage SQLite survives read-only or "unsupported": moved aside once
  fresh_cache; poke ${fault% *} "${fault#* }"
  ok "header byte ${fault% *}: first use" "$mxjit" compile --rule even --arch sm_90a --emit cuda --out "$work/c.cu"
  grep -q "has a damaged SQLite header.*moved it aside to" "$work/err.txt" && pass || fail "header byte ${fault% *}: $(cat "$work/err.txt")"
  ok "header byte ${fault% *}: next use" "$mxjit" compile --rule ceil --arch sm_90a --emit cuda --out "$work/c.cu"
  [ ! -s "$work/err.txt" ] && pass || fail "header byte ${fault% *}: still warns: $(cat "$work/err.txt")"
  ok "header byte ${fault% *}: cache ls" "$mxjit" cache ls
  grep -q "^2 entries" "$work/out.txt" && pass || fail "header byte ${fault% *}: $(cat "$work/out.txt")"
done
rm -rf "$work/c"  # 13. MXJIT_CACHE values it does not know: one warning naming the accepted ones, cache on
MXJIT_CACHE=banana ok "MXJIT_CACHE=banana" "$mxjit" compile --arch sm_90a --emit cuda --out "$work/c.cu"
[ "$(cat "$work/err.txt")" = "mxjit: warning: MXJIT_CACHE='banana' is not one of 0, off, false, no (cache off) or 1, on, true, yes (cache on); keeping the kernel cache on" ] \
  && [ -e "$work/c/kernels.sqlite" ] && pass || fail "MXJIT_CACHE=banana: $(cat "$work/err.txt")"
rm -rf "$work/c"
MXJIT_CACHE=" 0" ok "MXJIT_CACHE=' 0'" "$mxjit" compile --arch sm_90a --emit cuda --out "$work/c.cu"
[ ! -e "$work/c" ] && [ ! -s "$work/err.txt" ] && pass || fail "MXJIT_CACHE=' 0': the cache was used"
export MXJIT_CACHE_DIR="$work/cache_compile"

ok "cache clear" "$mxjit" cache clear
ok "cache ls after clear" "$mxjit" cache ls
grep -q "^0 entries" "$work/out.txt" && pass || fail "cache ls after clear: $(cat "$work/out.txt")"

echo "tools_cli: $passed checks passed, $failed failed"
[ "$failed" = 0 ]
