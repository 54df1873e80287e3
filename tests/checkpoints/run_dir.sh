#!/usr/bin/env bash
# tests/checkpoints/run_dir.sh — a run directory belongs to one run: a new run into a used --out is refused (nothing
# changed) or, with --out-exists move, moves the old run aside; two writers never share an --out (a lock that kill -9
# does not leave stuck); resume semantics (--steps at or below the saved step, an older step with newer ones, a damaged
# newest one named once); OUT/config.json's checksum; a failed save on a full disk leaves nothing behind.
set -uo pipefail
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")   # absolute: one run starts in another directory
. "$(dirname "$0")/common.sh"
# expect_fail CODE PATTERN CMD...: CMD exits with CODE, and its stderr is one line that contains PATTERN.
expect_fail() {
  local code=$1 pattern=$2; shift 2
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  if [[ $rc == "$code" && $err == *"$pattern"* && $(grep -c . <<<"$err") == 1 ]]; then ok "exit $code: $pattern"
  else bad "expected exit $code with one line containing '$pattern', got $rc: $err"; fi
}
# edit_config DIR PYTHON-STATEMENTS: changes DIR/config.json as JSON (c is the dict)
edit_config() { python3 -c "import json,sys; p=sys.argv[1]+'/config.json'; c=json.load(open(p)); $2; open(p,'w').write(json.dumps(c, indent=1))" "$1"; }
make_text "$W/text.txt" 300
T=(train --data "$W/text.txt" --model tiny --seq-len 48 --batch 2 --warmup 2 --threads 1 --log-every 1000)
quiet() { "$@" > /dev/null 2>&1; }
snapshot() { (cd "$1" && find . -type f ! -name .ringgpt.lock -exec md5sum {} + | sort); }
unchanged() { diff <(cat "$2") <(snapshot "$1") > /dev/null; }

# --- a new run into a used --out --------------------------------------------------------------------------------
"$BIN" "${T[@]}" --steps 8 --ckpt-every 2 --out "$W/t1" > /dev/null
cp -r "$W/t1" "$W/c2"
snapshot "$W/c2" > "$W/c2.before"
expect_fail 2 "holds another run" "$BIN" "${T[@]}" --steps 5 --keep 1 --out "$W/c2"
err=$("$BIN" "${T[@]}" --steps 5 --keep 1 --out "$W/c2" 2>&1 >/dev/null)
check "the refusal names --resume, a new --out and --out-exists move" \
  bash -c '[[ $1 == *"--resume"* && $1 == *"new --out"* && $1 == *"--out-exists move"* ]]' _ "$err"
check "refused: every checkpoint, metrics.jsonl, config.json and LATEST as they were" unchanged "$W/c2" "$W/c2.before"
"$BIN" "${T[@]}" --steps 5 --keep 1 --out "$W/c2" --out-exists move > "$W/move.log" 2>&1
check "--out-exists move: the new run trains ($(tail -1 "$W/move.log"))" test -f "$W/c2/step_00000005/MANIFEST.json"
check "--out-exists move: says where the old run went" grep -q "moved it to $W/c2.old1" "$W/move.log"
check "--out-exists move: the old run is whole at OUT.old1" unchanged "$W/c2.old1" "$W/c2.before"
check "--out-exists move: the new run holds only its own steps" test "$(ls -d "$W"/c2/step_* | wc -l)" = 1
"$BIN" "${T[@]}" --steps 3 --out "$W/c2" --out-exists move > /dev/null 2>&1
check "a second move goes to OUT.old2, OUT.old1 untouched" test -f "$W/c2.old2/step_00000005/MANIFEST.json" -a -d "$W/c2.old1/step_00000008"
expect_fail 2 "--out-exists must be refuse or move" "$BIN" "${T[@]}" --steps 3 --out "$W/c3" --out-exists delete
# the default --out ("out"): two runs started without --out in one directory do not collide
mkdir "$W/cwd"
(cd "$W/cwd" && "$BIN" "${T[@]}" --steps 2 > /dev/null) || bad "a run without --out failed"
check "two runs without --out: the second is refused" bash -c "cd '$W/cwd' && ! '$BIN' ${T[*]} --steps 2 > /dev/null 2>&1"
# --out that is a file; --resume of a directory with no run names the real cause, not a missing flag
touch "$W/afile"
expect_fail 2 "--out $W/afile is a file" "$BIN" "${T[@]}" --steps 2 --out "$W/afile"
expect_fail 2 "$W/nonexist holds no checkpoint (there is no such directory" "$BIN" train --out "$W/nonexist" --resume
mkdir "$W/empty_dir"
expect_fail 2 "holds no checkpoint and no run" "$BIN" train --out "$W/empty_dir" --resume
expect_fail 2 "--resume $W/nowhere/step_00000002: no such checkpoint" "$BIN" train --resume "$W/nowhere/step_00000002"
check "a refused run leaves no directory behind" test ! -e "$W/nonexist"
expect_fail 2 "is inside --out" "$BIN" "${T[@]}" --steps 2 --init-from "$W/t1" --out "$W/t1"
# import into a run directory: the same rule
"$BIN" export "$W/t1" --to hf "$W/hf" > /dev/null
expect_fail 2 "holds another run" "$BIN" import "$W/hf" --out "$W/t1"
expect_fail 2 "holds a training run or a dataset" "$BIN" export "$W/t1" --to hf "$W/c2.old1"

