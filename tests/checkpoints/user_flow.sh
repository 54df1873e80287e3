#!/usr/bin/env bash
# tests/checkpoints/user_flow.sh — what a user does with an HF Llama model, for each tokenizer kind (SmolLM2's byte-level BPE
# with Digits and missing byte tokens; Llama 2's and Mistral's SentencePiece-style BPE with byte fallback): import -> eval
# (= the numpy forward, ids = HF tokenizers') -> sample --temperature 0 (= the numpy greedy, the prefill tokenizer_config
# says) -> fine-tune at 2x the context with --rope-scaling -> passkey in its tokenizer -> export (= the numpy forward with
# the scaling; the same tokenizer in HF tokenizers and AutoTokenizer; rope_scaling and the metadata kept).
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
GEN=$(dirname "$0")/make_hf_llama.py
CHECK_PY=$(dirname "$0")/../../scripts/check_hf_export.py
PY=""
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null && "$cand" -c "import numpy, tokenizers" 2>/dev/null; then PY=$(command -v "$cand"); break; fi
done
[[ -n $PY ]] || { echo "SKIP: no python3 with numpy and HF tokenizers (scripts/deps.sh installs them)"; exit 77; }
# Training text with digits, accents and the bytes SmolLM2's vocab lacks (… and — start with 0xE2); the eval text adds
# characters no tokenizer learned (byte fallback in the SentencePiece kinds, dropped byte tokens in the byte-level one).
for i in $(seq 150); do
  printf 'Line %d: the quick brown fox jumps over the lazy dog %d times, café … naïve — 3.14.\n' "$i" $((i * 37))
done > "$W/corpus.txt"
for i in $(seq 40); do
  printf 'Doc %d: the quick brown fox — %d jumps “over” the lazy dog; € 3.14 naïve café 中文 😀\n\tcode: x = f(y) + %d\n' \
    "$i" $((i * 12345)) $((i * 7))
done > "$W/eval.txt"
cat "$W/corpus.txt" >> "$W/eval.txt"
MAXPOS=64                  # the model's context; the fine-tune runs at 2x
PROMPT="the quick brown fox 42 café"
hf_ids() {   # hf_ids TOKENIZER_JSON TEXT_FILE: HF tokenizers' ids of the file, comma-separated (no special tokens added)
  "$PY" -c "import sys; from tokenizers import Tokenizer
print(','.join(map(str, Tokenizer.from_file(sys.argv[1]).encode(open(sys.argv[2], encoding='utf-8').read(), add_special_tokens=False).ids)))" "$1" "$2"
}

greedy_same() {   # greedy_same WHAT CKPT HF_DIR ADD_BOS N: sample CKPT --temperature 0 = the numpy greedy of HF_DIR
  local what=$1 ckpt=$2 hf=$3 add_bos=$4 n=$5
  printf '%s' "$PROMPT" > "$W/prompt.txt"
  local ids; ids=$(hf_ids "$hf/tokenizer.json" "$W/prompt.txt")
  [[ $add_bos == true ]] && ids="1,$ids"
  local want; want=$("$PY" "$CHECK_PY" "$hf" --greedy "$n" --prompt-ids "$ids")
  "$BIN" sample "$ckpt" --prompt "$PROMPT" --tokens "$n" --temperature 0 --stop-at-eos=false --threads 1 > "$W/sample" 2> "$W/sample.err"
  local np; np=$(tr ',' '\n' <<< "$ids" | wc -l)
  check "$what: sample prefills $np ids (add_bos_token $add_bos)" grep -q "prefill $np tokens" "$W/sample.err"
  check "$what: sample --temperature 0 = the numpy greedy of $n ids, decoded as HF tokenizers does" "$PY" -c "import sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
prompt = tok.encode(sys.argv[3], add_special_tokens=False).ids
# the prompt as given, then the continuation decoded after the prompt's ids (as HF's TextStreamer prints it)
ctx = tok.decode(prompt, skip_special_tokens=False)
want = sys.argv[3] + tok.decode(prompt + [int(i) for i in sys.argv[4].split(',')], skip_special_tokens=False)[len(ctx):]
got = open(sys.argv[2], 'rb').read().decode('utf-8', 'replace').rstrip('\n')
print(repr(got), repr(want)) if got != want else None
sys.exit(got != want)" "$hf/tokenizer.json" "$W/sample" "$PROMPT" "$want"
}

