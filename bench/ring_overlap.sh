#!/usr/bin/env bash
# bench/ring_overlap.sh — the ring's overlap on a real link: two hosts on this machine (scripts/two_hosts.sh), per link rate and
# tokens per rank, ring attention time with and without overlap, the compute alone, the transfer alone, the hidden fraction and the
# crossover against FLOPs/bandwidth; a figure; and `ringgpt plan`'s predicted step time against two-host training runs.
# Usage: bench/ring_overlap.sh [BUILD_DIR] [OUT_DIR]          (defaults: build, a new /tmp/ring_overlap.* directory)
# Environment (all optional):
#   STAGES   which parts run, in order (default "calibrate sweep train report")
#   RATES    link rates of the sweep (default "unlimited 1gbit 500mbit 200mbit 100mbit"; unlimited = the veth link as fast as TCP goes)
#   TOKENS   tokens per rank of the sweep (default "256 512 1024 2048 4096 8192"); REPS timed repetitions per run (default 10)
#   TRAIN_RATES, TRAIN_T  rates and sequence lengths of the two-host training runs (default "unlimited 200mbit 100mbit", "4096 8192")
#   LOCK     a lock file: every timed unit (one configuration) runs under `flock -x LOCK`, alone on a shared machine
# Result lines go to OUT_DIR/results.txt, each with its stage, rate, the load average just before it, date and commit;
# bench/ring_overlap_report.py turns them into OUT_DIR/report.md (the tables) and OUT_DIR/ring_overlap.png.
# Needs root (network namespaces: scripts/two_hosts.sh refuses with one line otherwise) and Open MPI.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(readlink -f "${1:-build}")
OUT=${2:-$(mktemp -d /tmp/ring_overlap.XXXXXX)}
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
STAGES=${STAGES:-calibrate sweep train report}
RATES=${RATES:-unlimited 1gbit 500mbit 200mbit 100mbit}
TOKENS=${TOKENS:-256 512 1024 2048 4096 8192}
REPS=${REPS:-10}
TRAIN_RATES=${TRAIN_RATES:-unlimited 200mbit 100mbit}
TRAIN_T=${TRAIN_T:-4096 8192}
export ROOT OUT REPS BENCH=$BUILD/ring_overlap RINGGPT=$BUILD/ringgpt
for exe in "$BENCH" "$RINGGPT"; do
  [ -x "$exe" ] || { echo "ring_overlap.sh: $exe not found; build first (cmake --build $BUILD)" >&2; exit 2; }
done
. "$ROOT/scripts/deps.sh"
find_python || { echo "ring_overlap.sh: no python3 with numpy and matplotlib (scripts/deps.sh installs them)" >&2; exit 2; }
COMMIT=${COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown)}
RESULTS=$OUT/results.txt

# ---- the timed units: each prints load_before=... first, then the bench's key=value lines ----
load_before() { echo "load_before=$(cut -d' ' -f1 /proc/loadavg)"; }

hosts() {   # hosts RATE CMD...: CMD with $HOSTS_MPIEXEC starting ranks on two hosts joined at RATE
  local rate=$1; shift
  if [ "$rate" = unlimited ]; then "$ROOT/scripts/two_hosts.sh" -- "$@"; else "$ROOT/scripts/two_hosts.sh" --rate "$rate" -- "$@"; fi
}

two_ranks() { "$HOSTS_MPIEXEC" -np 2 -x OMP_NUM_THREADS=1 "$@"; }

# cores CMD...: CMD on every core at once, one copy pinned to each (CORE=N in its environment), each output line tagged
# core=N: the calibration runs as the ring does, every core busy (a core's speed here depends on what the others run,
# and the ring waits for the slower).
cores() {
  local c
  for ((c = 0; c < $(nproc); c++)); do (CORE=$c OMP_NUM_THREADS=1 taskset -c "$c" bash -c '"$@"' _ "$@" | sed "s/^/core=$c /") & done
  wait
}

# The CPU block kernels on one rank, one thread (causal forward + backward) on every core at once, and the unlimited link.
unit_calibrate() {
  load_before
  for T in 2048 4096; do cores "$BENCH" --calibrate attn --tokens "$T" --reps 4; done
  hosts unlimited bash -c "$(declare -f two_ranks); two_ranks '$BENCH' --calibrate link"
}

# The link as a shaped rate delivers it: latency and bandwidth of sendrecv pairs (TCP over tbf reaches less than the rate).
unit_link() {   # unit_link RATE
  load_before
  hosts "$1" bash -c "$(declare -f two_ranks); two_ranks '$BENCH' --calibrate link"
}

# One-rank `small` training runs at T=4096, one thread, one on every core at once: each step's time outside attention
# calibrates the matmul rate.
unit_train_one_rank() {
  load_before
  cores train_one_rank
}
train_one_rank() {   # under cores: CORE is the core
  local d=$OUT/train1_$CORE
  rm -rf "$d"
  "$RINGGPT" train --data "$OUT/corpus.txt" --model small --seq-len 4096 --batch 1 --steps 4 --threads 1 \
    --ckpt-every -1 --val-fraction 0 --out "$d" > "$d.log" 2>&1 || { tail -5 "$d.log" >&2; return 1; }
  echo "train1 tokens=4096 $(step_means "$d/metrics.jsonl")"
}

