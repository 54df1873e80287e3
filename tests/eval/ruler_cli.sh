#!/usr/bin/env bash
# tests/eval/ruler_cli.sh — `ringgpt ruler` through the binary on tiny models (byte-level, BPE): the table and results.json's shape, its averages and effective length recomputed, determinism, rings and dp groups giving one rank's answers, bad arguments exiting 2 with one line.
# Usage: ruler_cli.sh RINGGPT MPIEXEC
# The model is trained 80 steps on copy text: its scores are about 0; what is checked is everything around them.
set -uo pipefail
BIN=$1 MPIEXEC=${2:-}
. "$(dirname "$0")/../cli/common.sh"
. "$(dirname "$0")/../train/ring_common.sh"
make_copy_text "$W/copy.txt" 400
"$BIN" train --data "$W/copy.txt" --model tiny --seq-len 48 --batch 8 --steps 80 --lr 3e-3 --warmup 5 --threads 1 \
  --log-every 40 --out "$W/run" >/dev/null || { bad "training the tiny model"; finish; exit 1; }
TASKS=niah_single_1,niah_multikey_2,vt,cwe,fwe,nolima
run() { "$BIN" ruler "$W/run" --lengths 1000,1500 --tasks "$TASKS" --samples 2 --tokens 8 --threads 1 "$@"; }

run --out "$W/a" > "$W/a.log" 2>&1 || bad "ruler exited $?: $(tail -1 "$W/a.log")"
check "the table: a header of the lengths, a row per task and the average" \
  grep -qE '^ +1000 +1500$' "$W/a.log"
rows=$(grep -cE '^(niah_single_1|niah_multikey_2|vt|cwe|fwe|nolima|average) +[0-9]+\.[0-9] +[0-9]+\.[0-9]$' "$W/a.log")
check "7 rows of two scores (got $rows)" test "$rows" = 7
check "the effective length is printed" grep -qE '^ruler: effective length (none|[0-9]+) ' "$W/a.log"
check "no --haystack: the note names nolima, read with noise" grep -q "1 task RULER runs on essays read the noise" "$W/a.log"
python3 - "$W/a/results.json" <<'EOF' && ok "results.json: shape, averages and effective length recomputed" || bad "results.json"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
tasks = ["niah_single_1", "niah_multikey_2", "vt", "cwe", "fwe", "nolima"]
assert d["lengths"] == [1000, 1500] and d["tasks"] == tasks and d["samples"] == 2 and d["threshold"] == 85.6, d
assert d["tokenizer"] == "byte260" and d["haystack"] is None and all(d["answer_tokens"][t] == 8 for t in tasks)
assert len(d["cells"]) == 12
for c in d["cells"]:
    li = d["lengths"].index(c["length"])
    assert len(c["samples"]) == 2
    for s in c["samples"]:
        assert s["expected"] and 0 <= s["score"] <= 100 and s["prompt_tokens"] <= c["length"] - 8, s
        # RULER's string match, recomputed: the share of expected items in the answer, ignoring case
        want = 100 * sum(e.lower() in s["answer"].lower() for e in s["expected"]) / len(s["expected"])
        assert abs(s["score"] - want) < 1e-9, (s, want)
    assert abs(c["score"] - sum(s["score"] for s in c["samples"]) / 2) < 1e-9
    assert abs(d["scores"][c["task"]][li] - c["score"]) < 1e-9
avg = [sum(d["scores"][t][li] for t in tasks) / len(tasks) for li in range(2)]
assert all(abs(a - b) < 1e-9 for a, b in zip(avg, d["average"])), (avg, d["average"])
eff = 0
for li, a in enumerate(avg):
    if a < d["threshold"]: break
    eff = d["lengths"][li]
assert d["effective_length"] == eff and d["seconds"] > 0 and d["prefill_tokens_per_s"] > 0
assert d["command"].startswith("ringgpt ruler ") and "--samples 2" in d["command"] and d["date"].endswith("Z")
# a needle task's expected items differ between samples (seeded documents, not one repeated)
nl = [c for c in d["cells"] if c["task"] == "niah_single_1" and c["length"] == 1000][0]
assert nl["samples"][0]["expected"] != nl["samples"][1]["expected"]
EOF
python3 - "$W/a/results.json" "$W/a.log" <<'EOF' && ok "a progress line per cell as it ends, its score the table's" || bad "progress lines"
import json, re, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
lines = re.findall(r"^ruler: length (\d+), (\w+): ([0-9.]+) % of 2 samples in [0-9.]+ s$", open(sys.argv[2]).read(), re.M)
want = [(str(c["length"]), c["task"], "%.1f" % c["score"]) for c in d["cells"]]
assert sorted(lines) == sorted(want) and len(lines) == 12, (lines, want)
EOF

strip() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [d.pop(k) for k in ("seconds","prefill_tokens_per_s","decode_tokens_per_s","date","command")]; print(json.dumps(d, sort_keys=True))' "$1"; }
run --out "$W/b" > /dev/null 2>&1
check "the same seed gives the same documents, answers and scores" test "$(strip "$W/a/results.json")" = "$(strip "$W/b/results.json")"
run --out "$W/c" --seed 2 > /dev/null 2>&1
check "another seed gives other documents" bash -c "test -s '$W/c/results.json' && test \"\$1\" != \"\$2\"" _ \
  "$(strip "$W/a/results.json")" "$(strip "$W/c/results.json")"

