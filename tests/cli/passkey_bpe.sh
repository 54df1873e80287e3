#!/usr/bin/env bash
# tests/cli/passkey_bpe.sh — the needle test in a BPE model's own tokenizer, through the binary: `prepare --synthetic passkey
# --tokenizer` and `passkey` (with --haystack and --distractors) of a tiny model trained on BPE data.
# Usage: passkey_bpe.sh RINGGPT [MPIEXEC]
# A tokenizer.json is trained here (`ringgpt tokenizer train`, so no Python tokenizer is needed). The dataset's documents
# are read back as text (`inspect --head`) and as ids (`inspect SHARD --head`): every document is doc-len tokens with its
# EOS, opens with the intro, and its answers (the tokens in the loss) are the keys its needles state. The model's grid has
# a row per length and a column per depth; every prompt ends on the asked needle's question and holds that needle.
set -uo pipefail
BIN=$1 MPIEXEC=${2:-}
. "$(dirname "$0")/common.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TEXT=$ROOT/recipes/long_context/text.txt
"$BIN" tokenizer train --quiet --vocab 500 --out "$W/tok.json" "$TEXT" > /dev/null || { bad "tokenizer train"; finish; exit 1; }
printf '{"long-frac": 0.5, "key-max": 12, "distractor-frac": 0.6, "distractors": 2, "ask": 2, "haystack": "%s", "haystack-frac": 0.5}\n' \
  "$TEXT" > "$W/mix.json"
"$BIN" prepare --synthetic passkey --docs 40 --doc-len 256,512 --tokenizer "$W/tok.json" --mix "$W/mix.json" --out "$W/data" --quiet \
  > "$W/prepare.log" 2>&1 && ok "prepare --synthetic passkey --tokenizer" || bad "prepare: $(tail -2 "$W/prepare.log")"
check "the dataset records the BPE tokenizer" grep -q '"bpe-' "$W/data/manifest.json"
"$BIN" inspect "$W/data" --head 20000 > "$W/text.txt" 2>&1
"$BIN" inspect "$W/data/train_000000.rgs" --head 20000 > "$W/ids.txt" 2>&1
python3 - "$W/text.txt" "$W/ids.txt" <<'PYEOF' && ok "every document: doc-len tokens, the intro, answers = its needles' keys" || bad "the dataset's documents"
import re, sys
text = open(sys.argv[1]).read().splitlines()[3].strip()
ids = [int(t) for t in re.sub(r"[\[\]]", " ", open(sys.argv[2]).read().splitlines()[3]).split()]
# ids: every document and its EOS (256) is 256 or 512 tokens
lens, run = [], 0
for t in ids:
    run += 1
    if t == 256: lens.append(run); run = 0
assert len(lens) >= 30 and set(lens) == {256, 512}, (len(lens), sorted(set(lens)))
# text: the loss's tokens are outside [...]; unescape inspect's \[ \] \\ \n \t \r
def segments(doc):
    out, cur, inside, i = [], "", False, 0
    while i < len(doc):
        c = doc[i]
        if c == "\\":
            n = doc[i + 1]; cur += {"n": "\n", "t": "\t", "r": "\r"}.get(n, n); i += 2; continue
        if c in "[]":
            if cur: out.append((inside, cur))
            cur, inside = "", c == "["
        else: cur += c
        i += 1
    if cur: out.append((inside, cur))
    return out
docs = [d for d in text.split("<|endoftext|>") if d]
assert len(docs) == len(lens), (len(docs), len(lens))
for d in docs:
    seg = segments(d)
    whole = "".join(s for _, s in seg)
    assert re.match(r"There (is a pass key|are pass keys) hidden in this text\. Remember (it|them)\.", whole), whole[:80]
    answers = [s for inside, s in seg if not inside]
    assert 1 <= len(answers) <= 2, answers
    for k, a in enumerate(answers):
        assert re.fullmatch(r" \d{5,12}", a), a
        before = "".join(s for _, s in seg[:[j for j, (inside, s) in enumerate(seg) if not inside][k]])
        q = re.search(r"What is the pass key( for (\w+))?\? The pass key( for \w+)? is$", before)
        assert q, before[-80:]
        needle = "The pass key%s is%s. Remember it." % (" for " + q.group(2) if q.group(2) else "", a)
        assert needle in whole, needle
PYEOF
if python3 -c "import tokenizers" 2>/dev/null; then   # HF tokenizers decodes the shard's ids to the same text
  python3 - "$W/tok.json" "$W/ids.txt" "$W/text.txt" <<'PYEOF' && ok "HF tokenizers decodes the ids to inspect's text" || bad "HF decode"
