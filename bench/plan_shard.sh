#!/usr/bin/env bash
# bench/plan_shard.sh — `ringgpt plan` against training runs at each shard level: one run per `--shard` level on NP ranks of
# this host (dp x sp), its measured step time, gather/reduce-scatter wait and peak RSS printed beside what `ringgpt plan
# --device cpu` predicts for that layout and level (memory: the plan plus the run's own measured runtime part). Prints
# figures, asserts nothing.
# Usage: bench/plan_shard.sh [BUILD_DIR]        (default: build; needs its ringgpt with train --shard, and Open MPI)
# Columns: the measured median step, the plan's at the preset's rates and at this machine's compute rates today ("at k");
# the measured shard wait (the time blocked on gathers and reduce-scatters) beside the plan's exposed shard wait and its
# network stack work (core time inside the compute, not a wait); the peak RSS beside the plan's.
# Environment (all optional): MODEL (default base), T tokens per sequence (default 2048), NP ranks (default 2: the cpu
#   preset's node), SP ring size (default 2), STEPS training steps a run (default 6; the first two are left out of the
#   medians), LEVELS (default "none optim grads params"), OUT where the runs go (default a new /tmp/plan_shard.*
#   directory, removed at the end unless given), PLAN_BIN the ringgpt whose plan is asked (default the same binary),
#   PLAN_FLAGS more flags for every `ringgpt plan` (e.g. "--link-gbps 56 --host-gbps 56": the cpu preset's link is the
#   two-host veth link; ranks of one host move their bytes through Open MPI's shared memory, measured at 7 GB/s here).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(readlink -f "${1:-build}")
RINGGPT=$BUILD/ringgpt PLAN_BIN=${PLAN_BIN:-$BUILD/ringgpt}
MODEL=${MODEL:-base} T=${T:-2048} NP=${NP:-2} SP=${SP:-2} STEPS=${STEPS:-6} LEVELS=${LEVELS:-none optim grads params}
for b in "$RINGGPT" "$PLAN_BIN"; do
  [ -x "$b" ] || { echo "plan_shard.sh: $b not found; build first (cmake --build $BUILD)" >&2; exit 2; }
done
[[ $STEPS =~ ^[0-9]+$ && $STEPS -ge 3 ]] || { echo "plan_shard.sh: STEPS must be at least 3 (got '$STEPS')" >&2; exit 2; }
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; else OUT=$(mktemp -d /tmp/plan_shard.XXXXXX); trap 'rm -rf "$OUT"' EXIT; fi
OUT=$(readlink -f "$OUT")

# The text every run reads: random words, enough for the steps.
awk 'BEGIN { srand(3); for (i = 0; i < 60000; i++) { w = ""; n = 2 + int(rand() * 7);
  for (j = 0; j < n; j++) w = w sprintf("%c", 97 + int(rand() * 26)); printf "%s%s", w, (i % 12 == 11 ? ".\n" : " ") } }' > "$OUT/corpus.txt"
for level in $LEVELS; do
  echo "plan_shard.sh: --shard $level, $MODEL T=$T on $NP ranks (sp $SP), $STEPS steps (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  rm -rf "$OUT/$level"
  mpiexec --allow-run-as-root --oversubscribe --bind-to none -np "$NP" -x OMP_NUM_THREADS=1 "$RINGGPT" train \
    --data "$OUT/corpus.txt" --model "$MODEL" --seq-len "$T" --batch 1 --steps "$STEPS" --threads 1 --sp "$SP" \
    --shard "$level" --ckpt-every -1 --val-fraction 0 --out "$OUT/$level" > "$OUT/$level.log" 2>&1 ||
    { tail -5 "$OUT/$level.log" >&2; exit 1; }
done

python3 - "$PLAN_BIN" "$OUT" "$MODEL" "$T" "$NP" "$SP" "${PLAN_FLAGS:-}" $LEVELS << 'PY'
import json, os, re, statistics, subprocess, sys
plan_bin, out, model, T, NP, SP, plan_flags, *levels = sys.argv[1:]
def plan(level, *flags):   # ringgpt plan --device cpu for this layout and level, as a dict
    return json.loads(subprocess.run([plan_bin, "plan", "--device", "cpu", "--model", model, "--vocab", "260", "--seq-len", T,
                                      "--batch", "1", "--ranks", NP, "--sp", SP, "--shard", level, "--json"] + plan_flags.split() + list(flags),
                                     check=True, capture_output=True, text=True).stdout)
def measured(level):   # median step and shard wait (the most of any rank's) after two steps, peak RSS, runtime part (MiB)
    m = [json.loads(l) for l in open(os.path.join(out, level, "metrics.jsonl"))][2:]
    log = open(os.path.join(out, level + ".log")).read()
    runtime = float(re.search(r"runtime before the model +([0-9.]+) MiB", log).group(1))
    return (statistics.median(x["step_ms"] / 1e3 for x in m), statistics.median(x.get("shard_wait_s", 0) for x in m),
            max(x["peak_rss_mb"] for x in m), runtime)
runs = {level: measured(level) for level in levels}
# This machine's compute today against the preset's, from the first level's run: the plan's compute over the measured step.
base = plan(levels[0])
k = (base["matmul_s"] + base["attn_compute_s"] + base["ring_wait_s"]) / runs[levels[0]][0]
speed = ["--matmul-tflops", "%.4g" % (base["matmul_flops"] * k / 1e12), "--attn-tflops", "%.4g" % (base["attn_flops"] * k / 1e12)]
print("%s, T=%s, %s ranks (sp %s), B=1, one thread a rank; plan: ringgpt plan --device cpu %s(compute %.2fx the preset's "
      "today, from the %s run)" % (model, T, NP, SP, plan_flags + " " if plan_flags else "", k, levels[0]))
print("%-7s %8s %8s %8s %10s %9s %10s %11s %11s %7s" % ("--shard", "step", "plan", "at k", "shard wait", "plan",
                                                        "+ stack", "peak MiB", "plan MiB", "ratio"))
for level in levels:
    step, wait, rss, runtime = runs[level]
    p, q = plan(level), plan(level, *speed)
    mem = p["mem_bytes"] / 2**20 + runtime
    print("%-7s %8.3f %8.3f %8.3f %10.3f %9.3f %10.3f %11.1f %11.1f %7.3f" % (level, step, p["step_s"], q["step_s"], wait,
          q["shard_wait_s"], q["shard_stack_s"], rss, mem, mem / rss))
PY
echo "commit $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown), $(date -u '+%F %H:%M UTC'), $(nproc) cores, \
$(sed -nE 's/^model name\s*:\s*//p' /proc/cpuinfo | head -1), load after $(cut -d' ' -f1 /proc/loadavg)"