# --- two writers ------------------------------------------------------------------------------------------------
"$BIN" "${T[@]}" --steps 100000 --ckpt-every 1000 --out "$W/busy" > "$W/busy.log" 2>&1 &
pid=$!
while [[ ! -s $W/busy/metrics.jsonl ]] && kill -0 $pid 2> /dev/null; do sleep 0.05; done
expect_fail 2 "is being written by another ringgpt process (pid $pid" "$BIN" "${T[@]}" --steps 5 --out "$W/busy"
expect_fail 2 "is being written by another ringgpt process" "$BIN" "${T[@]}" --steps 100001 --out "$W/busy" --resume
kill -9 $pid; wait $pid 2> /dev/null
check "kill -9 leaves the lock file" test -f "$W/busy/.ringgpt.lock"
rm -rf "$W/busy/step_"*; printf '' > "$W/busy/metrics.jsonl"
check "but not the lock: --resume auto takes the directory over" quiet "$BIN" "${T[@]}" --steps 3 --out "$W/busy" --resume auto
check "a finished run removes its lock file" test ! -e "$W/busy/.ringgpt.lock"

# --- resume semantics -------------------------------------------------------------------------------------------
cp "$W/t1/config.json" "$W/t1.config"
snapshot "$W/t1" > "$W/t1.before"
expect_fail 2 "--steps 8 is not beyond the checkpoint's step 8" "$BIN" train --out "$W/t1" --resume
expect_fail 2 "--steps 6 is not beyond the checkpoint's step 8" "$BIN" train --out "$W/t1" --resume --steps 6
check "  and no note that the schedule follows the new --steps first" \
  bash -c "! '$BIN' train --out '$W/t1' --resume --steps 6 2>&1 | grep -q 'the schedule follows'"
check "--steps at or below the saved step: config.json and everything else as they were" unchanged "$W/t1" "$W/t1.before"
# an older explicit step while newer valid ones exist: refused, nothing renamed; into a new --out it continues
expect_fail 2 "holds a newer valid checkpoint ($W/t1/step_00000008)" "$BIN" train --resume "$W/t1/step_00000004" --steps 10
check "no checkpoint was renamed .damaged" bash -c "! ls -d '$W'/t1/*.damaged* 2> /dev/null"
check "  and nothing else changed" unchanged "$W/t1" "$W/t1.before"
"$BIN" train --resume "$W/t1/step_00000004" --out "$W/branch" --threads 1 > "$W/branch.log" 2>&1
check "resume an older step into a new --out: steps 5..8" test "$(losses "$W/branch/metrics.jsonl" | cut -d' ' -f1 | xargs)" = "5 6 7 8"
check "  with the original run's losses" diff <(losses "$W/t1/metrics.jsonl" | tail -4) <(losses "$W/branch/metrics.jsonl")
check "  and its final weights, byte for byte" cmp -s "$W/t1/step_00000008/model.safetensors" "$W/branch/step_00000008/model.safetensors"
check "  with the same --threads: no note about them" bash -c "! grep -q 'note: --threads' '$W/branch.log'"
# a resume takes its run's --threads (and every flag that rounds a step's sums); one given that differs is noted
"$BIN" train --resume "$W/t1/step_00000004" --out "$W/branch_run" > "$W/branch_run.log" 2>&1
check "a resume without --threads runs its run's 1 thread" grep -q ", 1 thread, " "$W/branch_run.log"
check "  without a note, and continues bit for bit" \
  bash -c "! grep -q '^ringgpt: note' '$W/branch_run.log' && cmp -s '$W/t1/step_00000008/model.safetensors' '$W/branch_run/step_00000008/model.safetensors'"
"$BIN" train --resume "$W/t1/step_00000004" --out "$W/branch_2" --threads 2 --loss-chunk 16 --recompute full > "$W/branch_2.log" 2>&1
check "a resume with another --threads: a note that it breaks bit-exactness and the way back" \
  grep -q "note: --threads 2 is not the saved run's (1):.*last digits; leave --threads out to continue it bit for bit" "$W/branch_2.log"
