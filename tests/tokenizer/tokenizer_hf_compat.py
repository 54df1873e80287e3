# tests/tokenizer/tokenizer_hf_compat.py — trains BPE tokenizers with HF `tokenizers` in every form ringgpt reads (byte-level GPT-2 and
# Llama 3 styles, Digits, missing byte tokens, SentencePiece-style with byte fallback, added-token flags) and writes their
# tokenizer.json files, the reference ids of a text, or decodes ids; driven by tokenizer_compat.sh.
import json, sys
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors,
                        trainers)

LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
SPECIALS = ["<|endoftext|>", "<|begin_of_text|>", "<|pad|>"]
SPM_SPECIALS = ["<unk>", "<s>", "</s>"]
# Added tokens with each flag HF has (tokenizer_make_corpus.py puts their text, with spaces around, into the corpus).
FLAGGED = [AddedToken("<|lstrip|>", lstrip=True, special=True, normalized=False),
           AddedToken("<|rstrip|>", rstrip=True, special=True, normalized=False),
           AddedToken("fox", single_word=True, normalized=False),
           AddedToken("lazy dog", normalized=True)]
# Byte tokens a "nobytes" vocab lacks, as SmolLM2's lacks 21: vertical tab, form feed, and the lead byte of
# most 3-byte characters (… € ‐ CJK is E4-E9, so only part of the text loses characters).
DROPPED = [0x0B, 0x0C, 0xE2]


def byte_level(kind):
    tok = Tokenizer(models.BPE(ignore_merges=(kind == "llama3")))
    if kind in ("llama3", "digitsplit"):
        steps = [pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated")]
        if kind == "digitsplit":
            steps.append(pre_tokenizers.Digits(individual_digits=False))
        tok.pre_tokenizer = pre_tokenizers.Sequence(steps + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 1)])
    elif kind == "digits":   # SmolLM2's
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=(kind == "gpt2prefix"))
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    return tok, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                    show_progress=False)


def sentencepiece(kind):
    """Llama 2 / Mistral style: trained with a splitting Metaspace (as SentencePiece trains on words), then used in the
    form of the kind; limit_alphabet leaves rare characters to byte fallback or unk."""
    fallback = kind != "spm_unk"
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=(kind != "spm_unk"), byte_fallback=fallback, ignore_merges=(kind == "spm_unk")))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    return tok, trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPM_SPECIALS, limit_alphabet=200, show_progress=False)


def spm_form(tok, kind, out):
    j = json.loads(tok.to_str())
    v = j["model"]["vocab"]
    if j["model"]["byte_fallback"]:   # Llama's <0x00>..<0xFF>, after the trained tokens
        renumber(j, [f"<0x{b:02X}>" for b in range(256)])
    replace_dec = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                                                    {"type": "ByteFallback"}, {"type": "Fuse"},
                                                    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    if kind == "spm_prepend":   # Llama 2 / Mistral v0.1 on the Hub
        j["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                               {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
        j["pre_tokenizer"], j["decoder"] = None, replace_dec
        j["post_processor"] = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                                        {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                               "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    elif kind == "spm_meta":    # transformers' LlamaTokenizer(legacy=False), with the Metaspace decoder
        j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}
        j["decoder"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}
    else:                       # spm_unk: a splitting Metaspace, no byte fallback: unknown characters become <unk>
        j["decoder"] = replace_dec
    json.dump(j, open(out, "w", encoding="utf-8"), ensure_ascii=False)


def train(kind, corpus, out, vocab):
    global VOCAB
    VOCAB = vocab
    spm = kind.startswith("spm")
    tok, trainer = sentencepiece(kind) if spm else byte_level(kind)
    tok.train([corpus], trainer)
    tok.add_tokens(["<|reserved_0|>"])   # a non-special added token (normalized)
    if kind in ("added", "spm_prepend"):
        tok.add_tokens(FLAGGED)
    if spm:
        spm_form(tok, kind, out)
        return
    tok.save(out)
    if kind == "nobytes":
        drop_bytes(out)
    if kind == "gpt2":   # the older "a b" string form of merges must load too
        j = json.load(open(out, encoding="utf-8"))
        j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in j["model"]["merges"]]
        json.dump(j, open(out, "w", encoding="utf-8"), ensure_ascii=False)


