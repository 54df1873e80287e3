#!/usr/bin/env bash
# tests/checkpoints/corruption.sh — every damage is detected and named: missing/truncated/bit-flipped files, manifest mismatch,
# unknown version, flags that contradict the checkpoint; --resume falls back to the newest valid checkpoint.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
make_text "$W/text.txt" 200
TRAIN=(train --data "$W/text.txt" --model tiny --seq-len 48 --batch 2 --warmup 2 --threads 1 --ckpt-every 2 --log-every 100)
"$BIN" "${TRAIN[@]}" --steps 4 --out "$W/base" > /dev/null
fresh() { rm -rf "$W/r"; cp -r "$W/base" "$W/r"; }
s4=$W/r/step_00000004
# damage: description, command that damages step 4, expected text naming the file and the problem
damage() {
  local what=$1 pattern=$2; shift 2
  fresh; "$@"
  local err rc=0
  err=$("$BIN" eval "$s4" --data "$W/text.txt" --seq-len 48 --batches 1 2>&1 >/dev/null) || rc=$?
  if [[ $rc != 0 && $err == *"$pattern"* ]]; then ok "$what: eval refuses: $err"; else bad "$what: eval rc $rc: $err"; fi
  rc=0
  err=$("$BIN" "${TRAIN[@]}" --steps 6 --out "$W/r" --resume 2>&1) || rc=$?
  if [[ $rc == 0 && $err == *"skipping checkpoint $s4"* && $err == *"resumed from $W/r/step_00000002"* ]]; then
    ok "$what: resume falls back to step 2"
  else bad "$what: resume rc $rc: $err"; fi
}
flip() { "$PYNP" -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[int(sys.argv[2])]^=4; open(p,'wb').write(b)" "$@"; }
damage "missing model file" "model.safetensors: cannot open" rm "$s4/model.safetensors"
damage "truncated optimizer file" "optim.safetensors: size is" truncate -s 1000 "$s4/optim.safetensors"
damage "bit flip in the weights" "model.safetensors: CRC32" flip "$s4/model.safetensors" 4000
damage "bit flip in state.json" "state.json: CRC32" flip "$s4/state.json" 20
damage "missing manifest (incomplete save)" "MANIFEST.json: missing" rm "$s4/MANIFEST.json"
damage "manifest size mismatch" "the manifest says" sed -i 's/"size":\t\([0-9]*\)/"size":\t1\1/' "$s4/MANIFEST.json"
damage "unknown manifest version" "MANIFEST.json: field version is 99" sed -i 's/"version":\t1/"version":\t99/' "$s4/MANIFEST.json"
# an unknown state.json version with a consistent manifest: the version check, not the CRC, must catch it
bump_state() {
  sed -i 's/"version":\t1,/"version":\t7,/' "$s4/state.json"
  "$PYNP" - "$s4" <<'PY'
import json, os, sys, zlib
d = sys.argv[1]; text = open(f"{d}/MANIFEST.json").read()   # edited in place: the manifest must stay as ringgpt prints it
for f in json.loads(text)["files"]:
    b = open(os.path.join(d, f["name"]), "rb").read()
    text = text.replace('"size":\t%d' % f["size"], '"size":\t%d' % len(b)).replace(f["crc32"], "%08x" % zlib.crc32(b))
open(f"{d}/MANIFEST.json", "w").write(text)
PY
}
fresh; bump_state
expect_fail 2 "state.json: field version is 7" "$BIN" eval "$s4" --data "$W/text.txt" --seq-len 48 --batches 1
# every checkpoint damaged: a clear error, nothing overwritten
fresh; rm "$W/r/step_00000002/model.safetensors" "$s4/model.safetensors"
expect_fail 2 "none of the 2 checkpoints is valid" "$BIN" "${TRAIN[@]}" --steps 6 --out "$W/r" --resume
check "nothing was deleted" test -d "$W/r/step_00000002" -a -d "$s4"
# a damaged newest checkpoint that the resumed run reaches again is moved aside, never deleted
fresh; flip "$s4/model.safetensors" 4000
"$BIN" "${TRAIN[@]}" --steps 6 --out "$W/r" --resume > /dev/null 2>&1
check "damaged step 4 moved aside to step_00000004.damaged1" test -f "$W/r/step_00000004.damaged1/model.safetensors"
check "the re-made step 4 verifies" "$BIN" eval "$s4" --data "$W/text.txt" --seq-len 48 --batches 1 --dump-logits "$W/d"
# flags that contradict the checkpoint
expect_fail 2 "field model.dim is 64 but the flags give 32 (--dim)" "$BIN" "${TRAIN[@]}" --steps 6 --dim 32 --out "$W/base" --resume
expect_fail 2 "field run.lr is 0.001 but the flags give 0.002" "$BIN" "${TRAIN[@]}" --steps 6 --lr 2e-3 --out "$W/base" --resume
expect_fail 2 "field run.seq_len" "$BIN" "${TRAIN[@]}" --steps 6 --seq-len 32 --out "$W/base" --resume
mkdir -p "$W/nothing"; expect_fail 2 "not a checkpoint" "$BIN" eval "$W/nothing" --data "$W/text.txt"
finish
