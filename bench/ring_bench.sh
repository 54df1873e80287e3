#!/usr/bin/env bash
# bench/ring_bench.sh — ring attention on this machine: per-rank peak memory and step time for sp ∈ {1,2,4} at a fixed T,
# and the fraction of the ring's waiting hidden behind compute (overlap on vs off). Prints a markdown table.
# Usage: bench/ring_bench.sh [BUILD_DIR] [SEQ_LEN] [STEPS]      (defaults: build, 32768, 1)
set -euo pipefail
BUILD=${1:-build} T=${2:-32768} STEPS=${3:-1}
BENCH=$BUILD/ring_bench
[ -x "$BENCH" ] || { echo "ring_bench.sh: $BENCH not found; build first (cmake --build $BUILD --target ring_bench)" >&2; exit 2; }
CORES=$(nproc)
run() {   # run SP [flags...]: one line of key=value figures
  local sp=$1; shift
  local threads=$(( CORES / sp > 0 ? CORES / sp : 1 ))
  mpiexec --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=$threads -np "$sp" "$BENCH" --seq-len "$T" --steps "$STEPS" "$@"
}
field() { sed -nE "s/.*[ ]$1=([-0-9.]+).*/\1/p" <<< "$2"; }

echo "ring bench: T=$T, $CORES cores ($(sed -nE 's/^model name\s*:\s*//p' /proc/cpuinfo | head -1)), 2 layers, dim 64, 4/2 heads"
declare -A act step wait_on wait_off peak
for sp in 1 2 4; do
  line=$(run $sp); echo "  $line" >&2
  act[$sp]=$(field act_peak_mb "$line"); step[$sp]=$(field step_s "$line"); wait_on[$sp]=$(field ring_wait_s "$line")
  peak[$sp]=$(field peak_rss_mb "$line")
  if [ $sp -gt 1 ]; then
    line=$(run $sp --ring-overlap=false); echo "  (no overlap) $line" >&2
    wait_off[$sp]=$(field ring_wait_s "$line")
  fi
done
echo
echo "| sp | peak RSS / rank (MiB) | beyond model (MiB) | vs sp=1 | step (s) | ring wait, overlap on / off (s) | hidden |"
echo "|---|---|---|---|---|---|---|"
for sp in 1 2 4; do
  ratio=$(awk -v a=${act[$sp]} -v b=${act[1]} 'BEGIN { printf "%.3f", a / b }')
  if [ $sp -gt 1 ]; then
    w="${wait_on[$sp]} / ${wait_off[$sp]}"
    hidden=$(awk -v on=${wait_on[$sp]} -v off=${wait_off[$sp]} 'BEGIN { if (off > 0) printf "%.0f%%", 100 * (1 - on / off); else print "-" }')
  else w="-"; hidden="-"; fi
  echo "| $sp | ${peak[$sp]} | ${act[$sp]} | ${ratio}× | ${step[$sp]} | $w | $hidden |"
done
