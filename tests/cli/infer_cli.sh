#!/usr/bin/env bash
# tests/cli/infer_cli.sh — eval, sample and passkey through the binary: rings of sp ranks give one rank's results; bad input fails in one line.
# Usage: infer_cli.sh RINGGPT MPIEXEC
# A tiny model trained 30 steps on copy text (so its greedy answers vary) is evaluated on one rank and on
# rings: eval loss within 1e-6 relative at sp 2, 3, 4 and dp 2 x sp 2; sample's greedy continuation of a
# prompt from a file and from stdin identical at sp 1, 2, 3; passkey's decoded answers identical at sp 1, 2, 4
# (with the generator's filler and with a --haystack); then the bad inputs, each exit 2 with one line.
set -euo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/../train/ring_common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
fail() { echo "FAIL: $*"; exit 1; }
make_copy_text "$W/copy.txt" 400
"$BIN" train --data "$W/copy.txt" --model tiny --seq-len 48 --batch 8 --steps 80 --lr 3e-3 --warmup 5 --threads 1 \
  --log-every 30 --out "$W/run" >/dev/null

# eval: loss of one rank vs rings (and dp groups)
eval_loss() { sed -nE 's/^eval: loss ([0-9.]+) .*/\1/p'; }
ref=$("$BIN" eval "$W/run" --data "$W/copy.txt" --seq-len 48 --batch 2 --batches 4 --threads 1 | eval_loss)
[[ -n $ref ]] || fail "no eval loss from one rank"
for layout in "2 2" "3 3" "4 4" "4 2"; do
  read -r np sp <<<"$layout"
  got=$(mpirun_np "$np" "$BIN" eval "$W/run" --data "$W/copy.txt" --seq-len 48 --batch 2 --batches 4 --threads 1 --sp "$sp" | eval_loss)
  awk -v a="$ref" -v b="$got" 'BEGIN { d = (a - b) / a; if (d < 0) d = -d; exit !(b != "" && d <= 1e-6) }' ||
    fail "eval loss over $np ranks (sp $sp) is '$got', one rank $ref"
  ok "eval loss over $np ranks (sp $sp) $got = one rank's $ref"
done

