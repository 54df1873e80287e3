#!/usr/bin/env bash
# tests/check_kernels_sass.sh — no GPU needed: every CUDA kernel of the attention and model libraries (the opt-in sm_90a ones aside: check_sm90_sass.sh) runs without local memory, and the memory-bound ones load and store 16 bytes at a time.
# usage: check_kernels_sass.sh CUOBJDUMP LIBRARY...   (the static libraries rg_attention, rg_model; CUOBJDUMP may be
# empty or *-NOTFOUND: then the check SKIPs — pip install nvidia-cuda-cuobjdump and reconfigure, or -DCUOBJDUMP=PATH)
# Prints one line per kernel: registers, stack, local memory, spill instructions, 16-byte accesses.
set -uo pipefail
CUOBJDUMP=${1:-}
shift
if [ -z "$CUOBJDUMP" ] || [[ "$CUOBJDUMP" == *NOTFOUND ]] || ! [ -x "$CUOBJDUMP" ]; then
  echo "SKIP: no cuobjdump (check_kernels_sass)"; exit 77
fi
[ $# -gt 0 ] || { echo "usage: check_kernels_sass.sh CUOBJDUMP LIBRARY..."; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Kernels (the start of the mangled name) that must use 16-byte global loads: the vectorized memory-bound ones.
VECTOR=(_Z22rmsnorm_forward_kernelIfLi4E _Z22rmsnorm_forward_kernelI13__nv_bfloat16Li4E _Z21swiglu_forward_kernelIfLi4E
        _Z21swiglu_forward_kernelI13__nv_bfloat16Li8E _Z22swiglu_backward_kernelIfLi4E
        _Z22swiglu_backward_kernelI13__nv_bfloat16Li8E _Z10add_kernelILi4E _Z12scale_kernelILi4E _Z12adamw_kernel
        _Z12merge_kernelILi64E _Z12merge_kernelILi128E _Z20cudnn_to_bf16_kernel _Z15add_bf16_kernel)
fails=0 passes=0 seen=""
for lib in "$@"; do
  [ -f "$lib" ] || { echo "FAIL: $lib does not exist"; exit 1; }
  "$CUOBJDUMP" -sass "$lib" > "$tmp/sass" 2>&1 || { echo "FAIL: cuobjdump -sass $lib"; exit 1; }
  "$CUOBJDUMP" -res-usage "$lib" > "$tmp/res" 2>&1 || { echo "FAIL: cuobjdump -res-usage $lib"; exit 1; }
  # every kernel of the library's sm_90 code but the Hopper attention's (fwd_kernel, dkdv_kernel, dq_kernel: only
  # in a -DRINGGPT_SM90_KERNELS=ON build, checked by tests/attention/check_sm90_sass.sh)
  grep -oE 'Function : [A-Za-z0-9_]+' "$tmp/sass" | awk '{ print $3 }' | sort -u |
    grep -vE '^_Z[0-9]+(fwd_kernel|dkdv_kernel|dq_kernel)I' > "$tmp/kernels"
  while read -r k; do
    awk -v f="$k" '/Function :/ { on = ($3 == f) } on' "$tmp/sass" > "$tmp/k"
    spill=$(grep -cE '\b(STL|LDL)\b' "$tmp/k") ldg=$(grep -cE 'LDG\.E[.A-Z0-9_]*\.128' "$tmp/k")
    stg=$(grep -cE 'STG\.E[.A-Z0-9_]*\.128' "$tmp/k")
    res=$(grep -A1 "Function $k:" "$tmp/res" | tail -1)
    regs=$(sed -nE 's/.*REG:([0-9]+).*/\1/p' <<< "$res") stack=$(sed -nE 's/.*STACK:([0-9]+).*/\1/p' <<< "$res")
    local_=$(sed -nE 's/.*LOCAL:([0-9]+).*/\1/p' <<< "$res")
    want_vec=0
    for v in "${VECTOR[@]}"; do [[ "$k" == "$v"* ]] && want_vec=1; done
    line="$(c++filt "$k" 2>/dev/null | cut -c1-90 || echo "$k"): REG ${regs:-?} STACK ${stack:-?} LOCAL ${local_:-?} STL/LDL $spill LDG.128 $ldg STG.128 $stg"
    if [ "$spill" -eq 0 ] && [ "${local_:-1}" -eq 0 ] && [ "${stack:-1}" -eq 0 ] && { [ $want_vec -eq 0 ] || [ "$ldg" -gt 0 ]; }; then
      echo "ok   $line"; passes=$((passes + 1))
    else
      echo "FAIL $line$([ $want_vec -eq 1 ] && [ "$ldg" -eq 0 ] && echo ' (no 16-byte loads)')"; fails=$((fails + 1))
    fi
    seen="$seen $k"
  done < "$tmp/kernels"
done
for v in "${VECTOR[@]}"; do   # a vectorized kernel that is not there at all is a failure too (renamed, not built)
  [[ "$seen" == *" $v"* ]] || { echo "FAIL: no kernel matching $v in $*"; fails=$((fails + 1)); }
done
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
