#!/usr/bin/env bash
# tests/checkpoints/resume_layout.sh — save at dp×sp = 1×1, resume at 1×2 and 2×2 (and from 2×2 back to 1×1): same data order, losses within 1e-4.
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/common.sh"
make_text "$W/text.txt" 300
mpirun_np() { local np=$1; shift; "$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np "$np" "$@"; }
# 4 sequences per step whatever the layout: --batch is per data-parallel group.
COMMON=(train --data "$W/text.txt" --model tiny --seq-len 64 --grad-accum 1 --steps 8 --warmup 2 --threads 1
        --eval-every 4 --eval-batches 2 --ckpt-every 4 --log-every 100)
OMP_NUM_THREADS=1 "$BIN" "${COMMON[@]}" --batch 4 --out "$W/ref" > /dev/null
# same as: the reference's steps 5..8, within rounding
close() {
  paste -d' ' <(losses "$W/ref/metrics.jsonl" | tail -n +5) <(losses "$1/metrics.jsonl") | awk '
    { n++; d = $2 - $4; if (d < 0) d = -d; if ($1 != $3) bad = 1; if (d > w) w = d }
    END { printf "  %d steps, worst |dloss| %.2e\n", n, w; exit (n != 4 || bad || w > 1e-4) }'
}
start() { mkdir -p "$1"; cp -r "$W/ref/step_00000004" "$1/"; echo step_00000004 > "$1/LATEST"; }
start "$W/sp2"
mpirun_np 2 "$BIN" "${COMMON[@]}" --batch 4 --sp 2 --out "$W/sp2" --resume > "$W/sp2.log" 2>&1
check "1x1 -> 1x2 (sp 2): resumed at step 4" grep -q "saved on dp x sp = 1 x 1, now 1 x 2" "$W/sp2.log"
check "1x1 -> 1x2: losses match the uninterrupted 1x1 run" close "$W/sp2"
start "$W/dp2sp2"
mpirun_np 4 "$BIN" "${COMMON[@]}" --batch 2 --sp 2 --out "$W/dp2sp2" --resume > "$W/dp2sp2.log" 2>&1
check "1x1 -> 2x2: resumed at step 4" grep -q "now 2 x 2" "$W/dp2sp2.log"
check "1x1 -> 2x2: losses match" close "$W/dp2sp2"
# and back: a 2x2 run saves at step 4, a single rank continues
RINGGPT_DEBUG_EXIT=0:5 mpirun_np 4 "$BIN" "${COMMON[@]}" --batch 2 --sp 2 --out "$W/back" > /dev/null 2>&1
rm -f "$W/back/metrics.jsonl"
check "2x2 saved step 4" grep -qx step_00000004 "$W/back/LATEST"
OMP_NUM_THREADS=1 "$BIN" "${COMMON[@]}" --batch 4 --out "$W/back" --resume > "$W/back.log" 2>&1
check "2x2 -> 1x1: resumed" grep -q "saved on dp x sp = 2 x 2, now 1 x 1" "$W/back.log"
check "2x2 -> 1x1: losses match" close "$W/back"
# a global batch that differs from the checkpoint's is refused
expect_fail 2 "sequences per step" "$BIN" "${COMMON[@]}" --batch 2 --out "$W/ref" --resume "$W/ref/step_00000004"
finish