# sample: greedy continuation of a 300-byte prompt, from a file and from stdin
head -c 300 "$W/copy.txt" > "$W/prompt.txt"
ref=$("$BIN" sample "$W/run" --prompt-file "$W/prompt.txt" --tokens 40 --temperature 0 2>/dev/null)
[[ ${#ref} -ge 20 ]] || fail "sample printed '$ref'"
for sp in 2 3; do
  got=$(mpirun_np "$sp" "$BIN" sample "$W/run" --prompt-file "$W/prompt.txt" --tokens 40 --temperature 0 --sp "$sp" 2>/dev/null)
  [[ $got == "$ref" ]] || fail "sample over sp $sp: '$got', one rank: '$ref'"
  got=$(mpirun_np "$sp" "$BIN" sample "$W/run" --prompt-file - --tokens 40 --temperature 0 --sp "$sp" < "$W/prompt.txt" 2>/dev/null)
  [[ $got == "$ref" ]] || fail "sample over sp $sp from stdin: '$got', one rank: '$ref'"
  ok "sample over sp $sp (file and stdin) = one rank: $ref"
done
# --prompt-ids: the same prompt as ids (EOS 256, the byte-level model's start token, then the bytes), on the ring too
ids=256,$(od -An -v -tu1 "$W/prompt.txt" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
got=$(mpirun_np 2 "$BIN" sample "$W/run" --prompt-ids "$ids" --tokens 40 --temperature 0 --sp 2 2>/dev/null)
[[ $got == "$ref" ]] || fail "sample --prompt-ids over sp 2: '$got', --prompt-file: '$ref'"
ok "sample --prompt-ids (the prompt's bytes after EOS) over sp 2 = --prompt-file on one rank"

# passkey: the decoded answers (and keys) of every cell
answers() { grep -E '"(keys|answers)"' "$1"; }
"$BIN" passkey "$W/run" --lengths 200,301 --depths 0:1:0.5 --trials 2 --threads 1 --out "$W/pk1" >/dev/null
"$BIN" passkey "$W/run" --lengths 300 --depths 0,1 --trials 2 --threads 1 --haystack "$W/copy.txt" --out "$W/hay1" >/dev/null
[[ -s $W/pk1.csv && $(wc -l < "$W/pk1.csv") -eq 7 ]] || fail "passkey CSV: $(cat "$W/pk1.csv")"
for sp in 2 4; do
  mpirun_np "$sp" "$BIN" passkey "$W/run" --lengths 200,301 --depths 0:1:0.5 --trials 2 --threads 1 --sp "$sp" --out "$W/pk$sp" >/dev/null
  [[ $(answers "$W/pk$sp.json") == "$(answers "$W/pk1.json")" ]] || fail "passkey answers over sp $sp differ from one rank's"
  mpirun_np "$sp" "$BIN" passkey "$W/run" --lengths 300 --depths 0,1 --trials 2 --threads 1 --haystack "$W/copy.txt" --sp "$sp" \
    --out "$W/hay$sp" >/dev/null
  [[ $(answers "$W/hay$sp.json") == "$(answers "$W/hay1.json")" ]] || fail "needle answers over sp $sp differ from one rank's"
  ok "passkey and needle answers over sp $sp = one rank's"
done
grep -q "The grass is green" <<<"$(answers "$W/hay1.json")" && fail "the haystack run used the generator's filler"
# --docs: each trial's prompt, its answer as in the JSON, the filler read from the recorded haystack offset
"$BIN" passkey "$W/run" --lengths 300 --depths 0,1 --trials 2 --threads 1 --haystack "$W/copy.txt" --docs --out "$W/hayd" > "$W/hayd.log"
grep -qF "every trial's document in $W/hayd.docs.jsonl" "$W/hayd.log" && ok "passkey --docs names its file" || fail "passkey --docs: no line names $W/hayd.docs.jsonl"
python3 - "$W/hayd.docs.jsonl" "$W/hay1.json" "$W/copy.txt" <<'PYEOF' && ok "passkey --docs: every trial's prompt from its haystack offset" || fail "passkey --docs"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
cells, text = json.load(open(sys.argv[2]))["cells"], open(sys.argv[3], "rb").read()
assert len(lines) == len(cells) * 2
checked = 0
for i, d in enumerate(lines):
    cell = cells[i // 2]
    assert (d["length"], d["depth"], d["trial"]) == (cell["length"], cell["depth"], i % 2)
    assert d["key"] == cell["keys"][i % 2] and d["answer"] == cell["answers"][i % 2]
    doc = d["prompt"].encode("latin-1")
    assert len(doc) == d["answer_pos"] and doc[d["key_pos"]:d["key_pos"] + 5] == d["key"].encode()
    intro = b"There is a pass key hidden in this text. Remember it. "
    assert doc.startswith(intro), doc[:80]
    at, n = d["haystack_offset"], d["needle_pos"] - len(intro)   # the filler before the needle: the window's start
    assert 0 <= at < len(text) and doc[len(intro):d["needle_pos"]] == (text * 2)[at:at + n]
    checked += n > 0
assert checked >= 2, "no trial with filler before its needle"
PYEOF
# distractors: the same answers over the ring; the JSON records the count and the haystack's bytes and CRC
"$BIN" passkey "$W/run" --lengths 400 --depths 0,1 --trials 2 --threads 1 --distractors 3 --haystack "$W/copy.txt" --docs --out "$W/dis1" >/dev/null
mpirun_np 2 "$BIN" passkey "$W/run" --lengths 400 --depths 0,1 --trials 2 --threads 1 --distractors 3 --haystack "$W/copy.txt" --sp 2 \
  --out "$W/dis2" >/dev/null
[[ $(answers "$W/dis2.json") == "$(answers "$W/dis1.json")" ]] || fail "distractor answers over sp 2 differ from one rank's"
grep -qE '"distractors":\s*3' "$W/dis1.json" && grep -qE '"haystack_crc32":\s*"[0-9a-f]{8}"' "$W/dis1.json" \
  && ok "passkey --distractors 3 in a haystack over sp 2 = one rank's; recorded in the JSON" || fail "distractor JSON: $(head -c 400 "$W/dis1.json")"
# each trial's distractor keys (3, none the asked key, the same over the ring) and the share of answers that are one
python3 - "$W/dis1.json" "$W/dis2.json" <<'PYEOF' && ok "passkey records the distractors' keys and the answers that copied one" || fail "other_keys / other_key_match"
import json, sys
one, two = (json.load(open(p))["cells"] for p in sys.argv[1:])
for a, b in zip(one, two):
    assert a["other_keys"] == b["other_keys"], "over sp 2"
    assert len(a["other_keys"]) == 2 and all(len(o) == 3 and k not in o and all(len(x) == 5 for x in o) for k, o in zip(a["keys"], a["other_keys"]))
    assert a["other_key_match"] == sum(ans in o for ans, o in zip(a["answers"], a["other_keys"])) / 2
    assert a["drifted"] == sum(ans != k and ans not in o and ans[0] == k[0] for k, ans, o in zip(a["keys"], a["answers"], a["other_keys"])) / 2
    assert a["first_keys"] == b["first_keys"], "first needles over sp 2"
    assert a["first_key_match"] == sum(ans in o and ans == f for ans, o, f in zip(a["answers"], a["other_keys"], a["first_keys"])) / 2
PYEOF
# first_keys: the key of each document's first needle, as the prompt the model read has it (OUT.docs.jsonl)
python3 - "$W/dis1.json" "$W/dis1.docs.jsonl" <<'PYEOF' && ok "passkey records each document's first needle" || fail "first_keys"
import json, re, sys
firsts = [f for c in json.load(open(sys.argv[1]))["cells"] for f in c["first_keys"]]
prompts = [json.loads(line)["prompt"] for line in open(sys.argv[2])]
seen = [re.search(r"The pass key for \w+ is (\d{5})\. Remember it\.", p).group(1) for p in prompts]
assert len(firsts) == len(seen) == 4 and firsts == seen, (firsts, seen)
assert any(f != json.loads(line)["key"] for f, line in zip(firsts, open(sys.argv[2]))), "the asked needle first in every trial"
PYEOF

# bad input: exit 2, one line naming the problem
expect2() {
  local pattern=$1; shift
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  [[ $rc -eq 2 ]] || fail "exit $rc (expected 2) from: $* : $err"
  grep -q -- "$pattern" <<<"$err" || fail "'$pattern' not in: $err"
  [[ $(grep -c 'ringgpt:' <<<"$err") -eq 1 ]] || fail "expected one error line from: $*: $err"
  ok "exit 2: $(grep 'ringgpt:' <<<"$err")"
}
expect2 "too short for a passkey" "$BIN" passkey "$W/run" --lengths 100 --threads 1
expect2 "outside 0..1" "$BIN" passkey "$W/run" --depths 0:2:0.5 --threads 1
expect2 "write e.g. --lengths" "$BIN" passkey "$W/run" --lengths 1X --threads 1
head -c 150 "$W/copy.txt" > "$W/short.txt"
expect2 "fewer than a document of --lengths 1024" "$BIN" passkey "$W/run" --lengths 1K --haystack "$W/short.txt" --threads 1
expect2 "distractors 9: give 0..8" "$BIN" passkey "$W/run" --distractors 9 --threads 1
expect2 "or fewer --distractors" "$BIN" passkey "$W/run" --lengths 200 --distractors 3 --threads 1
expect2 "cannot open" "$BIN" passkey "$W/run" --haystack "$W/nothing" --threads 1
expect2 "not divisible by 2·sp" mpirun_np 3 "$BIN" eval "$W/run" --data "$W/copy.txt" --seq-len 50 --sp 3 --threads 1
expect2 "multiple of dp" mpirun_np 2 "$BIN" eval "$W/run" --data "$W/copy.txt" --seq-len 48 --batches 3 --threads 1
expect2 "sp = 2 ranks" mpirun_np 4 "$BIN" sample "$W/run" --prompt x --sp 2 --threads 1
# --threads below 1 when given (left out: every core): exit 2, one line from rank 0 under mpiexec too, not one per rank
expect2 "threads must be at least 1 (got 0)" mpirun_np 2 "$BIN" passkey "$W/run" --lengths 400 --depths 0 --trials 1 --sp 2 --threads 0
expect2 "threads must be at least 1 (got -2)" mpirun_np 2 "$BIN" eval "$W/run" --data "$W/copy.txt" --seq-len 48 --batches 2 --threads -2
expect2 "threads must be at least 1 (got 0)" mpirun_np 2 "$BIN" sample "$W/run" --prompt x --sp 2 --threads 0
expect2 "cannot open" "$BIN" sample "$W/run" --prompt-file "$W/nothing"
rc=0; err=$("$BIN" passkey "$W/nothing" 2>&1 >/dev/null) || rc=$?
[[ $rc -ne 0 && $(grep -c 'ringgpt:' <<<"$err") -eq 1 ]] || fail "missing checkpoint: exit $rc: $err"
ok "missing checkpoint: exit $rc: $err"
echo "$pass passed, 0 failed"
