#!/usr/bin/env bash
# tests/attention/check_sm90_sass.sh — no GPU needed: the Hopper attention kernels compiled to pipelined wgmma (HGMMA), TMA loads, mbarriers and setmaxnreg, without spills.
# usage: check_sm90_sass.sh CUOBJDUMP LIBRARY   (LIBRARY: libringgpt_cuda.a; CUOBJDUMP may be empty or
# *-NOTFOUND: then the check SKIPs — install the CUDA toolkit's cuobjdump, e.g. pip install nvidia-cuda-cuobjdump,
# and reconfigure with -DCUOBJDUMP=/path/to/cuobjdump).
set -uo pipefail
CUOBJDUMP=${1:-} LIB=${2:?usage: check_sm90_sass.sh CUOBJDUMP LIBRARY}
if [ -z "$CUOBJDUMP" ] || [[ "$CUOBJDUMP" == *NOTFOUND ]] || ! [ -x "$CUOBJDUMP" ]; then
  echo "SKIP: no cuobjdump (check_sm90_sass)"; exit 77
fi
[ -f "$LIB" ] || { echo "FAIL: $LIB does not exist"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$CUOBJDUMP" -sass "$LIB" > "$tmp/sass" 2>&1 || { echo "FAIL: cuobjdump -sass $LIB"; exit 1; }
"$CUOBJDUMP" -res-usage "$LIB" > "$tmp/res" 2>&1 || { echo "FAIL: cuobjdump -res-usage $LIB"; exit 1; }
fails=0 passes=0
for k in fwd_kernelILi64 fwd_kernelILi128 dkdv_kernelILi64 dkdv_kernelILi128 dq_kernelILi64 dq_kernelILi128; do
  awk -v f="$k" '/Function :/ { on = index($0, f) > 0 } on' "$tmp/sass" > "$tmp/k"
  hgmma=$(grep -c HGMMA "$tmp/k") tma=$(grep -c UTMALDG "$tmp/k") syncs=$(grep -c SYNCS "$tmp/k")
  maxreg=$(grep -c USETMAXREG "$tmp/k") spill=$(grep -cE '\b(STL|LDL)\b' "$tmp/k")
  # ptxas serialises wgmma it cannot pipeline (info C7513): then every HGMMA gets its own wait.
  depbar=$(grep -c 'WARPGROUP.DEPBAR' "$tmp/k")
  res=$(grep -A1 "Function _Z[0-9]*$k" "$tmp/res" | tail -1)
  regs=$(sed -nE 's/.*REG:([0-9]+).*/\1/p' <<< "$res") local=$(sed -nE 's/.*LOCAL:([0-9]+).*/\1/p' <<< "$res")
  stack=$(sed -nE 's/.*STACK:([0-9]+).*/\1/p' <<< "$res")
  line="$k: HGMMA $hgmma (WARPGROUP.DEPBAR $depbar), UTMALDG $tma, SYNCS $syncs, USETMAXREG $maxreg, STL/LDL $spill, REG ${regs:-?} STACK ${stack:-?} LOCAL ${local:-?}"
  if [ "$hgmma" -gt 0 ] && [ $((2 * depbar)) -le "$hgmma" ] && [ "$tma" -gt 0 ] && [ "$syncs" -gt 0 ] && [ "$maxreg" -ge 2 ] && [ "$spill" -eq 0 ] &&
     [ "${local:-1}" -eq 0 ] && [ "${stack:-1}" -eq 0 ]; then
    echo "ok   $line"; passes=$((passes + 1))
  else
    echo "FAIL $line"; fails=$((fails + 1))
  fi
done
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
