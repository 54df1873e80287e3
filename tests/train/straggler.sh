#!/usr/bin/env bash
# tests/train/straggler.sh — every rank's step times are in metrics.jsonl, and a rank slowed on purpose (RINGGPT_DEBUG_SLOW) is
# the one the progress line names as a straggler; no other rank is named.
# Usage: straggler.sh RINGGPT MPIEXEC
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/ring_common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
make_copy_text "$W/data.txt" 200
RINGGPT_DEBUG_SLOW=2:300 mpirun_np 4 "$BIN" train --data "$W/data.txt" --model tiny --seq-len 64 --batch 2 --steps 6 \
  --threads 1 --sp 2 --straggler 0.5 --straggler-every 2 --out "$W/run" > "$W/log" 2>&1 ||
  { cat "$W/log"; echo "FAIL: the run failed"; exit 1; }
grep '^step' "$W/log"
named=$(grep -c 'straggler: rank 2 ' "$W/log")
[ "$named" -ge 1 ] || { echo "FAIL: the slowed rank 2 was never named a straggler"; exit 1; }
! grep -q 'straggler: rank [013] ' "$W/log" || { echo "FAIL: a rank that was not slowed was named"; exit 1; }
# Every line: four ranks in each per-rank array; rank 2's compute holds its 0.3 s sleep.
python3 - "$W/run/metrics.jsonl" << 'PY' || exit 1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 6, f"{len(lines)} lines in metrics.jsonl, expected 6"
for m in lines:
    for k in ("rank_compute_s", "rank_ring_wait_s", "rank_allreduce_s", "rank_data_s"):
        assert len(m[k]) == 4 and all(v >= 0 for v in m[k]), f"step {m['step']}: {k} = {m.get(k)}"
    c = m["rank_compute_s"]
    assert c[2] >= 0.3, f"step {m['step']}: rank 2's compute {c[2]} s does not hold its 0.3 s sleep"
print("ok: per-rank times on every line; rank 2 computes", [round(m["rank_compute_s"][2], 3) for m in lines])
PY
echo "ok: rank 2 named a straggler $named time(s), no other rank named"
