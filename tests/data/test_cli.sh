#!/usr/bin/env bash
# tests/data/test_cli.sh — `ringgpt prepare` and `inspect --verify` as a user runs them: every damage kind exits non-zero naming file, block and byte.
set -u
BIN=${1:?usage: test_cli.sh path/to/ringgpt}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/ringgpt_cli_XXXXXX")
trap 'rm -rf "$DIR"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

u64() { od -An -tu8 -j "$2" -N8 "$1" | tr -d ' '; }
flip() {  # flip FILE OFFSET: invert one byte in place
    local v; v=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "\\$(printf %03o $((v ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# expect_fail NAME PATTERN -- command...: non-zero exit and stderr matching PATTERN (grep -E)
expect_fail() {
    local name=$1 pat=$2; shift 3
    local err; err=$("$@" 2>&1 >/dev/null); local rc=$?
    if [ $rc -ne 0 ] && echo "$err" | grep -Eq "$pat"; then ok; else bad "$name: rc=$rc, stderr: $err"; fi
}

mkdir -p "$DIR/in"
for i in $(seq 1 20); do head -c $((i * 700)) /dev/urandom | base64 > "$DIR/in/doc$i.txt"; done
"$BIN" prepare --out "$DIR/ds" --block-tokens 4096 --shard-tokens 30000 --val-fraction 0.1 "$DIR/in" > "$DIR/prep.log" 2>&1 \
    && grep -q "compression" "$DIR/prep.log" && ok || bad "prepare: $(cat "$DIR/prep.log")"
"$BIN" inspect "$DIR/ds" > "$DIR/insp.log" 2>&1 && grep -q "train" "$DIR/insp.log" && grep -q "val" "$DIR/insp.log" && ok || bad "inspect: $(cat "$DIR/insp.log")"
"$BIN" inspect --verify "$DIR/ds" > "$DIR/ver.log" 2>&1 && grep -q "verify: ok" "$DIR/ver.log" && ok || bad "verify good data: $(cat "$DIR/ver.log")"
"$BIN" inspect --verify "$DIR/ds/train_000000.rgs" > /dev/null 2>&1 && ok || bad "verify a single shard"
ls "$DIR/ds"/*.tmp > /dev/null 2>&1 && bad "temporary files left behind" || ok

# Each damage on a fresh copy; the message names the shard and says where.
damage() {  # damage NAME PATTERN ACTION...
    local name=$1 pat=$2; shift 2
    rm -rf "$DIR/c"; cp -r "$DIR/ds" "$DIR/c"
    local s="$DIR/c/train_000001.rgs"
    "$@" "$s"
    expect_fail "$name" "$pat" -- "$BIN" inspect --verify "$DIR/c"
}
S="$DIR/ds/train_000001.rgs"
BI=$(u64 "$S" 64); DI=$(u64 "$S" 72); TR=$(u64 "$S" 80); SIZE=$(stat -c %s "$S")
flip_at() { flip "$2" "$1"; }
damage "header magic"   "train_000001.rgs: header at byte 0: not a ringgpt shard" flip_at 0
damage "header count"   "train_000001.rgs: header at byte 0: CRC mismatch"      flip_at 41
damage "block 0"        "train_000001.rgs: block 0 at byte 256: "               flip_at 400
damage "block index"    "train_000001.rgs: indexes at bytes [0-9]+-[0-9]+: CRC" flip_at $((BI + 3))
damage "doc index"      "train_000001.rgs: indexes at bytes .*CRC mismatch"     flip_at $((DI + 1))
damage "trailer crc"    "train_000001.rgs: indexes at bytes .*trailer at byte $TR" flip_at "$TR"
damage "trailer magic"  "train_000001.rgs: trailer at byte $TR: bad end marker" flip_at $((TR + 9))
for cut in 0 100 255 300 $((BI + 5)) $((DI + 3)) $((SIZE - 1)); do
    damage "truncate at $cut" "train_000001.rgs: .*(truncated|smaller)" truncate -s "$cut"
done
damage "manifest crc"   "manifest disagree|does not match the manifest|the manifest is damaged" sh -c 'sed -i "0,/\"crc32\"/s/\"crc32\":[^,]*/\"crc32\":\t\"00000000\"/" "$(dirname "$0")/manifest.json"'
damage "missing shard"  "train_000001.rgs: cannot open"                          rm -f
damage "manifest json"  "manifest.json: not a valid JSON" sh -c 'echo "{" > "$(dirname "$0")/manifest.json"'
expect_fail "missing path" "cannot open" -- "$BIN" inspect "$DIR/nothing"
expect_fail "text is not a shard" "not a ringgpt shard" -- "$BIN" inspect "$DIR/in/doc1.txt"

# prepare errors are one line and non-zero.
expect_fail "prepare missing input" "cannot read input" -- "$BIN" prepare --out "$DIR/x" "$DIR/missing"
expect_fail "prepare no --out" "needs --out" -- "$BIN" prepare "$DIR/in"
expect_fail "synthetic unknown" "passkey or recall" -- "$BIN" prepare --out "$DIR/x" --synthetic nope
"$BIN" prepare --out "$DIR/pk" --synthetic passkey --docs 3 --doc-len 20000 --quiet > /dev/null && "$BIN" inspect --verify "$DIR/pk" > /dev/null \
    && ok || bad "synthetic passkey dataset verifies"
"$BIN" prepare --help | grep -q -- "--synthetic" && ok || bad "prepare --help"

# prepare --synthetic passkey as the recipe uses it, its variations in a mix file (--mix): lengths cycled, edge depths,
# long keys, text records mixed in (tests/data/test_synthetic.c checks the documents themselves).
mix() { echo "$2" > "$DIR/$1.mix.json"; echo "$DIR/$1.mix.json"; }   # mix NAME JSON: writes the file, prints its path
python3 -c "print('Some prose for the text records. ' * 400)" > "$DIR/prose.txt"
"$BIN" prepare --out "$DIR/pkmix" --synthetic passkey --docs 60 --doc-len 300,1K --quiet \
    --mix "$(mix pkmix '{"edge-frac": 0.5, "long-frac": 1, "key-max": 12, "text": "'"$DIR"'/prose.txt", "text-frac": 0.5}')" > /dev/null \
    && "$BIN" inspect --verify "$DIR/pkmix" > "$DIR/pkmix.log" \
    && grep -q "text_frac" "$DIR/pkmix/manifest.json" && ok || bad "prepare --synthetic passkey with a mix and text records verifies"
# A bad mix file is one line naming the file, the key and the fix, exit 2, before --out is made.
expect_mix() {  # expect_mix NAME JSON PATTERN [prepare flags...]: exit 2, one line of stderr matching the file's path and PATTERN
    local name=$1 json=$2 pat=$3; shift 3
    local f; f=$(mix "$name" "$json")
    local err; err=$("$BIN" prepare --out "$DIR/x_$name" --synthetic passkey "$@" --mix "$f" 2>&1 >/dev/null); local rc=$?
    if [ $rc -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && grep -qF "$f: " <<<"$err" && grep -Eq "$pat" <<<"$err" \
        && [ ! -e "$DIR/x_$name" ]; then ok; else bad "mix $name: rc=$rc, stderr: $err"; fi
}
expect_mix unknown '{"edge-frac": 0.1, "edge-fraction": 0.2}' 'unknown key "edge-fraction": a mix file takes depth, edge-frac, .*text-frac'
expect_mix type '{"key-max": "12"}' '"key-max" must be a number; give 5..60 digits'
expect_mix type_path '{"haystack": 3, "haystack-frac": 0.5}' '"haystack" must be a path'
expect_mix whole '{"ask": 2.5, "distractor-frac": 0.5}' '"ask" must be a whole number \(got 2.5\)'
expect_mix edge_span '{"edge-span": 0}' '"edge-span" 0: give a fraction in \(0, 1\]'
expect_mix edge_far '{"edge-far": 2}' '"edge-far" 2: give a fraction in 0..1'
expect_mix key_max '{"key-max": 99}' '"key-max" 99: give 5..60 digits'
expect_mix depth '{"depth": 1.5}' '"depth" 1.5: give a depth in 0..1'
expect_mix twice '{"ask": 2, "ask": 3}' 'ask'
expect_mix not_object '[1, 2]' 'not a JSON object of mix keys'
expect_mix recall_long '{"long-frac": 0.5}' 'drop them for --synthetic recall' --synthetic recall
expect_mix text_frac '{"text-frac": 0.1}' '"text-frac" needs "text"'
expect_mix text_missing '{"text": "'"$DIR"'/none.txt", "text-frac": 0.1}' '"text" .*none.txt: cannot open'
expect_fail "prepare --long-frac (a mix key now)" '^ringgpt: --long-frac is not a flag of `ringgpt prepare` any more: it is a key of the mix file now: .* give --mix FILE' -- \
    "$BIN" prepare --out "$DIR/x" --synthetic passkey --long-frac 0.5
echo '{"synthetic": "passkey", "edge-far": 0.2}' > "$DIR/old.data.json"
expect_fail "prepare --config with a mix key" 'old.data.json: "edge-far" is not a flag of `ringgpt prepare` any more: it is a key of the mix file now' -- "$BIN" prepare --out "$DIR/x" --config "$DIR/old.data.json"
expect_fail "prepare --mix missing" "none.mix.json: cannot open the mix file" -- "$BIN" prepare --out "$DIR/x" --synthetic passkey --mix "$DIR/none.mix.json"
expect_fail "prepare --mix without --synthetic" "shapes synthetic documents" -- "$BIN" prepare --out "$DIR/x" --mix "$DIR/pkmix.mix.json" "$DIR/prose.txt"
"$BIN" prepare --help > "$DIR/help.txt"
[ "$(grep -cE '^  --' "$DIR/help.txt")" -le 25 ] && grep -q "distractor-alike" "$DIR/help.txt" && ok \
    || bad "prepare --help: at most 25 flags ($(grep -cE '^  --' "$DIR/help.txt")), the mix file's keys named"
expect_fail "prepare --doc-len list with a bad entry" "not a number" -- "$BIN" prepare --out "$DIR/x" --synthetic passkey --doc-len 300,x
# Needles in prose and distractors (the haystack a directory: a link to a file already there is not read twice),
# kept apart from a held-out text; the held-out text sharing a passage (re-wrapped) with the haystack is refused.
mkdir -p "$DIR/hay" && python3 -c "
import random; r = random.Random(3); w = 'river stone lamp garden window letter music winter city bread'.split()
open('$DIR/hay/a.txt', 'w').write(' '.join(r.choice(w) for _ in range(3000)) + '\n')" && ln -sf a.txt "$DIR/hay/b.txt"
printf 'A held-out text about licences and the freedom to share and change software, nothing else at all.\n%.0s' 1 2 3 > "$DIR/held.txt"
"$BIN" prepare --out "$DIR/pkhay" --synthetic passkey --docs 40 --doc-len 400,2K --quiet --mix "$(mix pkhay '{"haystack": "'"$DIR"'/hay",
    "haystack-frac": 0.5, "distractor-frac": 0.5, "distractors": 3, "held-out": "'"$DIR"'/held.txt"}')" > /dev/null && "$BIN" inspect --verify "$DIR/pkhay" > /dev/null \
    && grep -qE '"haystack_frac":\s*0.5' "$DIR/pkhay/manifest.json" && ok || bad "prepare --synthetic passkey with a haystack and distractors"
head -c 700 "$DIR/hay/a.txt" | tr ' ' '\n' > "$DIR/held_copy.txt"
expect_fail "prepare: a haystack sharing text with the held-out text" "hay shares text with the held-out .*held_copy.txt" -- \
    "$BIN" prepare --out "$DIR/x" --synthetic passkey --doc-len 300 \
    --mix "$(mix shared '{"haystack": "'"$DIR"'/hay", "haystack-frac": 0.5, "held-out": "'"$DIR"'/held_copy.txt"}')"
expect_mix hay_missing '{"haystack": "'"$DIR"'/none", "haystack-frac": 0.5}' '"haystack" .*none: cannot open'
expect_mix hay_short '{"haystack": "'"$DIR"'/held.txt", "haystack-frac": 0.5}' "shorter than the longest document" --doc-len 64K
expect_mix hay_frac '{"haystack-frac": 0.5}' '"haystack-frac" needs "haystack"'
expect_mix hay_alone '{"haystack": "'"$DIR"'/hay"}' '"haystack" needs "haystack-frac"'
expect_mix held_alone '{"held-out": "'"$DIR"'/held.txt"}' 'give both'
expect_mix distractors '{"distractor-frac": 0.5, "distractors": 9}' '"distractors" 9: give 1..8'
"$BIN" prepare --out "$DIR/pkshort" --synthetic passkey --docs 20 --doc-len 160,400 --quiet \
    --mix "$(mix pkshort '{"distractor-frac": 1, "distractors": 3}')" > /dev/null \
    && ok || bad "prepare with distractors: a document too short for them holds as many as fit"
"$BIN" prepare --out "$DIR/pkask" --synthetic passkey --docs 40 --doc-len 300,2K --mix "$(mix pkask '{"distractor-frac": 1, "distractors": 3, "ask": 4}')" \
    > "$DIR/pkask.out" 2>&1 && "$BIN" inspect --verify "$DIR/pkask" > /dev/null && grep -qE '"ask":\s*4' "$DIR/pkask/manifest.json" \
    && grep -qE "^prepare: 100.0 % of 40 passkey documents hold distractors .* questions each \(distractors 3, ask 4\)" "$DIR/pkask.out" \
    && ok || bad "prepare with ask (several questions a document with distractors; the realised share printed)"
expect_mix ask '{"distractor-frac": 0.5, "ask": 0}' '"ask" 0: give 1..9'
expect_mix ask_alone '{"ask": 2}' '"ask" 2 needs "distractor-frac"'
"$BIN" prepare --out "$DIR/pkalike" --synthetic passkey --docs 40 --doc-len 300,2K --quiet \
    --mix "$(mix pkalike '{"distractor-frac": 1, "distractors": 3, "distractor-alike": 0.5}')" > /dev/null && "$BIN" inspect --verify "$DIR/pkalike" > /dev/null \
    && grep -qE '"distractor_alike":\s*0.5' "$DIR/pkalike/manifest.json" && ok || bad "prepare with distractor-alike (recorded in the manifest)"
expect_mix alike '{"distractor-frac": 0.5, "distractor-alike": 2}' '"distractor-alike" 2: give a fraction in 0..1'
expect_mix alike_alone '{"distractor-alike": 0.5}' '"distractor-alike" 0.5 needs "distractor-frac"'
"$BIN" prepare --out "$DIR/pkrecall" --synthetic passkey --docs 40 --doc-len 150,400 --quiet \
    --mix "$(mix pkrecall '{"recall-frac": 0.5, "pairs": 8, "queries": 8}')" > /dev/null && "$BIN" inspect --verify "$DIR/pkrecall" > /dev/null \
    && grep -qE '"recall_frac":\s*0.5' "$DIR/pkrecall/manifest.json" && ok || bad "prepare --synthetic passkey with recall-frac (recall documents in the mix)"
expect_mix recall_frac '{"recall-frac": 1.5}' '"recall-frac" 1.5: give a fraction in 0..1'
expect_mix recall_recall '{"recall-frac": 0.5}' 'drop them for --synthetic recall' --synthetic recall
expect_mix pairs '{"pairs": 0}' '"pairs" 0: give 1..256' --synthetic recall

# JSONL prompt/completion records: a clean dataset with loss weights; a bad record names its line (exit 2).
printf '{"prompt": "Q: 1+1? A: ", "completion": "2"}\n\n{"prompt": "say hi ", "completion": "hi"}\n' > "$DIR/ok.jsonl"
"$BIN" prepare --out "$DIR/js" --quiet "$DIR/ok.jsonl" > /dev/null && "$BIN" inspect --verify "$DIR/js" > "$DIR/js.log" 2>&1 \
    && grep -q "per-token loss weights" "$DIR/js.log" && ok || bad "JSONL dataset: $(cat "$DIR/js.log")"
printf '{"prompt": "a", "completion": "b"}\n{"prompt": "only a prompt"}\n' > "$DIR/nocomp.jsonl"
expect_fail "JSONL missing field" 'nocomp.jsonl: line 2: the record needs string fields "prompt" and "completion"' -- \
    "$BIN" prepare --out "$DIR/x" "$DIR/nocomp.jsonl"
printf '{"prompt": "a", "completion": 5}\n' > "$DIR/num.jsonl"
expect_fail "JSONL field not a string" 'num.jsonl: line 1: the record needs string fields' -- "$BIN" prepare --out "$DIR/x" "$DIR/num.jsonl"
printf '{"prompt": "a", "completion": "b"}\n{"prompt": "a",\n' > "$DIR/broken.txt"
expect_fail "JSONL not JSON" 'broken.txt: line 2: not valid JSON' -- "$BIN" prepare --out "$DIR/x" --input-kind jsonl "$DIR/broken.txt"
"$BIN" prepare --out "$DIR/x" --input-kind jsonl "$DIR/nocomp.jsonl" > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "JSONL bad record exits 2"
expect_fail "JSONL mixed with text" "is text input but earlier inputs are jsonl" -- "$BIN" prepare --out "$DIR/x" "$DIR/ok.jsonl" "$DIR/in/doc1.txt"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
