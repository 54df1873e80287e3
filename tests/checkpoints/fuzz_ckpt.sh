#!/usr/bin/env bash
# tests/checkpoints/fuzz_ckpt.sh — libFuzzer on a checkpoint's parsers, briefly; SKIP without clang. The second argument after
# the usual four picks the target: manifest (MANIFEST.json beside a real step directory), state (state.json),
# safetensors (a whole .safetensors file) or hf_config (an HF config.json).
set -u
WHAT=${5:?usage: fuzz_ckpt.sh SOURCE_DIR BUILD_DIR SECONDS RINGGPT_BIN manifest|state|safetensors|hf_config}
. "$(dirname "$0")/../fuzz.sh"
COMMON=(checkpoints/fsio.c checkpoints/safetensors.c core/common.c core/json_strict.c model/config.c model/rope.c model/shard.c model/params.c
        core/rng.c -lcjson -lz -lm)
case $WHAT in
  manifest) fuzz_build ckpt_manifest tests/checkpoints/fuzz_ckpt_manifest.c checkpoints/ckpt_format.c checkpoints/hf_config.c "${COMMON[@]}" ;;
  state) fuzz_build ckpt_state tests/checkpoints/fuzz_ckpt_state.c checkpoints/ckpt_format.c checkpoints/hf_config.c "${COMMON[@]}" ;;
  safetensors) fuzz_build safetensors tests/checkpoints/fuzz_safetensors.c "${COMMON[@]}" ;;
  hf_config) fuzz_build hf_config tests/checkpoints/fuzz_hf_config.c checkpoints/hf_config.c "${COMMON[@]}" ;;
  *) echo "unknown target $WHAT"; exit 2 ;;
esac
# Seeds from a real run of a very small model (files of a few KB): its checkpoint, and its HF export.
CORPUS=$FUZZ_DIR/corpus; rm -rf "$CORPUS" "$FUZZ_DIR/run" "$FUZZ_DIR/hf"; mkdir -p "$CORPUS"
for i in $(seq 200); do echo "checkpoint fuzz line $i"; done > "$FUZZ_DIR/t.txt"
"$BIN" train --data "$FUZZ_DIR/t.txt" --model tiny --layers 1 --dim 8 --heads 2 --ffn-dim 16 --seq-len 16 --batch 1 --steps 1 \
  --threads 1 --out "$FUZZ_DIR/run" > /dev/null || exit 1
"$BIN" export "$FUZZ_DIR/run" --to hf "$FUZZ_DIR/hf" > /dev/null || exit 1
step=$FUZZ_DIR/run/step_00000001
case $WHAT in
  manifest) for m in 0 1; do { printf "\\x0$m"; cat "$step/MANIFEST.json"; } > "$CORPUS/seed$m"; done
            export RINGGPT_FUZZ_CKPT=$step; MAX=8192 ;;
  state) cp "$step/state.json" "$CORPUS/state"   # and as a sharded checkpoint's (version 2, "shard")
         sed -e 's/"version":\t1/"version":\t2/' -e 's/"init_from":/"shard": {"level": "params", "ranks": 3}, "init_from":/' \
           "$step/state.json" > "$CORPUS/state_sharded"; MAX=8192 ;;
  safetensors) cp "$step/model.safetensors" "$CORPUS/model"; cp "$FUZZ_DIR/hf/model.safetensors" "$CORPUS/hf"; MAX=65536 ;;
  hf_config) cp "$FUZZ_DIR/hf/config.json" "$CORPUS/config"; MAX=8192 ;;
esac
fuzz_run "$FUZZ_NAME" "$CORPUS" -max_len=$MAX
