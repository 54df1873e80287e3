#!/usr/bin/env bash
# tests/cli/slurm.sh — a one-node Slurm (Debian's slurm-wlm: munged, slurmctld, slurmd, started and stopped here, all
# state in a scratch directory) runs a 2-rank ring through `srun --mpi=pmix`: the ranks come from PMIx, the run equals
# the same run under mpiexec, a usage error prints one line, and a signal (scancel --signal=USR1, SIGTERM to srun) stops
# both ranks after one step with a checkpoint that resumes bit for bit. Exit 77 (SKIP) with the reason when Slurm is not
# installed or its daemons cannot run in this sandbox. Slurm from Debian: apt-get install slurmd slurmctld slurm-client munge
set -uo pipefail
BIN=$(readlink -f "$1") MPIEXEC=${2:-mpiexec}
skip() { echo "SKIP: $*"; exit 77; }
for exe in munged slurmctld slurmd srun scontrol; do
  command -v "$exe" > /dev/null || PATH=$PATH:/usr/sbin command -v "$exe" > /dev/null ||
    skip "$exe not found: Slurm is not installed (Debian: apt-get install slurmd slurmctld slurm-client munge)"
done
export PATH=$PATH:/usr/sbin
[[ $(id -u) == 0 ]] || skip "the test starts slurmd, which needs root"
. "$(dirname "$0")/common.sh"
pids=()
stop_all() {   # the daemons this test started, by their pid, newest first
  if [[ -n ${SLURM_CONF:-} ]]; then   # end our jobs first, so that no job step outlives slurmd
    scancel --partition=test 2>/dev/null
    for _ in $(seq 50); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.1; done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
  for p in "${pids[@]}"; do for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; kill -9 "$p" 2>/dev/null; done
  rm -rf "$W"
}
trap stop_all EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
S=$W/slurm; mkdir -p "$S/ctld" "$S/d" "$S/munge"
chmod 700 "$S/munge"
# munge: its own key, socket and files (the system's munged, if any, is left alone)
dd if=/dev/urandom of="$S/munge/key" bs=1024 count=1 status=none; chmod 400 "$S/munge/key"
munged --force --key-file="$S/munge/key" --socket="$S/munge/sock" --pid-file="$S/munge/pid" --log-file="$S/munge/log" \
  --seed-file="$S/munge/seed" 2> "$S/munged.err" || skip "munged does not start here: $(tail -n 1 "$S/munged.err")"
for _ in $(seq 50); do [[ -s $S/munge/pid ]] && break; sleep 0.1; done
pids+=("$(cat "$S/munge/pid")")
node=$(hostname -s)
cpus=$(nproc)
cat > "$S/slurm.conf" <<CONF
ClusterName=ringgpt-test
SlurmctldHost=$node
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge/sock
CredType=cred/munge
StateSaveLocation=$S/ctld
SlurmdSpoolDir=$S/d
SlurmctldPidFile=$S/ctld.pid
SlurmdPidFile=$S/d.pid
SlurmctldLogFile=$S/ctld.log
SlurmdLogFile=$S/d.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=pmix
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
NodeName=$node CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$S/slurm.conf
slurmctld -D -f "$SLURM_CONF" > "$S/ctld.out" 2>&1 &
disown
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" > "$S/d.out" 2>&1 &
disown
pids+=($!)
up=0
for _ in $(seq 100); do
  if ! kill -0 "${pids[1]}" 2>/dev/null || ! kill -0 "${pids[2]}" 2>/dev/null; then break; fi
  if sinfo -h -o %T 2>/dev/null | grep -qE '^idle'; then up=1; break; fi
  sleep 0.2
done
if [[ $up != 1 ]]; then
  why=$(cat "$S/d.out" "$S/ctld.out" "$S/d.log" "$S/ctld.log" 2>/dev/null | grep -iE 'error|fatal' | tail -n 1)
  skip "slurmd/slurmctld do not come up in this sandbox: ${why:-node not idle after 20 s}"
