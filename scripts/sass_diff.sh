#!/usr/bin/env bash
# SASS of a fixed list of kernel variants (bench/variants.cpp, both sm_90a and sm_100a), saved or
# compared: a generator change that should not change the machine code proves it here, without a
# GPU. Instruction streams are compared with the kernel's name and symbol names normalised away;
# a variant the generator refuses (<variant>.refused) must be refused on both sides, in any words.
#
#   scripts/sass_diff.sh save DIR       compile every variant, write DIR/<arch>/<variant>.sass
#   scripts/sass_diff.sh compare DIR    compile again into a temporary folder and diff against DIR
#
# Needs build/bench/mxjit_variants (BUILD=<build dir> to use another) and cuobjdump (on PATH,
# in /usr/local/cuda/bin, or CUOBJDUMP=<path>). Exit status: 0 identical, 1 differences, 2 usage.
set -euo pipefail
mode=${1:-}; dir=${2:-}
[ -n "$mode" ] && [ -n "$dir" ] || { echo "usage: $0 save|compare DIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
variants=${BUILD:-$root/build}/bench/mxjit_variants
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
[ -x "$variants" ] || { echo "$0: $variants not built" >&2; exit 2; }
[ -x "$cuobjdump" ] || { echo "$0: no cuobjdump (set CUOBJDUMP)" >&2; exit 2; }

# One cubin -> .sass beside it: the kernel's name, relocation and label symbols normalised.
disassemble_one() {
  local f=$1 text name
  text=$("$cuobjdump" -sass "$f")
  name=$(printf '%s\n' "$text" | sed -n 's/^[[:space:]]*Function : //p' | head -1)
  printf '%s\n' "$text" | grep -v '^[[:space:]]*$' | grep -v -e 'code for sm_' -e '^Fatbin' -e 'arch = ' -e 'code version' \
    -e 'host = ' -e 'compile_size' -e '\.section' |
    sed -e "s/${name:-@@none@@}/KERNEL/g" -e 's/\.L_x_[0-9]*/.L/g' > "${f%.cubin}.sass"
  rm "$f"
}
export -f disassemble_one
export cuobjdump
# DIR/<arch>/*.cubin -> *.sass, as many at once as there are cores.
disassemble() {
  find "$1" -name '*.cubin' -print0 | xargs -0 -r -n 8 -P "$(nproc)" bash -c 'for f; do disassemble_one "$f"; done' _
}

out=$dir
[ "$mode" = compare ] && out=$(mktemp -d)
mkdir -p "$out"
MXJIT_CACHE=0 "$variants" "$out" > /dev/null
disassemble "$out"
[ "$mode" = save ] && { echo "saved $(ls "$out"/*/*.sass | wc -l) kernels' SASS in $out"; exit 0; }

status=0 same=0
for f in "$dir"/*/*.sass "$dir"/*/*.refused; do
  [ -e "$f" ] || continue
  rel=${f#"$dir"/}
  if [ ! -e "$out/$rel" ]; then echo "missing now: $rel"; status=1
  elif [ "${f%.refused}" = "$f" ] && ! cmp -s "$f" "$out/$rel"; then echo "differs: $rel"; status=1
  else same=$((same + 1)); fi
done
for f in "$out"/*/*.sass "$out"/*/*.refused; do
  [ -e "$f" ] || continue
  rel=${f#"$out"/}
  [ -e "$dir/$rel" ] || { echo "new: $rel"; status=1; }
done
echo "$same identical; the new SASS is in $out"
exit $status
