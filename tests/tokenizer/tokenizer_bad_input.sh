#!/usr/bin/env bash
# tests/tokenizer/tokenizer_bad_input.sh — a malformed or unsupported tokenizer.json names its field; bad ids in decode are named; exit codes;
# tokenizer train skips binary and empty files, reads what --include picks and refuses input with no text.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/tokenizer_common.sh"
# A minimal valid byte-level BPE: the 256 byte tokens (GPT-2's byte -> character map), two merges, one special token.
python3 - "$W" <<'PY'
import json, sys
bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs: bs.append(b); cs.append(256 + n); n += 1
ch = {b: chr(c) for b, c in zip(bs, cs)}
vocab = {ch[b]: b for b in range(256)}
vocab["ab"] = 256; vocab["abc"] = 257
tok = {"version": "1.0", "added_tokens": [{"id": 258, "content": "<|endoftext|>", "special": True, "normalized": False,
       "lstrip": False, "rstrip": False, "single_word": False}], "normalizer": None,
       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}, "post_processor": None,
       "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": vocab, "merges": [["a", "b"], "ab c"]}}
d = sys.argv[1]
def save(name, t): json.dump(t, open(f"{d}/{name}.json", "w"))
save("good", tok)
import copy
def variant(name, f):
    t = copy.deepcopy(tok); f(t); save(name, t)