flow() {   # flow KIND ADD_BOS ROPE_SCALING: one model through the whole flow
  local kind=$1 add_bos=$2 scaling=$3 hf=$W/$1 imp=$W/$1_imp ds=$W/$1_ds ft=$W/$1_ft ex=$W/$1_ex
  echo "== $kind (add_bos_token $add_bos, fine-tune --rope-scaling $scaling)"
  "$PY" "$GEN" "$hf" --tokenizer "$kind" --corpus "$W/corpus.txt" --max-pos $MAXPOS --add-bos "$add_bos" --vocab 384
  # 1-2. import, prepare in the model's tokenizer, eval = the float64 numpy forward; the ids = HF tokenizers'
  "$BIN" import "$hf" --out "$imp" > "$W/$kind.imp.log" 2>&1
  check "$kind: import keeps the tokenizer (no note)" grep -q "tokenizer bpe-" "$W/$kind.imp.log"
  "$BIN" prepare --out "$ds" --tokenizer "$hf/tokenizer.json" --quiet "$W/eval.txt" > /dev/null
  "$BIN" eval "$imp" --data "$ds" --seq-len $MAXPOS --batch 2 --batches 1 --threads 1 --dump-logits "$W/$kind.d0" > /dev/null
  check "$kind: eval of the import = the numpy forward of the HF directory" "$PY" "$CHECK_PY" "$hf" "$W/$kind.d0"
  hf_ids "$hf/tokenizer.json" "$W/eval.txt" > "$W/$kind.ids"
  check "$kind: the ids eval read (tokens.npy) are HF tokenizers' encoding of the text" "$PY" -c "import sys
import numpy as np
ids = ' ' + open(sys.argv[2]).read().strip().replace(',', ' ') + ' '
sys.exit(not all(' ' + ' '.join(map(str, row)) + ' ' in ids for row in np.load(sys.argv[1] + '/tokens.npy')))" \
    "$W/$kind.d0" "$W/$kind.ids"

  # 3. sample --temperature 0 = the numpy greedy of the prompt as HF encodes it, after BOS where add_bos_token says so
  greedy_same "$kind: the import" "$imp" "$hf" "$add_bos" 12

  # 4. fine-tune at 2x the context with RoPE scaling
  "$BIN" train --init-from "$imp" --data "$ds" --seq-len $((2 * MAXPOS)) --rope-scaling "$scaling" --batch 2 --steps 3 \
    --lr 1e-3 --threads 1 --log-every 100 --out "$ft" > "$W/$kind.ft.log" 2>&1
  check "$kind: train --init-from --seq-len $((2 * MAXPOS)) --rope-scaling $scaling runs 3 steps" test -d "$ft/step_00000003"

  # 5. passkey in the model's own tokenizer
  "$BIN" passkey "$ft" --lengths 256,320 --depths 0,1 --trials 1 --threads 1 --out "$W/$kind.pk" > "$W/$kind.pk.log" 2>&1
  check "$kind: passkey at 256 and 320 tokens writes its 2 x 2 grid" "$PY" -c "import csv, json, sys
json.load(open(sys.argv[1] + '.json'))
sys.exit(len(list(csv.DictReader(open(sys.argv[1] + '.csv')))) != 4)" "$W/$kind.pk"

  # 6. export = the numpy forward with the scaling, at the fine-tune's length; the tokenizer and metadata kept
  "$BIN" eval "$ft" --data "$ds" --seq-len $((2 * MAXPOS)) --batch 2 --batches 1 --threads 1 --dump-logits "$W/$kind.d1" > /dev/null
  "$BIN" export "$ft" --to hf "$ex" > /dev/null
  check "$kind: eval of the fine-tune = the numpy forward of its export (rope_scaling applied)" \
    "$PY" "$CHECK_PY" "$ex" "$W/$kind.d1"
  greedy_same "$kind: the fine-tune (KV-cache decoding past $MAXPOS tokens with the scaling)" "$ft" "$ex" "$add_bos" 64
  check "$kind: the exported tokenizer.json encodes the text as the original" cmp -s "$W/$kind.ids" <(hf_ids "$ex/tokenizer.json" "$W/eval.txt")
  check "$kind: config.json keeps rope_scaling ($scaling) and the metadata; max_position_embeddings >= $MAXPOS" \
    "$PY" - "$hf" "$ex" "$scaling" $MAXPOS <<'PY'
import json, sys
load = lambda d, f: json.load(open(d + "/" + f))
a, b = (load(d, "config.json") for d in sys.argv[1:3])
kind, factor = sys.argv[3].split(":")[:2]
rs = b.get("rope_scaling") or {}
bad = [] if rs.get("rope_type", rs.get("type")) == kind and rs.get("factor") == float(factor) else [f"rope_scaling {rs}"]
# every other key as the original's (JSON equality: 1e-05 stays 1e-05), max_position_embeddings never below it
bad += [f"config.json {k}: {a[k]!r} became {b.get(k, '<absent>')!r}" for k in a
        if k not in ("rope_scaling", "max_position_embeddings") and (a[k] != b.get(k) or type(a[k]) != type(b.get(k)))]
if b["max_position_embeddings"] < int(sys.argv[4]): bad.append(f"max_position_embeddings {b['max_position_embeddings']}")
for f in ("generation_config.json", "special_tokens_map.json"):
    if load(sys.argv[1], f) != load(sys.argv[2], f): bad.append(f"{f} changed")
if bad: print("\n".join(bad))
sys.exit(bool(bad))
PY
  if "$PY" -c "import transformers" 2>/dev/null; then
    check "$kind: AutoTokenizer loads the export and encodes as the original" env TRANSFORMERS_VERBOSITY=error \
      "$PY" - "$hf" "$ex" "$W/eval.txt" <<'PY'
import sys
from transformers import AutoTokenizer
a, b = (AutoTokenizer.from_pretrained(d) for d in sys.argv[1:3])
text = open(sys.argv[3], encoding="utf-8").read()[:2000]
sys.exit(not (a(text).input_ids == b(text).input_ids and (a.bos_token_id, a.eos_token_id) == (b.bos_token_id, b.eos_token_id)))
PY
  else
    echo "skip AutoTokenizer on the $kind export: transformers is not importable"
  fi
}

flow digits false linear:2                # SmolLM2: no start token
flow spm_prepend true yarn:2:$MAXPOS      # Llama 2 / Mistral v0.1: <s> first
flow spm_meta true linear:2               # transformers' LlamaTokenizer(legacy=False)
finish
