#!/usr/bin/env bash
# tests/checkpoints/shard_train.sh — train --shard saves sharded checkpoints and resumes them on another rank count, layout and level.
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/common.sh"
mpirun_np() { local np=$1; shift; "$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -x RINGGPT_THREADS_IGNORE_LOAD=1 -np "$np" "$@"; }
make_text "$W/text.txt" 300
# 4 sequences per step whatever the layout (--batch is per data-parallel group).
COMMON=(train --data "$W/text.txt" --model tiny --seq-len 64 --grad-accum 1 --steps 8 --warmup 2 --threads 1
        --ckpt-every 4 --log-every 100 --eval-every 0)
mpirun_np 2 "$BIN" "${COMMON[@]}" --batch 2 --shard params --out "$W/params" > /dev/null 2>&1
check "--shard params on 2 ranks: step 4 is two shard files and no model.safetensors" \
  bash -c "[[ -f '$W/params/step_00000004/shard_00001_of_00002.safetensors' && ! -e '$W/params/step_00000004/model.safetensors' ]]"
mpirun_np 2 "$BIN" "${COMMON[@]}" --batch 2 --shard none --out "$W/none" > /dev/null 2>&1
resume_from() {   # resume_from OUT NP [flags]: the params run's step 4 copied into OUT, resumed there on NP ranks to step 8
  local out=$1 np=$2; shift 2
  mkdir -p "$out"; cp -r "$W/params/step_00000004" "$out/"; echo step_00000004 > "$out/LATEST"
  mpirun_np "$np" "$BIN" "${COMMON[@]}" --out "$out" --resume "$@" > "$out.log" 2>&1
}
same_files() { local f; for f in "$1"/step_00000008/*.safetensors; do cmp -s "$f" "$2/step_00000008/${f##*/}" || return 1; done; }
resume_from "$W/same" 2 --batch 2 --shard params
check "resumed on the same layout and level: step 8's files = the uninterrupted run's, byte for byte" same_files "$W/params" "$W/same"
resume_from "$W/to_none" 2 --batch 2 --shard none
check "params (2 ranks) -> none (2 ranks): step 8 = the unsharded run's, byte for byte" same_files "$W/none" "$W/to_none"
# Other rank counts and levels: the losses of steps 5..8 equal the uninterrupted run's within 1e-5 (the reduction order
# of the gradients may change with the layout).
close() {
  paste -d' ' <(losses "$W/params/metrics.jsonl" | tail -n +5) <(losses "$1/metrics.jsonl") | awk '
    { n++; d = $2 - $4; if (d < 0) d = -d; if ($1 != $3) bad = 1; if (d > w) w = d }
    END { printf "  %d steps, worst |dloss| %.2e\n", n, w; exit (n != 4 || bad || w > 1e-5) }'
}
resume_from "$W/r1" 1 --batch 4 --shard none
check "params (2 ranks) -> one rank, unsharded: losses match" close "$W/r1"
resume_from "$W/r4" 4 --batch 2 --sp 2 --shard optim
check "params (2 ranks) -> optim on 2x2: losses match" close "$W/r4"
check "  and it saved 4 shard files beside model.safetensors" \
  bash -c "[[ -f '$W/r4/step_00000008/shard_00003_of_00004.safetensors' && -f '$W/r4/step_00000008/model.safetensors' ]]"
resume_from "$W/r4g" 4 --batch 1 --shard grads
check "params (2 ranks) -> grads on 4x1: losses match" close "$W/r4g"
# --init-from a sharded checkpoint into a sharded run: the same losses as into an unsharded one.
INIT=(train --data "$W/text.txt" --model tiny --seq-len 64 --batch 2 --steps 3 --warmup 1 --threads 1 --log-every 1
      --eval-every 0 --ckpt-every -1 --init-from "$W/params/step_00000008")
mpirun_np 2 "$BIN" "${INIT[@]}" --shard none --out "$W/init_none" > /dev/null 2>&1
mpirun_np 2 "$BIN" "${INIT[@]}" --shard params --out "$W/init_params" > /dev/null 2>&1
same_losses() { [[ -s "$1/metrics.jsonl" ]] && diff <(losses "$1/metrics.jsonl") <(losses "$2/metrics.jsonl") > /dev/null; }
check "--init-from the shards, into --shard params and --shard none: the same losses" same_losses "$W/init_none" "$W/init_params"
finish