import re, sys, tokenizers
tok = tokenizers.Tokenizer.from_file(sys.argv[1])
ids = [int(t) for t in re.sub(r"[\[\]]", " ", open(sys.argv[2]).read().splitlines()[3]).split()]
doc = ids[:ids.index(256)]
text = open(sys.argv[3]).read().splitlines()[3].strip().split("<|endoftext|>")[0]
plain = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), re.sub(r"(?<!\\)[\[\]]", "", text))
assert tok.decode(doc) == plain, (tok.decode(doc)[:100], plain[:100])
PYEOF
else echo "skip: no python3 tokenizers (the HF decode cross-check)"; fi

# A tiny model trained a few steps on the BPE data; its needle grid in its own tokens.
"$BIN" train --data "$W/data" --model tiny --layers 1 --dim 32 --heads 2 --kv-heads 2 --seq-len 512 --batch 1 --steps 4 --threads 1 \
  --eval-every 0 --ckpt-every 0 --out "$W/run" > "$W/train.log" 2>&1 && ok "train on BPE data" || bad "train: $(tail -2 "$W/train.log")"
"$BIN" passkey "$W/run" --lengths 256,512 --depths 0,0.5,1 --trials 2 --haystack "$TEXT" --distractors 2 --threads 1 --docs \
  --out "$W/pk" > "$W/pk.log" 2>&1 && ok "passkey --haystack --distractors on a BPE model" || bad "passkey: $(tail -2 "$W/pk.log")"
check "the grid: 3 depths at 256 and at 512 tokens" test "$(grep -c '^256,' "$W/pk.csv") $(grep -c '^512,' "$W/pk.csv")" = "3 3"
check "the JSON names the tokenizer and the haystack's tokens" grep -q '"haystack_tokens"' "$W/pk.json"
python3 - "$W/pk.json" "$W/pk.docs.jsonl" <<'PYEOF' && ok "every prompt ends on its question and holds its needle" || bad "passkey prompts"
import json, re, sys
r = json.load(open(sys.argv[1]))
assert r["tokenizer"].startswith("bpe-") and r["distractors"] == 2 and len(r["cells"]) == 6, r.keys()
for cell in r["cells"]:
    assert all(len(a) == 5 for a in cell["answers"]) and all(len(o) == 2 for o in cell["other_keys"]), cell
lines = [json.loads(l) for l in open(sys.argv[2])]
assert len(lines) == 12
for d in lines:
    p = d["prompt"].encode("latin-1").decode("utf-8", "replace")
    q = re.search(r"What is the pass key for (\w+)\? The pass key for (\w+) is$", p)
    assert q and q.group(1) == q.group(2), p[-80:]
    assert "The pass key for %s is %s. Remember it." % (q.group(1), d["key"]) in p, (q.group(1), d["key"])
    assert d["key_pos"] < d["answer_pos"] < d["length"], d
PYEOF
if [[ -n $MPIEXEC ]] && command -v "$MPIEXEC" > /dev/null; then   # the ring decodes the same answers
  "$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np 2 "$BIN" passkey "$W/run" --lengths 256,512 --depths 0,0.5,1 \
    --trials 2 --haystack "$TEXT" --distractors 2 --threads 1 --sp 2 --out "$W/pk2" > /dev/null 2>&1
  check "passkey over sp 2: the answers of one rank" test "$(grep -E '"(keys|answers)"' "$W/pk2.json")" = "$(grep -E '"(keys|answers)"' "$W/pk.json")"
fi
# A dataset made with --tokenizer as the haystack: its ids read back as text (EOS as a space), then the model's ids.
"$BIN" prepare --tokenizer "$W/tok.json" --val-fraction 0 --out "$W/hayds" "$TEXT" --quiet > /dev/null 2>&1
"$BIN" passkey "$W/run" --lengths 512 --depths 0.5 --trials 2 --haystack "$W/hayds" --threads 1 --docs --out "$W/pkds" > "$W/pkds.log" 2>&1 \
  && ok "passkey --haystack of a BPE dataset" || bad "passkey --haystack DATASET: $(tail -1 "$W/pkds.log")"
python3 - "$W/pkds.json" "$W/pkds.docs.jsonl" "$TEXT" <<'PYEOF' && ok "its text is the file's, read back" || bad "BPE dataset haystack"
import json, sys
r, text = json.load(open(sys.argv[1])), open(sys.argv[3], encoding="utf-8").read()
assert abs(r["haystack_bytes"] - len(text.encode())) < 100, (r["haystack_bytes"], len(text.encode()))
for line in open(sys.argv[2]):
    p = json.loads(line)["prompt"].encode("latin-1").decode("utf-8", "replace")
    words = p.split("Remember it.")[-1].split("What is the pass key?")[0].split()[2:-2]   # filler after the needle, ends cut
    assert len(words) > 20 and " ".join(words[:20]) in " ".join(text.split()), words[:20]
PYEOF
expect_fail 2 "recall writes byte260 documents" "$BIN" prepare --synthetic recall --docs 2 --tokenizer "$W/tok.json" --out "$W/recall"
finish
