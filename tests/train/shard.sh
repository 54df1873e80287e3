#!/usr/bin/env bash
# tests/train/shard.sh — --shard optim, grads and params train what the unsharded run trains: the same losses and final
# weights on one rank and on dp x sp = 1x2, 2x1, 2x2, 3x2, 4x2, with --doc-mask and every --recompute mode, clipping on.
# Bit for bit where the gradient sums run in the same order: optim at every layout (the gradients are all-reduced as
# unsharded, the norm taken over them whole, AdamW is elementwise, the gather copies); grads and params on 1 or 2 ranks
# (a sum of two terms is the same either way round). On more ranks MPI's reduce-scatter may add the ranks' gradients in
# another order than its all-reduce, a last-bit difference AdamW carries on: there within 1e-5 (losses relative, weights
# absolute; measured: 4e-8 after 3 steps). --grad-accum 2 adds each micro-batch's reduce-scattered sum in turn (unsharded
# sums the micro-batches first), so it too is within 1e-5. Tied embeddings on 2 and 4 ranks. Also the refusals of --shard.
# usage: shard.sh RINGGPT MPIEXEC
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/../harness.sh"
. "$(dirname "$0")/ring_common.sh"
make_copy_text "$W/data.txt" 200
export RINGGPT_THREADS_IGNORE_LOAD=1   # no note on a busy machine: the refusals are one line
FLAGS=(--data "$W/data.txt" --model tiny --seq-len 32 --batch 2 --steps 3 --warmup 1 --threads 1 --ckpt-every -1
       --log-every 100 --clip 0.5 --doc-mask)

# run NP OUT FLAGS...: a run on NP ranks (0: one process, no launcher); its final weights in OUT.w.
run() {
  local np=$1 out=$2; shift 2
  if [ "$np" = 0 ]; then RINGGPT_DEBUG_WEIGHTS=$out.w "$BIN" train "${FLAGS[@]}" --out "$out" "$@" > "$out.log" 2>&1
  else RINGGPT_DEBUG_WEIGHTS=$out.w mpirun_np "$np" -x RINGGPT_DEBUG_WEIGHTS "$BIN" train "${FLAGS[@]}" --out "$out" "$@" > "$out.log" 2>&1
  fi || bad "$out: exit $? ($(grep ringgpt: "$out.log" | head -1))"
}
# Every step's loss and the final validation loss.
curve() { metric_column "$1/metrics.jsonl" loss; metric_column "$1/metrics.jsonl" val_loss; }
# close A B: the two runs' losses within 1e-5 relative and weights within 1e-5 absolute; prints how far apart.
close() {
  python3 - "$1" "$2" "$(curve "$1")" "$(curve "$2")" <<'PY'
import array, sys
a, b = (array.array('f', open(p + '.w', 'rb').read()) for p in sys.argv[1:3])
la, lb = ([float(x.split()[1]) for x in c.splitlines()] for c in sys.argv[3:5])
dw = max((abs(x - y) for x, y in zip(a, b)), default=1) if len(a) == len(b) and len(a) else 1
dl = max((abs(x - y) / max(abs(x), 1e-6) for x, y in zip(la, lb)), default=1) if len(la) == len(lb) and la else 1
print(f"      weights max |diff| {dw:.2g}, losses max rel diff {dl:.2g}")
sys.exit(0 if dw <= 1e-5 and dl <= 1e-5 else 1)
PY
}
# same A B: losses and final weights bit for bit.
same() { [ -s "$1.w" ] && diff <(curve "$1") <(curve "$2") > /dev/null && cmp -s "$1.w" "$2.w"; }

# compare BASE OUT EXACT: OUT equals BASE, bit for bit when EXACT is 1, else within the tolerance.
compare() {
  if [ "$3" = 1 ]; then check "$(basename "$2"): losses and final weights bit for bit as unsharded" same "$1" "$2"
  else check "$(basename "$2"): losses and final weights within 1e-5 of unsharded$(same "$1" "$2" && echo ' (here bit for bit)')" close "$1" "$2"
  fi
}

# The recompute modes rotate over the layouts and levels: every layout and every level meets all three (recompute is
# bit for bit the same as none's on the CPU, tests/train/recompute.sh, so one unsharded run is every mode's baseline).
MODES=(none mlp full)
i=0
for layout in 1x1 1x2 2x1 2x2 3x2 4x2; do
  dp=${layout%x*} sp=${layout#*x} np=$((dp * sp))
  [ "$layout" = 1x1 ] && np=0
  base=$W/none_$layout
  run $np "$base" --sp $sp
  for level in optim grads params; do
    mode=${MODES[$((i % 3))]}
    i=$((i + 1))
    out=$W/${level}_${layout}_$mode
    run $np "$out" --sp $sp --shard $level --recompute $mode
    exact=0
    [ $level = optim ] || [ $((dp * sp)) -le 2 ] && exact=1
    compare "$base" "$out" $exact
  done
  i=$((i + 1))
done
check "metrics.jsonl: --shard params reports its gather/reduce-scatter seconds and hidden share every step" \
  test "$(grep -c '"shard_comm_s": [0-9.]*, "shard_wait_s": [0-9.]*, "shard_hidden": [-0-9.]*' "$W"/params_2x2_*/metrics.jsonl)" = 3
check "the log states the per-rank model state of --shard params" grep -q "shard params over 4 ranks: model state" "$W"/params_2x2_*.log

# --grad-accum 2: each micro-batch's sums added in turn.
run 2 "$W/none_accum" --grad-accum 2
for level in grads params; do run 2 "$W/${level}_accum" --grad-accum 2 --shard $level; compare "$W/none_accum" "$W/${level}_accum" 0; done
# Tied embeddings: the head reads and adds to the embeddings' unit, held from its forward to its backward.
for np in 2 4; do
  run $np "$W/none_tied$np" --sp 2 --tie-embeddings
  for level in optim grads params; do
    run $np "$W/${level}_tied$np" --sp 2 --tie-embeddings --shard $level
    exact=0
    [ $level = optim ] || [ $np = 2 ] && exact=1
    compare "$W/none_tied$np" "$W/${level}_tied$np" $exact
  done
done

# --init-from: the source's whole weights are loaded, then split.
run 2 "$W/source" --sp 2 --ckpt-every 0
run 2 "$W/none_init" --sp 2 --init-from "$W/source"
run 2 "$W/params_init" --sp 2 --init-from "$W/source" --shard params
compare "$W/none_init" "$W/params_init" 1
check "--init-from: the derived run starts from the source's weights, not fresh ones" \
  bash -c "! cmp -s '$W/none_init.w' '$W/none_1x2.w'"

refuses_each "$W/refused" "--shard zero"
finish
