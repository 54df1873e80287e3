#!/usr/bin/env bash
# tests/cli/inputs.sh — inputs checked like the command line and outputs checked before the work: JSONL or binary given to
# train --data, empty and non-empty prepare targets (the lock, --out-exists move, a failed prepare leaves nothing),
# inspect --verify of a dataset's tokenizer.json, strict config files (duplicate keys, control bytes, non-finite
# numbers), strict HF config.json, output paths of passkey, eval and export, damaged data met during training (exit 2).
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/common.sh"
make_text "$W/text.txt" 300
T=(train --model tiny --seq-len 32 --batch 2 --steps 2 --threads 1 --log-every 1000)
quiet() { "$@" > /dev/null 2>&1; }
snapshot() { (cd "$1" && find . -type f -exec md5sum {} + | sort); }

# --- train --data: the wrong kind of file points at prepare -------------------------------------------------------
for i in $(seq 50); do printf '{"prompt": "question %d? ", "completion": "answer %d"}\n' "$i" "$i"; done > "$W/qa.jsonl"
cp "$W/qa.jsonl" "$W/qa.txt"
expect_fail 2 "looks like JSONL records" "$BIN" "${T[@]}" --data "$W/qa.jsonl" --out "$W/r1"
expect_fail 2 "ringgpt prepare --out DIR $W/qa.txt" "$BIN" "${T[@]}" --data "$W/qa.txt" --out "$W/r1"
head -c 200000 /dev/urandom > "$W/blob.bin"; printf '\0' >> "$W/blob.bin"; head -c 100 /dev/zero >> "$W/blob.bin"
printf '\0' | dd of="$W/blob.bin" bs=1 seek=100 conv=notrunc 2> /dev/null
expect_fail 2 "looks binary (a NUL byte at byte" "$BIN" "${T[@]}" --data "$W/blob.bin" --out "$W/r1"
check "refused runs created no --out" test ! -e "$W/r1"
"$BIN" prepare --out "$W/qa" --quiet "$W/qa.jsonl" > /dev/null
check "the same JSONL through prepare trains" quiet "$BIN" "${T[@]}" --data "$W/qa" --out "$W/r_qa"

# --- prepare: empty inputs, used directories, the lock, failures ----------------------------------------------------
: > "$W/empty.txt"
expect_fail 2 "every input is empty" "$BIN" prepare --out "$W/ds_empty" "$W/empty.txt"
check "an empty input makes no dataset directory" test ! -e "$W/ds_empty"
"$BIN" prepare --out "$W/ds" --quiet "$W/text.txt" > /dev/null
snapshot "$W/ds" > "$W/ds.before"
make_text "$W/other.txt" 100
expect_fail 2 "--out $W/ds is not empty" "$BIN" prepare --out "$W/ds" --quiet "$W/other.txt"
check "refused: the dataset is as it was (no stale shards mixed in)" diff "$W/ds.before" <(snapshot "$W/ds")
"$BIN" prepare --out "$W/ds" --out-exists move --quiet "$W/other.txt" > /dev/null 2>&1
check "--out-exists move: the old dataset whole at ds.old1" diff "$W/ds.before" <(snapshot "$W/ds.old1")
check "--out-exists move: the new one verifies" quiet "$BIN" inspect --verify "$W/ds"
mkdir "$W/ds_locked"
python3 -c "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[2], 'w').close(); time.sleep(30)" \
  "$W/ds_locked/.ringgpt.lock" "$W/held" &   # another process holds the lock, then says so
