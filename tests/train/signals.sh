#!/usr/bin/env bash
# tests/train/signals.sh — a stopped run is never lost: SIGTERM, SIGUSR1 or SIGINT at a random step (one rank; dp=2 x sp=2
# under mpiexec, the signal sent to one rank or to mpiexec) make every rank finish the step, save it and exit 75 with one
# line naming the checkpoint; `--resume` with no other flag then ends bit for bit where an uninterrupted run ends (final
# weights and AdamW moments byte-identical, every loss identical), though this machine's default --threads is not the
# first run's. A second SIGINT stops at once (130), --ckpt-every -1 still saves.
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/ring_common.sh"
for i in $(seq 400); do printf 'Signal test line %d: the quick brown fox jumps over the lazy dog %d times.\n' "$i" $((i * 7 % 13)); done > "$W/text.txt"
# Runs long enough that a signal at step 20..220 (10..110 under mpiexec, which forwards SIGTERM a second late) lands
# mid-run; shorter where the sanitized build runs (RINGGPT_SANITIZED: several times slower), the targets scaled alike.
STEPS=500 MSTEPS=600 SPAN=200 MSPAN=100
[[ ${RINGGPT_SANITIZED:-0} == 1 ]] && STEPS=300 MSTEPS=200 SPAN=100 MSPAN=40
# The first runs take another --threads than a resume would by default (every core: the load is not looked at), and
# OpenBLAS's Haswell (AVX2) kernels, where the CPU has them, round a product per thread count: a bare `--resume` continues
# bit for bit only where it takes its run's count.
export RINGGPT_THREADS_IGNORE_LOAD=1
THREADS=1; (($(nproc) == 1)) && THREADS=2
grep -qw avx2 /proc/cpuinfo 2> /dev/null && export OPENBLAS_CORETYPE=Haswell
FLAGS=(--data "$W/text.txt" --model tiny --seq-len 64 --batch 4 --steps $STEPS --warmup 5 --threads $THREADS --log-every 100000
       --eval-every 0 --ckpt-every 0)
losses() { sed -nE 's/.*"step": ([0-9]+), "loss": ([-0-9.e]+).*/\1 \2/p' "$1"; }
final=step_$(printf %08d $STEPS)

# waits until OUT/metrics.jsonl has N steps (or the process is gone)
wait_steps() {
  local out=$1 n=$2 pid=$3
  while kill -0 "$pid" 2> /dev/null; do
    [[ -f $out/metrics.jsonl && $(wc -l < "$out/metrics.jsonl") -ge $n ]] && return 0
    sleep 0.01
  done
  return 1
}

# same_run REF OUT WHAT: final checkpoint files byte-identical, every step's loss identical and logged once
same_run() {
  local ref=$1 out=$2 what=$3
  check "$what: final model.safetensors byte-identical" cmp -s "$ref/$final/model.safetensors" "$out/$final/model.safetensors"
  check "$what: final optim.safetensors byte-identical" cmp -s "$ref/$final/optim.safetensors" "$out/$final/optim.safetensors"
  check "$what: all $STEPS losses identical, each step once" diff <(losses "$ref/metrics.jsonl") <(losses "$out/metrics.jsonl")
}

# stopped LOG RC OUT SIGNAME WHAT: exit 75, one ringgpt line naming the signal and the step, the checkpoint there
stopped_at() {
  local log=$1 rc=$2 out=$3 sig=$4 what=$5
  local line; line=$(grep "^ringgpt: stopped by $sig after step" "$log")
  local step; step=$(sed -nE 's/.*after step ([0-9]+) of.*/\1/p' <<<"$line")
  check "$what: exit 75 (got $rc)" test "$rc" = 75
  check "$what: one line says where ($line)" test "$(grep -c '^ringgpt:' "$log")" = 1 -a -n "$step"
  [[ -n $step ]] || return 0
  check "$what: step_$(printf %08d "$step") saved and named by LATEST" grep -qx "step_$(printf %08d "$step")" "$out/LATEST"
  check "$what: metrics.jsonl ends at step $step" test "$(losses "$out/metrics.jsonl" | tail -1 | cut -d' ' -f1)" = "$step"
  echo "$step" > "$out.stopped_step"
}