variant("norm", lambda t: t.update(normalizer={"type": "NFC"}))
variant("wordpiece", lambda t: t["model"].update(type="WordPiece"))
variant("merge_oov", lambda t: t["model"]["merges"].append(["ab", "zz"]))
variant("merge_form", lambda t: t["model"]["merges"].append("a b c"))
variant("merge_empty", lambda t: t["model"]["merges"].append(" "))
variant("no_byte", lambda t: t["model"]["vocab"].update({"zz": t["model"]["vocab"].pop("z")}))
variant("pretok", lambda t: t.update(pre_tokenizer={"type": "Whitespace"}))
variant("split_beh", lambda t: t.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Removed", "invert": False}, {"type": "ByteLevel", "use_regex": False}]}))
variant("bad_regex", lambda t: t.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(\\p{L}+"}, "behavior": "Isolated", "invert": False}, {"type": "ByteLevel", "use_regex": False}]}))
variant("decoder", lambda t: t.update(decoder={"type": "WordPiece"}))
variant("lstrip", lambda t: t["added_tokens"][0].update(lstrip=True))
spm = {"normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                          {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
       "pre_tokenizer": None, "decoder": {"type": "Sequence", "decoders": [
           {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
           {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
       "model": {"type": "BPE", "byte_fallback": True, "unk_token": None, "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3}, "merges": [["a", "b"]]},
       "added_tokens": [{"id": 0, "content": "<unk>", "special": True, "normalized": False}]}
def spm_variant(name, f):
    t = copy.deepcopy(spm); f(t); save(name, t)
spm_variant("spm_good", lambda t: None)
variant("fallback_bytelevel", lambda t: t["model"].update(byte_fallback=True))
variant("after_bytelevel", lambda t: t.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
    {"type": "ByteLevel", "use_regex": False}, {"type": "Digits", "individual_digits": True}]}))
variant("prefix", lambda t: t["model"].update(continuing_subword_prefix="##"))
variant("added_id", lambda t: t["added_tokens"][0].update(id=300))
spm_variant("spm_nodecoder", lambda t: t.update(decoder=None))
spm_variant("spm_strip_first", lambda t: t["decoder"]["decoders"].insert(0, {"type": "Strip", "content": " ", "start": 1, "stop": 0}))
spm_variant("spm_regex", lambda t: t["normalizer"]["normalizers"][1].update(pattern={"Regex": " +"}))
spm_variant("spm_scheme", lambda t: t.update(normalizer=None, pre_tokenizer={"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "sometimes"}))
spm_variant("spm_unk", lambda t: t["model"].update(unk_token="<UNK>"))
spm_variant("spm_bytelevel_dec", lambda t: t.update(decoder={"type": "ByteLevel"}))
grow = {"type": "Replace", "pattern": {"String": "a"}, "content": "aaaaaaaaaaaaaaa"}   # x15 each: x225 for two
spm_variant("spm_growing_replace", lambda t: t["decoder"]["decoders"].insert(0, dict(grow)) or t["decoder"]["decoders"].insert(0, dict(grow)))
variant("bad_id", lambda t: t["model"]["vocab"].update(x=-3))
PY
check "a valid minimal tokenizer loads (eos from <|endoftext|>)" grep -q "vocab 259, eos 258, bos -1" <("$BIN" tokenizer info --tokenizer "$W/good.json")
check "merges apply: 'abc' is one token" test "$(printf abc | "$BIN" tokenizer encode --tokenizer "$W/good.json")" = 257
check "special text becomes its id" test "$(printf 'ab<|endoftext|>' | "$BIN" tokenizer encode --tokenizer "$W/good.json")" = "256 258"
printf '{"model": {"type": "BPE", "vocab": {' > "$W/trunc.json"
expect_fail 2 "trunc.json: not a JSON object" "$BIN" tokenizer encode --tokenizer "$W/trunc.json"
expect_fail 2 "normalizer: type 'NFC' is not supported" "$BIN" tokenizer info --tokenizer "$W/norm.json"
expect_fail 2 "model.type: 'WordPiece' is not supported" "$BIN" tokenizer info --tokenizer "$W/wordpiece.json"
expect_fail 2 "model.merges[2]: token 'zz' is not in model.vocab" "$BIN" tokenizer info --tokenizer "$W/merge_oov.json"
expect_fail 2 "model.merges[2]: not \"a b\"" "$BIN" tokenizer info --tokenizer "$W/merge_form.json"
expect_fail 2 "model.merges[2]: an empty side; both sides must be tokens of model.vocab" "$BIN" tokenizer info --tokenizer "$W/merge_empty.json"
# A byte with no token is dropped, as HF tokenizers drops it (SmolLM2's vocab lacks 21): "xzy" is x and y.
check "a vocab without a byte's token loads; the byte is dropped" test "$(printf xzy | "$BIN" tokenizer encode --tokenizer "$W/no_byte.json")" = "120 121"
check "lstrip: the token takes the spaces before it" test "$(printf 'a  <|endoftext|>' | "$BIN" tokenizer encode --tokenizer "$W/lstrip.json")" = "97 258"
# SentencePiece-style: " " is "\u2581" (no token here: dropped, no byte fallback tokens), "ab" merges; decode drops the first space.
check "SentencePiece-style BPE loads and merges" test "$(printf 'ab ab' | "$BIN" tokenizer encode --tokenizer "$W/spm_good.json")" = "3 3"
check "SentencePiece-style decode: a, ab" test "$(echo 1 3 | "$BIN" tokenizer decode --tokenizer "$W/spm_good.json")" = "aab"
expect_fail 2 "model.byte_fallback: true is not supported with a ByteLevel pre_tokenizer" "$BIN" tokenizer info --tokenizer "$W/fallback_bytelevel.json"
expect_fail 2 "pre_tokenizer.pretokenizers[1]: a step after ByteLevel is not supported" "$BIN" tokenizer info --tokenizer "$W/after_bytelevel.json"
expect_fail 2 "model.continuing_subword_prefix: is not supported" "$BIN" tokenizer info --tokenizer "$W/prefix.json"
expect_fail 2 "added_tokens[0]: '<|endoftext|>' has id 300, but HF tokenizers gives it 258" "$BIN" tokenizer info --tokenizer "$W/added_id.json"
expect_fail 2 "decoder: missing (a SentencePiece-style BPE needs" "$BIN" tokenizer info --tokenizer "$W/spm_nodecoder.json"
expect_fail 2 "decoder.decoders[0]: a Strip before Fuse is not supported" "$BIN" tokenizer info --tokenizer "$W/spm_strip_first.json"
expect_fail 2 "decoder.decoders[1]: Replace steps that lengthen a token more than 16 times are not supported" \
  "$BIN" tokenizer info --tokenizer "$W/spm_growing_replace.json"
expect_fail 2 "normalizer.normalizers[1].pattern: only a non-empty {\"String\": ...} is supported" "$BIN" tokenizer info --tokenizer "$W/spm_regex.json"
expect_fail 2 "pre_tokenizer.prepend_scheme: 'sometimes' is not first, always or never" "$BIN" tokenizer info --tokenizer "$W/spm_scheme.json"
expect_fail 2 "model.unk_token: '<UNK>' is not in model.vocab" "$BIN" tokenizer info --tokenizer "$W/spm_unk.json"
expect_fail 2 "decoder: type 'ByteLevel' is not supported with a SentencePiece-style BPE" "$BIN" tokenizer info --tokenizer "$W/spm_bytelevel_dec.json"
expect_fail 2 "pre_tokenizer.type: 'Whitespace' is not supported" "$BIN" tokenizer info --tokenizer "$W/pretok.json"
expect_fail 2 "pre_tokenizer.pretokenizers[0].behavior: only \"Isolated\"" "$BIN" tokenizer info --tokenizer "$W/split_beh.json"
expect_fail 2 "pre_tokenizer.pretokenizers[0]: regex does not compile" "$BIN" tokenizer info --tokenizer "$W/bad_regex.json"
expect_fail 2 "decoder: 'WordPiece' is not supported" "$BIN" tokenizer info --tokenizer "$W/decoder.json"
expect_fail 2 "model.vocab[\"x\"]: id is not an integer in 0..4194303" "$BIN" tokenizer info --tokenizer "$W/bad_id.json"
expect_fail 2 "missing.json: cannot open" "$BIN" tokenizer info --tokenizer "$W/missing.json"
expect_fail 2 "needs --tokenizer FILE" "$BIN" tokenizer encode
expect_fail 2 "unknown tokenizer subcommand 'frobnicate'" "$BIN" tokenizer frobnicate
echo "97 259 98" > "$W/ids.txt"
expect_fail 2 "ids.txt: id 1 is 259: not a token of this tokenizer (vocab size 259)" "$BIN" tokenizer decode --tokenizer "$W/good.json" "$W/ids.txt"
expect_fail 2 "stdin: id 1 (byte 3) is not a non-negative integer" sh -c "echo '97 -5' | '$BIN' tokenizer decode --tokenizer '$W/good.json'"
# The exit-code rule (docs/usage.md): a missing input, an unsupported file and an output path that cannot be
# written are bad input, exit 2; tokenizer train refuses its --out before it reads any text.
expect_fail 2 "nothing.txt: cannot open" "$BIN" tokenizer encode --tokenizer "$W/good.json" "$W/nothing.txt"
expect_fail 2 "the directory $W/no_dir does not exist" "$BIN" tokenizer train --vocab 300 --out "$W/no_dir/t.json" "$W/good.json"
expect_fail 2 "is a directory" "$BIN" tokenizer train --vocab 300 --out "$W" "$W/good.json"
check "a refused tokenizer train wrote nothing" test ! -e "$W/no_dir"
printf '\xff\xfe\x80abc\xc3' > "$W/bin.txt"
check "non-UTF-8 text encodes and decodes back" cmp -s "$W/bin.txt" <("$BIN" tokenizer encode --tokenizer "$W/good.json" "$W/bin.txt" |
                                                                  "$BIN" tokenizer decode --tokenizer "$W/good.json")
: > "$W/empty.txt"
check "empty text encodes to nothing" sh -c "out=\$('$BIN' tokenizer encode --tokenizer '$W/good.json' '$W/empty.txt') && test -z \"\$out\""
# tokenizer train reads inputs as prepare does: a PNG and an empty file beside the text are skipped and said
# so (the vocab equals the text's alone), --include picks files in directories, and no text at all is refused.
mkdir -p "$W/mixed" "$W/notext"
for i in $(seq 300); do printf 'Line %d: the quick brown fox jumps over the lazy dog, %d times.\n' "$i" $((i * 7 % 13)); done > "$W/mixed/text.txt"
{ printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR'; head -c 3000 /dev/urandom; } > "$W/mixed/image.png"
: > "$W/mixed/empty.txt"
"$BIN" tokenizer train --quiet --vocab 320 --out "$W/alone.json" "$W/mixed/text.txt" > /dev/null
err=$("$BIN" tokenizer train --vocab 320 --out "$W/mixed.json" "$W/mixed" 2>&1 > /dev/null)
check "a directory with a PNG and an empty file trains the text's vocab alone" cmp -s "$W/alone.json" "$W/mixed.json"
check "tokenizer train says it skipped the binary file, naming it" grep -q "tokenizer train: skipped 1 binary file (a NUL byte in the first 8 KiB), e.g. $W/mixed/image.png" <<< "$err"
check "tokenizer train says it skipped the empty file" grep -q "tokenizer train: skipped 1 empty file, e.g. $W/mixed/empty.txt" <<< "$err"
"$BIN" tokenizer train --quiet --vocab 320 --include '*.png,*.txt' --out "$W/globs.json" "$W/mixed" > /dev/null
check "--include picks files in the directory (PNG and empty still skipped)" cmp -s "$W/alone.json" "$W/globs.json"
for i in $(seq 200); do printf 'Zebras %d gallop across a wide savannah at dawn.\n' "$i"; done > "$W/mixed/other.md"
"$BIN" tokenizer train --quiet --vocab 320 --out "$W/all.json" "$W/mixed" > /dev/null
"$BIN" tokenizer train --quiet --vocab 320 --include '*.txt' --out "$W/txt.json" "$W/mixed" > /dev/null
check "without --include the .md is read too (another vocab)" test -s "$W/all.json" -a -n "$(cmp "$W/alone.json" "$W/all.json")"
check "--include '*.txt' leaves the .md out: the text's vocab alone" cmp -s "$W/alone.json" "$W/txt.json"
cp "$W/mixed/image.png" "$W/notext/a.png"; : > "$W/notext/b.txt"
one_line_exit2() {  # one_line_exit2 WHAT PATTERN CMD...: exit 2, one line on stderr containing PATTERN, no tokenizer written
  local what=$1 pattern=$2 err rc=0; shift 2
  err=$("$@" 2>&1 > /dev/null) || rc=$?
  check "$what: exit 2 ($rc), one line ($(grep -c . <<< "$err")) with '$pattern'" test "$rc" = 2 -a "$(grep -c . <<< "$err")" = 1 -a "${err/"$pattern"/}" != "$err"
  check "$what: no tokenizer written" test ! -e "$W/none.json" -a ! -e "$W/none.json.tmp"
}
one_line_exit2 "binary and empty files only" "no text to learn from: 1 binary file (a NUL byte in the first 8 KiB), e.g. $W/notext/a.png and 1 empty file, e.g. $W/notext/b.txt" \
  "$BIN" tokenizer train --vocab 300 --out "$W/none.json" "$W/notext"
one_line_exit2 "an empty file named alone" "no text to learn from: 1 empty file, e.g. $W/notext/b.txt; give text files" "$BIN" tokenizer train --vocab 300 --out "$W/none.json" "$W/notext/b.txt"
one_line_exit2 "--include that matches nothing" "no input files found under the given paths that match --include" \
  "$BIN" tokenizer train --vocab 300 --include '*.rst' --out "$W/none.json" "$W/mixed"
printf '<|endoftext|><|pad|>' > "$W/specials.txt"
one_line_exit2 "special-token text only" "no text to learn from: the input holds only special-token text" "$BIN" tokenizer train --vocab 300 --out "$W/none.json" "$W/specials.txt"
finish
