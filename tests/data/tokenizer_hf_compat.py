# tests/data/tokenizer_hf_compat.py — trains byte-level BPE tokenizers with HF `tokenizers` (GPT-2 and Llama-3 styles) and writes
# their tokenizer.json files, the reference ids of a text, or decodes ids; driven by tokenizer_compat.sh.
import json, sys
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
SPECIALS = ["<|endoftext|>", "<|begin_of_text|>", "<|pad|>"]


def train(kind, corpus, out, vocab):
    tok = Tokenizer(models.BPE(ignore_merges=(kind == "llama3")))
    if kind == "llama3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 1)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=(kind == "gpt2prefix"))
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train([corpus], trainer)
    tok.add_tokens(["<|reserved_0|>"])   # a non-special added token (normalized)
    tok.save(out)
    if kind == "gpt2":   # the older "a b" string form of merges must load too
        j = json.load(open(out, encoding="utf-8"))
        j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in j["model"]["merges"]]
        json.dump(j, open(out, "w", encoding="utf-8"), ensure_ascii=False)


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
    elif cmd == "vocab":    # tokenizer.json -> vocab size with added tokens
        print(Tokenizer.from_file(sys.argv[2]).get_vocab_size(with_added_tokens=True))


if __name__ == "__main__":
    main()
