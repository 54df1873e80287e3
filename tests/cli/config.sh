#!/usr/bin/env bash
# tests/cli/config.sh — config files: --config FILE (JSON of long flag names; the command line wins; unknown keys, wrong
# types and trailing bytes exit 2), the resolved OUT/config.json, and --resume / --init-from without retyping a flag.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
make_text "$W/text.txt" 300
cat > "$W/run.json" <<JSON
{"data": "$W/text.txt", "model": "tiny", "seq-len": 32, "batch": 2, "steps": 4, "threads": 1, "lr": 0.002,
 "ckpt-every": 2, "log-every": 100, "out": "$W/full"}
JSON
check "--config FILE trains" "$BIN" train --config "$W/run.json"
check "config.json: resolved shape" grep -q '"dim":.64,' "$W/full/config.json"
check "config.json: values from the file" grep -q '"lr":.0.002,' "$W/full/config.json"
check "config.json: no --config or --resume inside" bash -c "! grep -qE '\"(config|resume)\"' '$W/full/config.json'"
"$BIN" train --config "$W/run.json" --steps 2 --out "$W/half" > /dev/null
check "the command line overrides the file" grep -q '"steps":.2,' "$W/half/config.json"
# resume with no flag but --steps: the saved config supplies the rest; bit-identical to the uninterrupted run
"$BIN" train --out "$W/half" --resume --steps 4 > "$W/resume.log" 2>&1
check "resume without flags: resumed at step 2" grep -q "resumed from $W/half/step_00000002" "$W/resume.log"
last() { tail -n 1 "$1/metrics.jsonl" | sed -E 's/.*"loss": ([-0-9.e]+).*/\1/'; }
check "resume without flags: step-4 loss equals the uninterrupted run's ($(last "$W/full"))" test "$(last "$W/full")" = "$(last "$W/half")"
check "resume from a step directory, no --out" "$BIN" train --resume "$W/half/step_00000004" --steps 5
check "it continued in the saved --out" grep -q '"step": 5,' "$W/half/metrics.jsonl"
# A run saved by an older ringgpt, whose config.json still holds flags since dropped (the fault-injection flags, now
# RINGGPT_DEBUG_* variables; --fused): it resumes. (Edited by hand, so without its checksum line.)
cp -r "$W/full" "$W/old"
python3 - "$W/old/config.json" "$W/old" << 'PY'
import json, sys
c = json.load(open(sys.argv[1]))
del c["config_crc32"]
c.update({"out": sys.argv[2], "fused": True, "debug-exit-rank": -1, "debug-exit-step": 0, "debug-stall": False,
          "debug-slow-rank": -1, "debug-slow-ms": 0, "debug-kill": False})
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY
check "an older run's config.json with retired keys resumes" "$BIN" train --out "$W/old" --resume --steps 5
expect_fail 2 "RINGGPT_DEBUG_EXIT='1x': write RANK:N" env RINGGPT_DEBUG_EXIT=1x "$BIN" train --out "$W/old" --resume --steps 6
expect_fail 2 "the third field is stall or kill" env RINGGPT_DEBUG_EXIT=0:9:nap "$BIN" train --out "$W/old" --resume --steps 6
# A low --lr without --min-lr: the schedule ends at --lr / 10 (the default 1e-4 would be above it); a fine-tune whose
# source ran with a higher --min-lr says so in a note; --min-lr above --lr on the command line is still refused.
"$BIN" train --init-from "$W/full" --out "$W/lowlr" --lr 1e-5 --steps 1 > "$W/lowlr.log" 2>&1
check "init-from at --lr 1e-5, no --min-lr: runs, min-lr 1e-6" grep -qE '"min-lr":.1e-06,' "$W/lowlr/config.json"
check "... with a note naming the source's --min-lr" grep -q "^note: --min-lr 0.0001 (from a config file) is above --lr 1e-05" "$W/lowlr.log"
expect_fail 2 "--min-lr must be between 0 and --lr" "$BIN" train --data "$W/text.txt" --lr 1e-5 --min-lr 1e-4 --out "$W/lowlr2"
# fine-tune with only what changes: the shape and the data come from the source
"$BIN" train --init-from "$W/full" --out "$W/ft" --seq-len 64 --rope-theta 20000 --steps 1 > "$W/ft.log" 2>&1
check "init-from without shape flags" grep -q "initialised the weights from $W/full/step_00000004" "$W/ft.log"
check "init-from: the new seq-len and theta" \
  bash -c "grep -qE '\"rope-theta\":.20000,' '$W/ft/config.json' && grep -qE '\"seq-len\":.64,' '$W/ft/config.json' && grep -q '\"init-from\"' '$W/ft/config.json'"
check "init-from: source's data path kept" grep -q "\"data\":.\"$W/text.txt\"" "$W/ft/config.json"
# an imported HF model: the shape from its state.json, no flag
"$BIN" export "$W/full" --to hf "$W/hf" > /dev/null && "$BIN" import "$W/hf" --out "$W/imp" > /dev/null
check "init-from an imported HF model without shape flags" \
  "$BIN" train --data "$W/text.txt" --init-from "$W/imp" --out "$W/ft_imp" --seq-len 32 --steps 1 --threads 1
check "init-from an HF directory without shape flags" \
  "$BIN" train --data "$W/text.txt" --init-from "$W/hf" --out "$W/ft_hf" --seq-len 32 --steps 1 --threads 1
head -c 8000 /dev/zero > "$W/zeros.u16"
"$BIN" prepare --out "$W/u16" --input-kind u16 --eos 5 --vocab 1000 --quiet "$W/zeros.u16" > /dev/null
expect_fail 2 "has a vocab of 260 but --data $W/u16 has 1000" "$BIN" train --init-from "$W/full" --data "$W/u16" --out "$W/v"
# bad config files
printf '{"seq-len": 32, "bogus": 1}' > "$W/unknown.json"
expect_fail 2 'unknown key "bogus"' "$BIN" train --config "$W/unknown.json" --data "$W/text.txt"
printf '{"seq-len": "long"}' > "$W/type.json"
expect_fail 2 '"seq-len" must be an integer: a number, or a string with K or M' "$BIN" train --config "$W/type.json" --data "$W/text.txt"
printf '{"steps": 1.5}' > "$W/frac.json"
expect_fail 2 '"steps" must be an integer' "$BIN" train --config "$W/frac.json" --data "$W/text.txt"
printf '{"steps": 1} x' > "$W/trail.json"
expect_fail 2 "bytes after the JSON object" "$BIN" train --config "$W/trail.json" --data "$W/text.txt"
printf '[1, 2]' > "$W/list.json"
expect_fail 2 "not a JSON object of flags" "$BIN" train --config "$W/list.json" --data "$W/text.txt"
expect_fail 2 "--config $W/none.json: cannot open" "$BIN" train --config "$W/none.json" --data "$W/text.txt"
# a refused resume leaves the saved config as it was
expect_fail 2 "field model.dim is 64 but the flags give 32" "$BIN" train --out "$W/full" --resume --dim 32
check "a refused run did not overwrite config.json" grep -q '"dim":.64,' "$W/full/config.json"
finish