# One sweep configuration: the ring with overlap (the compute loops drive MPI) and the serial baseline in turns in one run
# (--paired: a shared machine's drift between two runs was as large as the transfer), then overlap driven by the progress
# thread, and overlap with neither.
unit_sweep() {   # unit_sweep RATE TOKENS
  load_before
  hosts "$1" bash -c "$(declare -f two_ranks)"'
    for flags in "--paired" "--comm-progress=thread" "--comm-progress=off"; do two_ranks "$BENCH" --tokens "$0" --reps "$REPS" $flags; done' "$2"
}

# A two-host `small` training run (sp = 2, one thread a rank; 8 steps: this machine's speed drifts from step to step).
unit_train_two_hosts() {   # unit_train_two_hosts RATE T
  load_before
  local d=$OUT/train2_$1_$2
  rm -rf "$d"
  hosts "$1" bash -c "$(declare -f two_ranks); two_ranks '$RINGGPT' train --data '$OUT/corpus.txt' --model small --seq-len $2 \
    --batch 1 --steps 8 --threads 1 --sp 2 --ckpt-every -1 --val-fraction 0 --out '$d' > '$d.log' 2>&1" ||
    { tail -5 "$d.log" >&2; return 1; }
  echo "train2 tokens=$2 $(step_means "$d/metrics.jsonl")"
}

# Mean step time and ring wait (the most of any rank) over the steps after the first.
step_means() {
  "$PY" -c 'import json, sys
m = [json.loads(l) for l in open(sys.argv[1])][1:]
w = [max(x.get("rank_ring_wait_s", [0])) for x in m]
print("step_s=%.4f ring_wait_s=%.4f steps=%d" % (sum(x["step_ms"] for x in m) / len(m) / 1e3, sum(w) / len(w), len(m)))' "$1"
}
export -f load_before hosts two_ranks cores unit_link unit_calibrate unit_train_one_rank train_one_rank unit_sweep unit_train_two_hosts step_means
export PY

# timed UNIT ARGS...: the unit alone on the machine when LOCK is set.
timed() {
  if [ -n "${LOCK:-}" ]; then flock -x "$LOCK" bash -c '"$@"' _ "$@"; else "$@"; fi
}

# tag TAGS: the unit's key=value lines into results.txt with the tags, its load average, date and commit.
tag() {
  local tags=$1 load=?
  while read -r line; do
    echo "  $line" >&2
    case $line in
      load_before=*) load=${line#load_before=} ;;
      *=*) echo "$tags load=$load date=$(date +%F) commit=$COMMIT $line" >> "$RESULTS" ;;
    esac
  done
}


# A rate's link, measured once per OUT (the report predicts with what the link delivers, not its nominal rate).
link_stage() {   # link_stage RATE
  grep -q "^stage=link rate=$1 " "$RESULTS" 2> /dev/null && return
  echo "link: rate $1" >&2
  timed unit_link "$1" | tag "stage=link rate=$1"
}

# runs STAGE RATES VALUES UNIT: per rate its link once, then `UNIT RATE VALUE` for each value (tokens per rank, or T).
# The sweep's units time the ring; the train stage's are two-host training runs, beside which the report sets
# `ringgpt plan`'s prediction.
runs() {
  local stage=$1 rates=$2 values=$3 unit=$4 rate v
  for rate in $rates; do
    link_stage "$rate"
    for v in $values; do
      echo "$stage: rate $rate, $v tokens" >&2
      timed "$unit" "$rate" "$v" | tag "stage=$stage rate=$rate"
    done
  done
}

# The text the training runs read: random words, enough for 4 steps of the longest T.
if [ ! -s "$OUT/corpus.txt" ]; then
  awk 'BEGIN { srand(3); for (i = 0; i < 60000; i++) { w = ""; n = 2 + int(rand() * 7);
    for (j = 0; j < n; j++) w = w sprintf("%c", 97 + int(rand() * 26)); printf "%s%s", w, (i % 12 == 11 ? ".\n" : " ") } }' > "$OUT/corpus.txt"
fi
echo "ring_overlap.sh: results in $OUT (commit $COMMIT; $(nproc) cores, $(sed -nE 's/^model name\s*:\s*//p' /proc/cpuinfo | head -1))" >&2
for stage in $STAGES; do
  case $stage in
    calibrate)
      echo "calibrate: CPU block kernels, the unlimited link, a one-rank training step" >&2
      timed unit_calibrate | tag "stage=calibrate rate=unlimited"
      timed unit_train_one_rank | tag "stage=calibrate" ;;
    sweep) runs sweep "$RATES" "$TOKENS" unit_sweep ;;
    train) runs train "$TRAIN_RATES" "$TRAIN_T" unit_train_two_hosts ;;
    report) "$PY" "$ROOT/bench/ring_overlap_report.py" "$RESULTS" --bench "$BENCH" --ringgpt "$RINGGPT" --out "$OUT" ;;
    *) echo "ring_overlap.sh: unknown stage '$stage' (calibrate, sweep, train, report)" >&2; exit 2 ;;
  esac
done
