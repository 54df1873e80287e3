#!/usr/bin/env bash
# bench/threads.sh — OpenMP waiting on a shared machine: 100 tiny steps beside one CPU-bound process (--threads 1, the
# default threads with libgomp's spinning as ringgpt ran before issue 74, the default threads as it runs now), and the
# idle machine's step time of `small` at T = 1024 and 4096 with the old spinning and the new passive waiting.
# usage: bench/threads.sh [ringgpt binary]   (default build/ringgpt); prints the figures, asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(readlink -f "${1:-build/ringgpt}")
work=$(mktemp -d)
hog=""
cleanup() { [[ -n $hog ]] && kill "$hog" 2> /dev/null; rm -rf "$work"; }
trap cleanup EXIT
cat /usr/share/common-licenses/* > "$work/text.txt"
# GOMP_SPINCOUNT=300000 is libgomp's own wait when OMP_WAIT_POLICY is unset: what every run did before ringgpt set
# OMP_WAIT_POLICY=PASSIVE (a spin count the user sets is kept, so it brings the old behaviour back).
OLD=(GOMP_SPINCOUNT=300000)
# seconds LABEL CMD...: the wall time of a run, in seconds.
seconds() {
  local t0 t1
  t0=$(date +%s.%N)
  "${@:2}" > "$work/$1.log" 2>&1 || { cat "$work/$1.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }' 
}
# tiny ENV... -- FLAGS...: 100 steps of the tiny model under env ENV with extra train FLAGS.
tiny() {
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$bin" train --data "$work/text.txt" --model tiny --steps 100 --log-every 1000 --val-fraction 0 \
    --out "$work/o$RANDOM$RANDOM" "$@"
}
# steady_ms LOGDIR: the mean step_ms of metrics.jsonl past the first step.
steady_ms() {
  python3 -c 'import json,sys; r=[json.loads(l)["step_ms"] for l in open(sys.argv[1])][1:]; print(f"{sum(r)/len(r):.1f}")' "$1/metrics.jsonl"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $("$bin" --version | head -1)"
echo "== 100 tiny steps beside one CPU-bound process (a busy loop), best of 3"
python3 -c 'while True: pass' &
hog=$!
for mode in one old new; do
  best=""
  for _ in 1 2 3; do
    case $mode in
      one) s=$(seconds one tiny -- --threads 1) ;;
      old) s=$(seconds old tiny "${OLD[@]}" --) ;;
      new) s=$(seconds new tiny --) ;;
    esac
    if [[ -z $best ]] || awk -v s="$s" -v b="$best" 'BEGIN { exit !(s < b) }'; then best=$s; fi
  done
  printf "  %-34s %7.2f s\n" "$(case $mode in one) echo '--threads 1';; old) echo "default threads ($(nproc)), spinning";; new) echo "default threads ($(nproc)), passive";; esac)" "$best"
  eval "t_$mode=$best"
done
kill "$hog"; hog=""
awk -v n="$t_new" -v o="$t_old" -v one="$t_one" 'BEGIN { printf "  passive / --threads 1: %.2fx   spinning / --threads 1: %.2fx\n", n / one, o / one }' 
echo "== idle machine, small model, default threads: mean step ms past the first (3 runs each, alternating)"
for T in 1024 4096; do
  steps=6; ((T >= 4096)) && steps=4
  o=() n=()
  for rep in 1 2 3; do
    for mode in old new; do
      run=(train --data "$work/text.txt" --model small --batch 1 --seq-len $T --steps $steps --warmup 1 --val-fraction 0
           --log-every 1000 --out "$work/i_${mode}_${T}_$rep")
      if [[ $mode == old ]]; then env "${OLD[@]}" "$bin" "${run[@]}" > /dev/null; o+=("$(steady_ms "$work/i_old_${T}_$rep")")
      else "$bin" "${run[@]}" > /dev/null; n+=("$(steady_ms "$work/i_new_${T}_$rep")"); fi
    done
  done
  python3 - "$T" "${o[*]}" "${n[*]}" <<'PY'
import statistics, sys
T, old, new = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
mo, mn = statistics.median(old), statistics.median(new)
print(f"  T={T}: spinning {mo:.1f} ms ({' '.join(f'{x:.1f}' for x in old)}), passive {mn:.1f} ms "
      f"({' '.join(f'{x:.1f}' for x in new)}): passive {100 * (mn / mo - 1):+.1f} %")
PY
done