holder=$!
for _ in $(seq 300); do [[ -e $W/held ]] && break; sleep 0.1; done   # a fixed sleep raced the holder under load (ASan, -j2)
check "the other process holds the lock (within 30 s)" test -e "$W/held"
expect_fail 2 "is being written by another ringgpt process" "$BIN" prepare --out "$W/ds_locked" --quiet "$W/text.txt"
kill $holder; wait $holder 2> /dev/null
check "once the holder is gone, prepare takes the directory" quiet "$BIN" prepare --out "$W/ds_locked" --quiet "$W/text.txt"
mkdir "$W/ds_crashed"; printf 'partial' > "$W/ds_crashed/train_000000.rgs.tmp"; printf 'x' > "$W/ds_crashed/manifest.json.tmp"
check "a killed prepare's .tmp files do not block the next one" quiet "$BIN" prepare --out "$W/ds_crashed" --quiet "$W/text.txt"
check "  and are gone" bash -c "! ls '$W'/ds_crashed/*.tmp 2> /dev/null"
for i in $(seq 2000); do echo '{"prompt": "question", "completion": "answer"}'; done > "$W/j_bad.jsonl"
echo 'not a record' >> "$W/j_bad.jsonl"   # the last line: shards were written before prepare meets it
"$BIN" prepare --out "$W/ds_bad" --quiet --shard-tokens 1000 "$W/j_bad.jsonl" > /dev/null 2>&1
check "a prepare that fails on its input leaves no directory (no shard, no .tmp)" test ! -e "$W/ds_bad"

# --- inspect --verify checks the tokenizer a dataset carries --------------------------------------------------------
"$BIN" tokenizer train --quiet --vocab 300 --out "$W/tok.json" "$W/text.txt" > /dev/null
"$BIN" prepare --out "$W/bpe" --tokenizer "$W/tok.json" --quiet "$W/text.txt" > /dev/null
check "inspect --verify of a BPE dataset" quiet "$BIN" inspect --verify "$W/bpe"
cp -r "$W/bpe" "$W/bpe_gone"; rm "$W/bpe_gone/tokenizer.json"
expect_fail 2 "tokenizer.json" "$BIN" inspect --verify "$W/bpe_gone"
cp -r "$W/bpe" "$W/bpe_empty"; : > "$W/bpe_empty/tokenizer.json"
expect_fail 2 "tokenizer.json" "$BIN" inspect --verify "$W/bpe_empty"

# --- config files read as strictly as flags -------------------------------------------------------------------------
printf '{"steps": 3, "steps": 5}' > "$W/dup.json"
expect_fail 2 'the key "steps" appears twice' "$BIN" train --config "$W/dup.json" --data "$W/text.txt" --out "$W/r2"
printf '{"steps": 3, "--steps": 5}' > "$W/dup2.json"
expect_fail 2 "the flag --steps appears twice" "$BIN" train --config "$W/dup2.json" --data "$W/text.txt" --out "$W/r2"
printf '{"steps":\x0b3}' > "$W/ctrl.json"
expect_fail 2 "is a control character (0x0b)" "$BIN" train --config "$W/ctrl.json" --data "$W/text.txt" --out "$W/r2"
printf '{"lr": 1e999}' > "$W/inf.json"
expect_fail 2 '"lr" must be a finite number' "$BIN" train --config "$W/inf.json" --data "$W/text.txt" --out "$W/r2"
printf '{"lr": 1e300}' > "$W/big.json"
expect_fail 2 '"lr" must be a finite number' "$BIN" train --config "$W/big.json" --data "$W/text.txt" --out "$W/r2"
expect_fail 2 "--lr expects a number" "$BIN" train --lr 1e300 --data "$W/text.txt" --out "$W/r2"
printf '{"seed": 1e30}' > "$W/seed.json"
expect_fail 2 '"seed" must be an integer' "$BIN" train --config "$W/seed.json" --data "$W/text.txt" --out "$W/r2"
printf '{"sp": 0}' > "$W/sp0.json"
expect_fail 2 "--sp must be at least 1 (got 0)" "$BIN" train --config "$W/sp0.json" --data "$W/text.txt" --out "$W/r2"