check "  the same for --loss-chunk" grep -q "note: --loss-chunk 16 is not the saved run's (256)" "$W/branch_2.log"
check "  none for --recompute (bit for bit by design)" bash -c "! grep -q 'note: --recompute' '$W/branch_2.log'"
cp -r "$W/t1" "$W/old"   # an older ringgpt's config.json: "threads": 0 (not the count used)
edit_config "$W/old" "del c['config_crc32']; c['threads'] = 0"
"$BIN" train --resume "$W/old/step_00000004" --out "$W/branch_old" > "$W/branch_old.log" 2>&1
check "a run whose config.json does not record its --threads resumes with the free cores ($(nproc)), and says so" \
  bash -c "grep -q ', $(nproc) threads\?, ' '$W/branch_old.log' && grep -q 'does not record the run.s --threads' '$W/branch_old.log'"
# a damaged newer step: resuming the older one is allowed, and the damaged one is moved aside, never deleted
cp -r "$W/t1" "$W/dmg"
printf 'x' >> "$W/dmg/step_00000008/model.safetensors"
"$BIN" train --resume "$W/dmg/step_00000006" --out "$W/dmg" > "$W/dmg.log" 2>&1
check "an older step with only a damaged newer one: resumes" grep -q "resumed from $W/dmg/step_00000006" "$W/dmg.log"
check "  the damaged step 8 is at step_00000008.damaged1" test -f "$W/dmg/step_00000008.damaged1/model.safetensors"
# a damaged newest checkpoint read through the run directory: one warning naming the step used, and the command says it
printf 'x' >> "$W/c2.old1/step_00000008/model.safetensors"
for cmd in "eval $W/c2.old1 --data $W/text.txt --seq-len 48 --batches 1 --threads 1" \
           "sample $W/c2.old1 --prompt The --tokens 3 --threads 1" "export $W/c2.old1 --to hf $W/hf_old"; do
  rc=0; err=$("$BIN" $cmd 2>&1) || rc=$?
  n=$(grep -c "warning: skipping checkpoint $W/c2.old1/step_00000008" <<<"$err")
  check "${cmd%% *}: the damaged step 8 is reported once ($n), naming step 6" \
    bash -c '[[ $1 == 0 && $2 == 1 && $3 == *"using '"$W"'/c2.old1/step_00000006 (step 6) instead"* ]]' _ $rc "$n" "$err"
  check "${cmd%% *}: names the checkpoint it loaded" grep -q "checkpoint $W/c2.old1/step_00000006 (step 6 of $W/c2.old1)" <<<"$err"
done

# --- OUT/config.json carries its own checksum -------------------------------------------------------------------
check "config.json ends with config_crc32" grep -q '"config_crc32":' "$W/t1/config.json"
cp -r "$W/t1" "$W/flip"
sed -i 's/"keep":\t0/"keep":\t1/' "$W/flip/config.json"
snapshot "$W/flip" > "$W/flip.before"
expect_fail 2 "config_crc32\" does not match" "$BIN" train --out "$W/flip" --resume --steps 12
check "a damaged config.json deletes nothing" unchanged "$W/flip" "$W/flip.before"
edit_config "$W/flip" "del c['config_crc32']"   # an edit the user means: the checksum line removed
"$BIN" train --out "$W/flip" --resume --steps 9 > "$W/flip.log" 2>&1
check "without the checksum line the edit is taken, and --keep says what it removes" grep -q "removed checkpoint .*--keep 1" "$W/flip.log"
cp -r "$W/t1" "$W/sp0"
edit_config "$W/sp0" "del c['config_crc32']; c['sp'] = 0"
expect_fail 2 "--sp must be at least 1 (got 0)" "$BIN" train --out "$W/sp0" --resume --steps 12

# --- a full disk: a failed save leaves no step_N.tmp, and the run resumes without help ---------------------------
"$BIN" "${T[@]}" --steps 2 --ckpt-every 2 --out "$W/full" > /dev/null
rc=0; (trap '' XFSZ; ulimit -f 64; exec "$BIN" train --out "$W/full" --resume --steps 4) > "$W/full.log" 2>&1 || rc=$?
check "a save that hits the file-size limit fails at run time: exit 1 (got $rc)" test $rc = 1
check "  and leaves no .tmp" bash -c "! ls -d '$W'/full/*.tmp 2> /dev/null"
check "  LATEST still names step 2" grep -qx step_00000002 "$W/full/LATEST"
check "  the next --resume needs no cleanup by hand" quiet "$BIN" train --out "$W/full" --resume --steps 4
finish