# --- one rank ---------------------------------------------------------------------------------------------------
"$BIN" train "${FLAGS[@]}" --out "$W/ref" > "$W/ref.log" 2>&1 || bad "uninterrupted run failed: $(tail -2 "$W/ref.log")"
for sig in TERM USR1 INT; do
  out=$W/one_$sig target=$((20 + RANDOM % SPAN))
  "$BIN" train "${FLAGS[@]}" --out "$out" > "$out.log" 2>&1 &
  pid=$!
  wait_steps "$out" $target $pid && kill -$sig $pid
  wait $pid; rc=$?
  stopped_at "$out.log" $rc "$out" SIG$sig "one rank, SIG$sig at step ~$target"
  step=$(cat "$out.stopped_step" 2> /dev/null || echo 0)
  check "SIG$sig: stopped at or after step $target and before the end (step $step)" test "$step" -ge $target -a "$step" -lt $STEPS
  resume=(--resume); [[ $sig == USR1 ]] && resume+=(--threads $THREADS)   # the run's count given: the same run
  "$BIN" train --out "$out" "${resume[@]}" > "$out.resume.log" 2>&1
  check "SIG$sig: ${resume[*]} exits 0" test $? = 0
  check "SIG$sig: ${resume[*]} runs the run's --threads $THREADS, without a note" \
    bash -c "grep -q ', $THREADS threads\?, ' '$out.resume.log' && ! grep -q '^ringgpt: note' '$out.resume.log'"
  same_run "$W/ref" "$out" "one rank, SIG$sig + ${resume[*]}"
done

# A second SIGINT does not wait for the step: exit 130, no checkpoint of its own.
out=$W/twice
"$BIN" train --data "$W/text.txt" --model small --seq-len 1024 --batch 4 --steps 50 --threads 1 --log-every 1000 \
  --out "$out" > "$out.log" 2>&1 &
pid=$!
wait_steps "$out" 1 $pid && { kill -INT $pid; sleep 0.1; kill -INT $pid; }   # apart: two pending SIGINTs are one
wait $pid; rc=$?
check "a second SIGINT stops at once: exit 130 (got $rc)" test $rc = 130
check "  and says so" grep -q "second interrupt: stopping now" "$out.log"
check "  and saves nothing" test ! -e "$out/LATEST"

# --ckpt-every -1 (no checkpoints) still saves when a signal stops the run: the run is not lost.
out=$W/never
"$BIN" train "${FLAGS[@]}" --ckpt-every -1 --out "$out" > "$out.log" 2>&1 &
pid=$!
wait_steps "$out" 30 $pid && kill -TERM $pid
wait $pid; rc=$?
check "--ckpt-every -1: SIGTERM still writes a checkpoint (exit $rc)" test $rc = 75 -a -f "$out/LATEST"

# --- dp=2 x sp=2 under mpiexec -----------------------------------------------------------------------------------
MFLAGS=("${FLAGS[@]}" --sp 2 --batch 2 --steps $MSTEPS)
STEPS=$MSTEPS final=step_$(printf %08d $MSTEPS)
mpirun_np 4 "$BIN" train "${MFLAGS[@]}" --out "$W/mref" > "$W/mref.log" 2>&1 || bad "uninterrupted mpiexec run failed"
# rank_pids OUT: the ringgpt ranks writing OUT (children of mpiexec)
rank_pids() { pgrep -f -- "--out $1\$" | while read -r p; do [[ $(cat /proc/$p/comm 2> /dev/null) == ringgpt ]] && echo "$p"; done; }
for how in one_rank_TERM mpiexec_USR1 mpiexec_TERM; do
  out=$W/m_$how target=$((10 + RANDOM % MSPAN)) sig=${how##*_}
  # Open MPI 4.1's mpiexec passes its SIGTERM on odls_base_sigkill_timeout seconds later (default 1) and sends SIGKILL as
  # long after that: a step and a save of this model take milliseconds (docs/usage.md: raise it for large models).
  # mpiexec itself in the background (not a shell function around it), so that $! is the process to signal
  "$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np 4 "$BIN" train "${MFLAGS[@]}" \
    --out "$out" > "$out.log" 2>&1 &
  pid=$!
  if wait_steps "$out" $target $pid; then
    if [[ $how == one_rank_* ]]; then
      pids=($(rank_pids "$out")); victim=${pids[RANDOM % ${#pids[@]}]}
      kill -$sig "$victim"   # one rank alone: the others learn it through the step's all-reduce
    else
      kill -$sig $pid
    fi
  fi
  wait $pid; rc=$?
  if [[ $how == mpiexec_TERM ]]; then   # mpiexec reports its own signal; the ranks still stopped after a step and saved
    step=$(sed -nE 's/^ringgpt: stopped by SIGTERM after step ([0-9]+) of.*/\1/p' "$out.log")
    check "mpiexec SIGTERM (forwarded as SIGTERM): the ranks saved step $step" test -n "$step" && \
      check "  LATEST names it" grep -qx "step_$(printf %08d "$step")" "$out/LATEST"
  else
    stopped_at "$out.log" $rc "$out" SIG$sig "dp=2 x sp=2, SIG$sig to ${how%_*} at step ~$target"
    step=$(cat "$out.stopped_step" 2> /dev/null || echo 0)
  fi
  check "$how: one checkpoint, no .tmp" test "$(ls -d "$out"/step_* | wc -l)" = 1
  mpirun_np 4 "$BIN" train --out "$out" --resume > "$out.resume.log" 2>&1
  check "$how: --resume under mpiexec exits 0" test $? = 0
  same_run "$W/mref" "$out" "dp=2 x sp=2, $how + resume"
done
finish