# --- HF config.json: typos, other models, duplicates ----------------------------------------------------------------
"$BIN" "${T[@]}" --data "$W/text.txt" --out "$W/run" > /dev/null
"$BIN" export "$W/run" --to hf "$W/hf" > /dev/null
hf_variant() {  # hf_variant NAME PYTHON: a copy of the export with config.json changed (c: the dict; raw: the text)
  cp -r "$W/hf" "$W/$1"
  python3 -c "import json,sys; p=sys.argv[1]+'/config.json'; c=json.load(open(p)); raw=None; $2
open(p,'w').write(raw if raw is not None else json.dumps(c, indent=2))" "$W/$1"
}
hf_variant hf_typo "c['rms_norm_epz'] = c.pop('rms_norm_eps')"
expect_fail 2 'did you mean "rms_norm_eps"' "$BIN" import "$W/hf_typo" --out "$W/imp1"
hf_variant hf_noeps "del c['rms_norm_eps']"
expect_fail 2 "field rms_norm_eps is missing" "$BIN" import "$W/hf_noeps" --out "$W/imp1"
hf_variant hf_tiny_eps "c['rms_norm_eps'] = 1e-75"   # > 0 as a double, 0 as the float the model keeps (found by fuzzing)
expect_fail 2 "field rms_norm_eps is 1e-75" "$BIN" import "$W/hf_tiny_eps" --out "$W/imp1"
hf_variant hf_gpt2 "c['model_type'] = 'gpt2'"
expect_fail 2 "only Llama models" "$BIN" import "$W/hf_gpt2" --out "$W/imp1"
hf_variant hf_dup "raw = json.dumps(c)[:-1] + ', \"hidden_size\": 32}'"
expect_fail 2 'the key "hidden_size" appears twice' "$BIN" import "$W/hf_dup" --out "$W/imp1"
hf_variant hf_huge "c['num_hidden_layers'] = 1e12"
expect_fail 2 "field num_hidden_layers is 1e+12" "$BIN" import "$W/hf_huge" --out "$W/imp1"
check "refused imports created no --out" test ! -e "$W/imp1"
check "the export itself imports" quiet "$BIN" import "$W/hf" --out "$W/imp_ok"

# --- outputs checked (created or refused) before the work -----------------------------------------------------------
out=$("$BIN" passkey "$W/run" --lengths 256 --depths 0.5 --trials 1 --threads 1 --out "$W/pk/pk" 2>&1); rc=$?
check "passkey --out pk/pk with no pk/: created, results written (exit $rc)" test $rc = 0 -a -s "$W/pk/pk.json" -a -s "$W/pk/pk.csv"
touch "$W/file"
out=$("$BIN" passkey "$W/run" --lengths 256 --depths 0.5 --trials 1 --threads 1 --out "$W/file/pk" 2>&1); rc=$?
check "passkey --out under a file: exit 2 before the evaluation ($rc)" \
  bash -c '[[ $1 == 2 && $2 != *"exact match"* && $2 == *"--out"* ]]' _ $rc "$out"
expect_fail 2 "is a file, not a directory" "$BIN" eval "$W/run" --data "$W/text.txt" --batches 1 --threads 1 --dump-logits "$W/file/d"
expect_fail 2 "is a file, not a directory" "$BIN" export "$W/run" --to hf "$W/file/hf"
expect_fail 2 "holds a training run or a dataset" "$BIN" export "$W/run" --to hf "$W/run"

# --- damaged data met in the middle of a run is bad input: exit 2, one line, on one rank and under mpiexec -----------
mkdir -p "$W/docs"
for i in $(seq 40); do make_text "$W/docs/d$i.txt" 60; done
"$BIN" prepare --out "$W/dmg" --quiet --val-fraction 0 --shard-tokens 20000 --block-tokens 2000 "$W/docs" > /dev/null
last=$(ls "$W"/dmg/train_*.rgs | sed -n 3p)   # the third shard: reached after ~40K tokens, mid-run
python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[300]^=0xff; open(p,'wb').write(b)" "$last"
expect_fail 2 "CRC mismatch" "$BIN" train --data "$W/dmg" --model tiny --seq-len 64 --batch 4 --steps 400 --no-shuffle \
  --val-fraction 0 --threads 1 --out "$W/r_dmg"
rc=0; err=$("$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np 2 "$BIN" train --data "$W/dmg" --model tiny \
  --seq-len 64 --batch 4 --steps 400 --no-shuffle --val-fraction 0 --threads 1 --out "$W/r_dmg2" 2>&1 > /dev/null) || rc=$?
check "under mpiexec too: exit 2 with the CRC line (exit $rc)" bash -c '[[ $1 == 2 && $2 == *"CRC mismatch"* ]]' _ $rc "$err"
finish