# --config: the flags from a file, the command line over them
printf '{"lengths": "1000,1500", "tasks": "%s", "samples": 2, "tokens": 8, "seed": 5}\n' "$TASKS" > "$W/ruler.json"
"$BIN" ruler "$W/run" --config "$W/ruler.json" --seed 1 --threads 1 --out "$W/cf" > /dev/null 2>&1
check "--config gives the command line's run (its --seed over the file's)" bash -c "test -s '$W/cf/results.json' && test \"\$1\" = \"\$2\"" _ \
  "$(strip "$W/a/results.json")" "$(strip "$W/cf/results.json")"
printf '{"lengths": "1000", "sample": 2}\n' > "$W/bad.json"
expect_fail 2 "bad.json" "$BIN" ruler "$W/run" --config "$W/bad.json" --out "$W/x"

# a task's documents do not depend on the other tasks run with it
run --out "$W/v" --tasks vt > /dev/null 2>&1
check "vt alone gives vt's documents of the full run" python3 -c "
import json
a, v = (json.load(open(p)) for p in ('$W/a/results.json', '$W/v/results.json'))
assert [c for c in a['cells'] if c['task'] == 'vt'] == v['cells']"

# prose: the essay tasks read --haystack's text; its path is recorded; text without a sentence end is refused
make_text "$W/prose.txt" 200
"$BIN" ruler "$W/run" --lengths 1200 --tasks niah_single_2,nolima --samples 1 --tokens 4 --threads 1 --haystack "$W/prose.txt" \
  --out "$W/h" > "$W/h.log" 2>&1
check "--haystack: recorded" python3 -c "import json,sys; d=json.load(open('$W/h/results.json')); assert d['haystack'] == '$W/prose.txt'"
check "--haystack: no noise note" test -z "$(grep 'read the noise' "$W/h.log")"
"$BIN" ruler "$W/run" --lengths 1200 --tasks niah_single_2,nolima --samples 1 --tokens 4 --threads 1 --out "$W/n" > "$W/n.log" 2>&1
check "no --haystack: the note names the 2 tasks read with noise" grep -q "2 tasks RULER runs on essays read the noise" "$W/n.log"

# a BPE model: documents measured in its tokens fill each length (less the answer) within one haystack piece
"$BIN" tokenizer train --vocab 400 --out "$W/tok.json" --quiet "$W/prose.txt" > /dev/null &&
  "$BIN" prepare --out "$W/bpedata" --tokenizer "$W/tok.json" "$W/prose.txt" > /dev/null &&
  "$BIN" train --data "$W/bpedata" --model tiny --seq-len 48 --batch 8 --steps 20 --threads 1 --log-every 20 --out "$W/bperun" > /dev/null ||
  bad "the BPE model"
"$BIN" ruler "$W/bperun" --lengths 800,1200 --tasks all --samples 2 --tokens 6 --threads 1 --haystack "$W/prose.txt" --out "$W/bpe" \
  > "$W/bpe.log" 2>&1 || bad "ruler on the BPE model: $(tail -1 "$W/bpe.log")"
python3 - "$W/bpe/results.json" <<'EOF2' && ok "BPE model: every prompt within one piece of its length less 6 answer tokens" || bad "BPE prompt lengths"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert d["tokenizer"].startswith("bpe-") and len(d["cells"]) == 24, d["tokenizer"]
for c in d["cells"]:
    for s in c["samples"]:   # prompt_tokens: the ids prefilled (start token included), as sample_generate counted them
        assert c["length"] - 6 - 100 <= s["prompt_tokens"] <= c["length"] - 6, (c["length"], c["task"], s["prompt_tokens"])
EOF2

# the ring: sp 2 decodes every document as one rank does
if [[ -n $MPIEXEC ]]; then
  for layout in "2 2" "2 1" "4 2"; do   # ranks, ring size: a ring of 2, 2 groups of one rank, 2 groups of rings of 2
    read -r np sp <<<"$layout"
    mpirun_np "$np" "$BIN" ruler "$W/run" --lengths 1000,1500 --tasks "$TASKS" --samples 2 --tokens 8 --threads 1 --sp "$sp" \
      --out "$W/r$np$sp" > "$W/r$np$sp.log" 2>&1
    check "$np ranks, --sp $sp: one rank's answers and scores" test "$(strip "$W/a/results.json")" = "$(strip "$W/r$np$sp/results.json")"
  done
fi

# bad arguments: exit 2, one line naming the problem
touch "$W/file"
expect_fail 2 "--tasks: unknown task 'bogus'" run --tasks bogus --out "$W/x"
expect_fail 2 "--tasks: vt is listed twice" run --tasks vt,vt --out "$W/x"
expect_fail 2 "--lengths 100, task niah_single_1: the task's smallest document measures" run --lengths 100 --out "$W/x"
expect_fail 2 "give them shortest first" run --lengths 2K,1K --out "$W/x"
expect_fail 2 "--samples 0: give 1..4096" run --samples 0 --out "$W/x"
expect_fail 2 "--tokens -1" run --tokens -1 --out "$W/x"
expect_fail 2 "--threshold 150: give a score in percent" run --threshold 150 --out "$W/x"
expect_fail 2 "--out $W/file: $W/file is not a directory" run --out "$W/file"
expect_fail 2 "ruler needs a checkpoint" "$BIN" ruler --lengths 1K
expect_fail 2 "cannot open" run --haystack "$W/missing.txt" --out "$W/x"
expect_fail 2 "--haystack $W/copy.txt: the prose has no sentence end" run --tasks nolima --haystack "$W/copy.txt" --out "$W/x"
finish