def drop_bytes(out):
    """Drops the DROPPED byte tokens and the merges that use them from a byte-level tokenizer.json (SmolLM2's vocab)."""
    j = json.load(open(out, encoding="utf-8"))
    mapped = dict(zip(range(256), byte_chars()))
    gone = {mapped[b] for b in DROPPED}
    for c in gone:
        j["model"]["vocab"].pop(c, None)
    j["model"]["merges"] = [m for m in j["model"]["merges"] if m[0] not in gone and m[1] not in gone]
    renumber(j, [])
    json.dump(j, open(out, "w", encoding="utf-8"), ensure_ascii=False)


def renumber(j, extra):
    """Dense ids, as HF gives them on loading: model.vocab in its order, then `extra` tokens into the vocab, then the added
    tokens that are not in it."""
    v = j["model"]["vocab"]
    order = sorted(v, key=v.get) + extra
    j["model"]["vocab"] = v = {t: i for i, t in enumerate(order)}
    nxt = len(v)
    for a in j["added_tokens"]:
        a["id"] = v[a["content"]] if a["content"] in v else nxt
        nxt += a["content"] not in v


def byte_chars():
    """GPT-2's bytes_to_unicode, byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    m = dict(zip(bs, cs))
    return [chr(m[b]) for b in range(256)]


# Short texts where the start of the text, special tokens and spaces meet (Metaspace's "first", Prepend after a special
# token, lstrip/rstrip at the ends, single_word at the edges, a literal "▁").
EDGES = ["Hello", " Hello", "  Hello  world  ", "\u2581Hello \u2581\u2581x", "<s>Hello", "<s> Hello</s>", "Hello<s>", "</s>",
         "a\n\nb\n", "x<|lstrip|>y", " <|lstrip|> ", "<|rstrip|>  \t z", "fox", "fox foxes _fox fox.", "12345 \u0663\u0664\u0665 x2",
         "\u3000 x \u00a0", "lazy dog lazy  dog", "\u00e9\u0301 \U0001F600 \u4e2d", "<|endoftext|><|endoftext|>", "\t", " "]


def edges(tok_path, out_dir):
    tok = Tokenizer.from_file(tok_path)
    for i, t in enumerate(EDGES):
        open(f"{out_dir}/edge{i}.txt", "w", encoding="utf-8", newline="").write(t)
        ids = tok.encode(t, add_special_tokens=False).ids
        open(f"{out_dir}/edge{i}.hf", "w").write(" ".join(map(str, ids)) + "\n")
        open(f"{out_dir}/edge{i}.hfdec", "w", encoding="utf-8", newline="").write(tok.decode(ids, skip_special_tokens=False))
    print(len(EDGES))


def main():
    cmd = sys.argv[1]
    if cmd == "train":
        train(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif cmd == "encode":   # tokenizer.json, text file -> ids file (one line, spaces)
        tok = Tokenizer.from_file(sys.argv[2])
        text = open(sys.argv[3], encoding="utf-8", newline="").read()
        ids = tok.encode(text, add_special_tokens=False).ids
        open(sys.argv[4], "w").write(" ".join(map(str, ids)) + "\n")
    elif cmd == "decode":   # tokenizer.json, ids file -> text file
        tok = Tokenizer.from_file(sys.argv[2])
        ids = [int(x) for x in open(sys.argv[3]).read().split()]
        open(sys.argv[4], "w", encoding="utf-8", newline="").write(tok.decode(ids, skip_special_tokens=False))
    elif cmd == "edges":    # tokenizer.json, dir -> edgeN.txt, edgeN.hf (ids), edgeN.hfdec; prints N
        edges(sys.argv[2], sys.argv[3])
    elif cmd == "vocab":    # tokenizer.json -> vocab size with added tokens
        print(Tokenizer.from_file(sys.argv[2]).get_vocab_size(with_added_tokens=True))
    elif cmd == "same_text":   # ringgpt's decoded bytes, HF's decoded text: equal once invalid UTF-8 is U+FFFD, as HF writes it
        a, b = (open(p, "rb").read() for p in sys.argv[2:4])
        sys.exit(a.decode("utf-8", "replace") != b.decode("utf-8"))


if __name__ == "__main__":
    main()