fi
echo "slurm up: node $node, $cpus CPUs ($(srun --version))"
make_text "$W/text.txt" 300
RUN=(train --data "$W/text.txt" --model tiny --seq-len 32 --batch 2 --steps 3 --threads 1 --log-every 1)
srun -n 2 --mpi=pmix --export=ALL,OMP_NUM_THREADS=1 "$BIN" "${RUN[@]}" --sp 2 --out "$W/srun" > "$W/srun.log" 2>&1
check "srun -n 2 --sp 2: trains a 2-rank ring" grep -q "1x2 ranks (dp x sp)" "$W/srun.log"
"$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np 2 "$BIN" "${RUN[@]}" --sp 2 --out "$W/mpi" > "$W/mpi.log" 2>&1
losses() { sed -E 's/.*"loss": ([-0-9.e]+).*/\1/' "$1/metrics.jsonl"; }
check "srun and mpiexec give the same losses ($(losses "$W/srun" | paste -sd' '))" test "$(losses "$W/srun")" = "$(losses "$W/mpi")"
rc=0; err=$(srun -n 2 --mpi=pmix "$BIN" train --data "$W/missing.txt" 2>&1 >/dev/null) || rc=$?
check "srun, missing data: exit 2 ($rc)" test "$rc" = 2
check "srun, missing data: one ringgpt line" test "$(grep -c '^ringgpt:' <<<"$err")" = 1
rc=0; err=$(srun -n 2 --mpi=none "$BIN" "${RUN[@]}" --sp 2 --out "$W/nopmi" 2>&1 >/dev/null) || rc=$?
check "srun --mpi=none: refused with the fix, not two 1-rank worlds ($rc)" grep -q -- "--mpi=pmix" <<<"$err"

# Signals through Slurm: `scancel --signal=USR1` (what `#SBATCH --signal=USR1@T` sends before the time limit) and
# SIGUSR1 sent to srun (forwarded) reach both tasks; a plain `scancel` (a cancellation, a preemption) sends SIGTERM
# and SIGKILL after KillWait (30 s). Each way the ranks stop after the same step, save it, say where once, and
# `--resume` under srun ends bit for bit where an uninterrupted run ends: final weights and AdamW moments
# byte-identical, every loss identical. (SIGTERM to srun itself kills the tasks: docs/usage.md.)
SSTEPS=400
[[ ${RINGGPT_SANITIZED:-0} == 1 ]] && SSTEPS=150   # the sanitized build runs several times slower
LONG=(train --data "$W/text.txt" --model tiny --seq-len 32 --batch 2 --steps $SSTEPS --threads 1 --log-every 100000
      --eval-every 0 --ckpt-every 0 --sp 2)
SRUN=(srun -n 2 --mpi=pmix --export=ALL,OMP_NUM_THREADS=1)
final=step_$(printf %08d $SSTEPS)
steps_logged() { [[ -f $1/metrics.jsonl ]] && wc -l < "$1/metrics.jsonl" || echo 0; }
"${SRUN[@]}" "$BIN" "${LONG[@]}" --out "$W/sref" > "$W/sref.log" 2>&1 || bad "uninterrupted srun run failed: $(tail -2 "$W/sref.log")"
for how in scancel_USR1 srun_USR1 scancel_TERM; do
  out=$W/s_$how target=$((10 + RANDOM % (SSTEPS / 4))) sig=${how#*_}
  "${SRUN[@]}" -J "sig_$how" "$BIN" "${LONG[@]}" --out "$out" > "$out.log" 2>&1 &
  pid=$!
  while kill -0 $pid 2> /dev/null && (($(steps_logged "$out") < target)); do sleep 0.01; done
  if [[ $how == scancel_* ]]; then scancel --signal="$sig" --name="sig_$how"; else kill -"$sig" $pid; fi
  wait $pid; rc=$?
  step=$(sed -nE "s/^ringgpt: stopped by SIG$sig after step ([0-9]+) of.*/\1/p" "$out.log" | head -1)
  # srun exits with its tasks' 75; a cancelled job's srun reports the cancellation instead
  [[ $how == scancel_TERM ]] || check "$how: exit 75 ($rc)" test "$rc" = 75
  check "$how: stopped after step ${step:-?} (signal at ~$target), before the end" test "${step:-0}" -ge $target -a "${step:-0}" -lt $SSTEPS
  check "$how: one stop line for the two ranks" test "$(grep -c '^ringgpt: stopped by' "$out.log")" = 1
  check "$how: LATEST names step ${step:-?}" grep -qx "step_$(printf %08d "${step:-0}")" "$out/LATEST"
  "${SRUN[@]}" "$BIN" train --out "$out" --resume > "$out.resume.log" 2>&1
  check "$how: --resume under srun exits 0 ($?)" test $? = 0
  check "$how + resume: final model byte-identical" cmp -s "$W/sref/$final/model.safetensors" "$out/$final/model.safetensors"
  check "$how + resume: final AdamW moments byte-identical" cmp -s "$W/sref/$final/optim.safetensors" "$out/$final/optim.safetensors"
  check "$how + resume: every loss identical, each step once" diff <(losses "$W/sref") <(losses "$out")
done
finish
