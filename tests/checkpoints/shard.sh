#!/usr/bin/env bash
# tests/checkpoints/shard.sh — sharded checkpoints: test_ckpt_shard on 1..4 ranks; a real run's checkpoint resharded and resumed unsharded (bit for bit); inspect and export read the shards; damaged shards refused with one line.
set -uo pipefail
BIN=$1 MPIEXEC=$2 TEST=$3
. "$(dirname "$0")/common.sh"
mpirun_np() { local np=$1; shift; "$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np "$np" "$@"; }
for np in 1 2 3 4; do
  mkdir -p "$W/np$np"
  check "save on $np ranks (none, optim, params), load into every layout of 1..5 ranks at every level" mpirun_np $np "$TEST" "$W/np$np"
done

# A real run saves step 4 unsharded; its state resharded over 3 ranks (params) and 2 ranks (optim) resumes on 1x1 and
# 1x2 exactly as the unsharded checkpoint does: the same step-8 weights and moments, byte for byte.
make_text "$W/text.txt" 200
COMMON=(train --data "$W/text.txt" --model tiny --seq-len 64 --batch 2 --grad-accum 1 --steps 8 --warmup 2 --threads 1
        --ckpt-every 4 --log-every 100 --eval-every 0)
OMP_NUM_THREADS=1 "$BIN" "${COMMON[@]}" --out "$W/ref" > /dev/null 2>&1
check "reference run saved steps 4 and 8" test -f "$W/ref/step_00000008/MANIFEST.json"
mpirun_np 3 "$TEST" reshard "$W/ref/step_00000004" "$W/sh3" params
mpirun_np 2 "$TEST" reshard "$W/ref/step_00000004" "$W/sh2" optim
check "resharded over 3 ranks at params: 3 shard files, no model.safetensors" \
  bash -c "[[ \$(ls '$W/sh3/step_00000004' | grep -c '^shard_0000[0-2]_of_00003.safetensors$') == 3 && ! -e '$W/sh3/step_00000004/model.safetensors' ]]"
resume_from() {   # resume_from SRC NP OUT [flags]: SRC's step 4 copied into OUT, resumed there on NP ranks to step 8
  local src=$1 np=$2 out=$3; shift 3
  mkdir -p "$out"; cp -r "$src/step_00000004" "$out/"; echo step_00000004 > "$out/LATEST"
  mpirun_np "$np" "$BIN" "${COMMON[@]}" --out "$out" --resume "$@" > "$out.log" 2>&1
}
same_step8() { cmp -s "$1/step_00000008/model.safetensors" "$2/step_00000008/model.safetensors" &&
               cmp -s "$1/step_00000008/optim.safetensors" "$2/step_00000008/optim.safetensors"; }
resume_from "$W/sh3" 1 "$W/r3"
check "sharded (params, 3 ranks) -> unsharded 1x1: step 8 = the uninterrupted run's, byte for byte" same_step8 "$W/ref" "$W/r3"
resume_from "$W/sh2" 1 "$W/r2"
check "sharded (optim, 2 ranks) -> unsharded 1x1: the same" same_step8 "$W/ref" "$W/r2"
resume_from "$W/ref" 2 "$W/u_sp2" --sp 2
resume_from "$W/sh3" 2 "$W/s_sp2" --sp 2
check "sharded (params, 3 ranks) -> 1x2 = the unsharded checkpoint -> 1x2, byte for byte" same_step8 "$W/u_sp2" "$W/s_sp2"

# A resume on 2 ranks verifies each file on one rank (rank 1: the manifest's second file); a damaged newer checkpoint
# found there is skipped on every rank, with a warning naming the file.
F="$W/r_fallback"; mkdir -p "$F"; cp -r "$W/sh3/step_00000004" "$F/"; cp -r "$W/sh3/step_00000004" "$F/step_00000006"
echo step_00000006 > "$F/LATEST"
printf 'X' | dd of="$F/step_00000006/shard_00000_of_00003.safetensors" bs=1 seek=2000 conv=notrunc 2> /dev/null
mpirun_np 2 "$BIN" "${COMMON[@]}" --out "$F" --resume --sp 2 > "$F.log" 2>&1
check "2 ranks skip a newer checkpoint whose shard only rank 1 checks, and resume from step 4" \
  bash -c "grep -q 'resumed from $F/step_00000004 at step 4' '$F.log' && grep -q 'skipping checkpoint $F/step_00000006: .*shard_00000_of_00003.safetensors: CRC32' '$F.log'"
check "  and continues as the uninterrupted run" same_step8 "$W/u_sp2" "$F"

# A sharded save killed on rank 0 after its manifest (before the commit: kill point 7), or on rank 1 halfway through its
# shard file (point 4): no step directory appears; the next save removes the leftover step_N.tmp and commits.
for point in 1:7 1:4; do
  K="$W/killed_${point/:/_}"
  "$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -x RINGGPT_DEBUG_CKPT_KILL=$point -np 2 \
    "$TEST" reshard "$W/ref/step_00000004" "$K" params > /dev/null 2>&1
  check "killed at $point: step_00000004.tmp left, no step_00000004, no LATEST" \
    bash -c "[[ -d '$K/step_00000004.tmp' && ! -e '$K/step_00000004' && ! -e '$K/LATEST' ]]"
  mpirun_np 2 "$TEST" reshard "$W/ref/step_00000004" "$K" params
  check "  the next save commits and removes the leftover" \
    bash -c "[[ ! -e '$K/step_00000004.tmp' ]] && '$BIN' inspect '$K' > /dev/null"
done

# inspect and export read the shards: the exports of one model saved unsharded, sharded (optim) and sharded (params) on
# 4 ranks are byte-identical.
S=step_00000007
check "inspect names the sharding" bash -c "'$BIN' inspect '$W/np4/untied_params/$S' | grep -q 'sharded: --shard params over 4 ranks'"
for m in untied tied; do
  for l in none optim params; do "$BIN" export "$W/np4/${m}_$l/$S" --to hf "$W/hf_${m}_$l" > /dev/null 2>&1; done
  check "$m: export of the params shards = export of the unsharded checkpoint" \
    cmp -s "$W/hf_${m}_none/model.safetensors" "$W/hf_${m}_params/model.safetensors"
  check "$m: export of the optim shards' checkpoint = the same" \
    cmp -s "$W/hf_${m}_none/model.safetensors" "$W/hf_${m}_optim/model.safetensors"
done

# Damage: one line naming the file, exit 2, from inspect, export and a resume.
D="$W/dmg/$S"; mkdir -p "$W/dmg"; cp -r "$W/np4/untied_params/$S" "$D"
printf 'X' | dd of="$D/shard_00002_of_00004.safetensors" bs=1 seek=2000 conv=notrunc 2> /dev/null
expect_fail 2 "shard_00002_of_00004.safetensors: CRC32 is" "$BIN" inspect "$D"
expect_fail 2 "shard_00002_of_00004.safetensors: CRC32 is" "$BIN" export "$D" --to hf "$W/hf_dmg"
rm "$D/shard_00002_of_00004.safetensors"
expect_fail 2 "shard_00002_of_00004.safetensors: cannot open" "$BIN" inspect "$D"
R="$W/r_dmg"; mkdir -p "$R"; cp -r "$W/sh3/step_00000004" "$R/"; rm "$R/step_00000004/shard_00001_of_00003.safetensors"
expect_fail 2 "shard_00001_of_00003.safetensors: cannot open" "$BIN" "${COMMON[@]}" --out "$W/r_dmg2" --resume "$R/step_00000004"
check "  and that error is one line" bash -c "[[ \$(OMP_NUM_THREADS=1 '$BIN' ${COMMON[*]} --out '$W/r_dmg2' --resume '$R/step_00000004' 2>&1 >/dev/null | wc -l) == 1 ]]"
finish
