#!/usr/bin/env bash
# tests/checkpoints/crash.sh — SIGKILL at every point of a checkpoint save (mid-file, before/after manifest, renames, LATEST, purge):
# the previous checkpoint is always intact, `--resume auto` uses the newest complete one, and the finished run is bit-identical.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
make_text "$W/text.txt" 300
run() {  # run OUT [flags]
  local out=$1; shift
  "$BIN" train --data "$W/text.txt" --model tiny --seq-len 48 --batch 2 --steps 9 --warmup 2 --threads 1 --eval-every 0 \
    --ckpt-every 3 --keep 1 --log-every 100 --out "$out" "$@" > "$out.log" 2>&1
}
run "$W/ref"
for point in 1 2 3 4 5 6 7 8 9 10 11 12 13; do
  out=$W/kill$point
  (RINGGPT_DEBUG_CKPT_KILL=2:$point run "$out") 2> /dev/null   # the second save (step 6) dies at this point
  rc=$?
  [[ $rc == 137 ]] || { bad "point $point: expected SIGKILL (137), got $rc"; continue; }
  latest=$(cat "$out/LATEST")
  # before the LATEST rename (point <= 10) LATEST still names step 3, which must verify
  want=step_00000003; [[ $point -ge 11 ]] && want=step_00000006
  [[ $latest == "$want" ]] || bad "point $point: LATEST is $latest, expected $want"
  run "$out" --resume auto
  resumed=$(grep -o "resumed from [^ ]*" "$out.log" | sed 's|.*/||')
  want_resume=step_00000003; [[ $point -ge 9 ]] && want_resume=step_00000006   # committed once renamed
  if [[ $resumed == "$want_resume" ]] && cmp -s "$W/ref/step_00000009/model.safetensors" "$out/step_00000009/model.safetensors" \
     && cmp -s "$W/ref/step_00000009/optim.safetensors" "$out/step_00000009/optim.safetensors" \
     && ! ls -d "$out"/*.tmp > /dev/null 2>&1; then
    ok "kill at point $point: resumed from $resumed, final weights byte-identical, no stale .tmp"
  else
    bad "kill at point $point: resumed from '$resumed' (expected $want_resume); see $out.log"; tail -3 "$out.log"
  fi
done
# --keep 1 left only the newest checkpoint, the one LATEST names
check "--keep 1 keeps only LATEST's checkpoint" test "$(ls -d "$W/ref"/step_* | wc -l)" = 1
# a save that cannot even start (step_N.tmp is a file) fails clearly and leaves the previous checkpoint alone
run "$W/fail" --steps 3
cp -r "$W/fail/step_00000003" "$W/before"
touch "$W/fail/step_00000006.tmp"
expect_fail 1 "step_00000006.tmp: cannot create directory" "$BIN" train --data "$W/text.txt" --model tiny --seq-len 48 \
  --batch 2 --steps 6 --warmup 2 --threads 1 --ckpt-every 3 --keep 1 --out "$W/fail" --resume
check "failed save: LATEST unchanged" grep -qx step_00000003 "$W/fail/LATEST"
check "failed save: previous checkpoint untouched" diff -r "$W/before" "$W/fail/step_00000003"
finish
