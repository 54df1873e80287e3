#!/usr/bin/env bash
# bench/fuzz.sh — every parser's libFuzzer target (the ctest fuzz tests' own scripts) for RUNS executions each (default
# 10 million), one after another; prints executions, executions per second, wall time and crashes per target.
# usage: bench/fuzz.sh [BUILD_DIR [RUNS [TARGET...]]]   (BUILD_DIR holds the built ringgpt; targets: see TARGETS)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd); RUNS=${2:-10000000}; shift $(($# > 2 ? 2 : $#))
OUT=$BUILD/fuzz_bench
# name: the script and its arguments after the usual four
declare -A TARGETS=(
  [shard]="tests/data/fuzz_shard.sh" [manifest]="tests/data/fuzz_manifest.sh" [tokenizer]="tests/tokenizer/fuzz_tokenizer.sh"
  [ckpt_manifest]="tests/checkpoints/fuzz_ckpt.sh manifest" [ckpt_state]="tests/checkpoints/fuzz_ckpt.sh state"
  [safetensors]="tests/checkpoints/fuzz_ckpt.sh safetensors" [hf_config]="tests/checkpoints/fuzz_ckpt.sh hf_config"
  [config]="tests/core/fuzz_config.sh")
ORDER=(shard manifest tokenizer ckpt_manifest ckpt_state safetensors hf_config config)
(($#)) && ORDER=("$@")
printf '%-16s %12s %10s %9s %8s\n' target executions exec/s seconds crashes
failed=0
for t in "${ORDER[@]}"; do
  read -r script arg <<<"${TARGETS[$t]:?unknown target $t}"
  t0=$(date +%s)
  log=$OUT/$t.log; mkdir -p "$OUT"
  rm -f "$OUT/fuzz_$t"/crash-* "$OUT/fuzz_$t"/leak-* "$OUT/fuzz_$t"/timeout-* "$OUT/fuzz_$t"/oom-*
  FUZZ_RUNS=$RUNS bash "$ROOT/$script" "$ROOT" "$OUT" 0 "$BUILD/ringgpt" $arg > "$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - t0))
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -1)
  crashes=$(find "$OUT" -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' 2> /dev/null | grep -c "fuzz_$t/" || true)
  [[ $rc == 0 ]] || crashes="$crashes (exit $rc)"
  [[ $rc == 0 ]] || failed=1
  printf '%-16s %12s %10s %9s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$secs" "$crashes"
done
echo "runs per target: $RUNS; logs and corpora in $OUT"
exit $failed
