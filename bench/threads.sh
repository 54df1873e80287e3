#!/usr/bin/env bash
# bench/threads.sh — threads on a shared machine: 100 tiny steps beside one CPU-bound process with ringgpt's default
# (--threads: the free cores; idle workers spin 2,000 iterations) against --threads 1 and against every core under
# libgomp's own spinning (300,000 iterations: what every run did before issue 74), the brief spin and none (PASSIVE);
# then the idle machine's step time of `small` at T = 1024 and 4096, the default against the old one.
# usage: bench/threads.sh [ringgpt binary]   (default build/ringgpt); prints the figures, asserts nothing.
set -euo pipefail
bin=$(readlink -f "${1:-$(dirname "$0")/../build/ringgpt}")   # relative to where it is called from
[[ -x $bin ]] || { echo "bench/threads.sh: no ringgpt binary at $bin; build it first (scripts/test.sh) or name it" >&2; exit 2; }
cd "$(dirname "$0")/.."
work=$(mktemp -d)
hog=""
cleanup() { [[ -n $hog ]] && kill "$hog" 2> /dev/null; rm -rf "$work"; }
trap cleanup EXIT
cat /usr/share/common-licenses/* > "$work/text.txt"
# A spin count the user sets is kept by ringgpt, so each policy is one environment variable.
declare -A POLICY=([libgomp]=GOMP_SPINCOUNT=300000 [ringgpt]=RINGGPT_BENCH=default [passive]=GOMP_SPINCOUNT=0)
ORDER=(libgomp ringgpt passive)
run() { "$bin" train --data "$work/text.txt" --log-every 1000 --val-fraction 0 --out "$work/o$RANDOM$RANDOM" "$@" > /dev/null; }
# seconds ENV FLAGS...: the wall time of one run.
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  env "$1" bash -c "$(declare -f run); bin='$bin' work='$work' run ${*:2}"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $("$bin" --version | head -1)"
echo "== 100 tiny steps beside one CPU-bound process (a busy loop): wall seconds of 3 runs"
python3 -c 'while True: pass' &
hog=$!
printf "  %-34s %s\n" "--threads 1" "$(for _ in 1 2 3; do seconds RINGGPT_BENCH=1 --model tiny --steps 100 --threads 1; echo -n ' '; done)"
printf "  %-34s %s\n" "default (free cores, spin 2000)" "$(for _ in 1 2 3; do seconds RINGGPT_BENCH=1 --model tiny --steps 100; echo -n ' '; done)"
for p in "${ORDER[@]}"; do
  printf "  %-34s %s\n" "--threads $(nproc), $p" "$(for _ in 1 2 3; do seconds "${POLICY[$p]}" --model tiny --steps 100 --threads "$(nproc)"; echo -n ' '; done)"
done
kill "$hog"; hog=""
echo "== idle machine, small model: mean step ms past the first, 5 runs each (alternating), median; ringgpt = the default"
echo "   (no --threads), libgomp and passive with --threads $(nproc) (libgomp: the default before issue 74)"
declare -A IDLE_THREADS=([libgomp]="--threads $(nproc)" [ringgpt]="" [passive]="--threads $(nproc)")
for T in 1024 4096; do
  steps=6; ((T >= 4096)) && steps=4
  for rep in 1 2 3 4 5; do
    for p in "${ORDER[@]}"; do
      out="$work/i_${p}_${T}_$rep"
      env "${POLICY[$p]}" "$bin" train --data "$work/text.txt" --model small --batch 1 --seq-len $T --steps $steps --warmup 1 \
        --val-fraction 0 --log-every 1000 --out "$out" ${IDLE_THREADS[$p]} > /dev/null
      python3 -c 'import json,sys; r=[json.loads(l)["step_ms"] for l in open(sys.argv[1])][1:]; print(sys.argv[2], sum(r)/len(r))' \
        "$out/metrics.jsonl" "$p" >> "$work/idle_$T"
    done
  done
  python3 - "$T" "$work/idle_$T" <<'PY'
import collections, statistics, sys
ms = collections.defaultdict(list)
for line in open(sys.argv[2]):
    p, v = line.split()
    ms[p].append(float(v))
base = statistics.median(ms["libgomp"])
print(f"  T={sys.argv[1]}: " + ", ".join(f"{p} {statistics.median(v):.1f} ms ({100 * (statistics.median(v) / base - 1):+.1f} %)"
                                          for p, v in ms.items()))
PY
done
