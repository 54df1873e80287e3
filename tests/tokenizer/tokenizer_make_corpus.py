# tests/tokenizer/tokenizer_make_corpus.py — writes a few MB of mixed text that exercises every pre-tokenizer path (seeded, reproducible).
import random, sys

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "token", "ring", "attention", "context",
         "Hello", "WORLD", "naïve", "café", "über", "Straße", "façade", "jalapeño", "smörgåsbord", "coöperate",
         "Москва", "привет", "Ελλάδα", "καλημέρα", "שלום", "مرحبا", "नमस्ते", "ภาษาไทย", "한국어", "日本語", "中文字符",
         "東京タワー", "ｆｕｌｌｗｉｄｔｈ", "ǅemal", "Ⅻ", "x²", "½", "٣٤٥", "१२३", "e\u0301", "n\u0303o", "ﬁne"]
PUNCT = [".", ",", "!", "?", "...", ";", ":", "--", "(", ")", "[", "]", "{", "}", "\"", "'", "`", "#", "@", "$", "%",
         "&&", "||", "->", "=>", "==", "!=", "<=", "//", "/*", "*/", "\\n", "…", "«", "»", "—", "·", "€", "£", "¥"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🚀", "🇫🇷", "✨", "🤖", "🐍"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\n\n", " \n", "\u00a0", "\u3000", "\u2003", "\u2028", "\u0085", "\x0b", "\x0c"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Re", "’s"]
# Special and added tokens of the test tokenizers (tokenizer_hf_compat.py), "fox" and "lazy dog" among them.
SPECIALS = ["<|endoftext|>", "<|begin_of_text|>", "<|pad|>", "<|reserved_0|>", "<s>", "</s>", "<unk>", "  <|lstrip|>  ",
            "\t<|rstrip|> \n x", "<|lstrip|><|rstrip|>", "lazy dog", "foxfox", "_fox_", "fox1", "(fox)"]


def piece(r):
    k = r.random()
    if k < 0.45: return r.choice(WORDS) + (r.choice(CONTRACTIONS) if r.random() < 0.05 else "")
    if k < 0.55: return str(r.randrange(10 ** r.randrange(1, 12)))
    if k < 0.65: return r.choice(PUNCT)
    if k < 0.70: return r.choice(EMOJI)
    if k < 0.72: return "".join(chr(r.randrange(0x4E00, 0x9FFF)) for _ in range(r.randrange(1, 9)))
    if k < 0.73: return "".join(chr(r.randrange(0x20, 0x2FFF)) for _ in range(r.randrange(1, 6))).replace("\r", "")
    if k < 0.735: return " " * r.randrange(20, 3000)          # long runs of spaces
    if k < 0.74: return "9" * r.randrange(20, 3000)           # long digit runs
    if k < 0.745: return "\n" * r.randrange(2, 50) + "\t" * r.randrange(0, 9)
    if k < 0.75: return r.choice(SPECIALS)
    if k < 0.755: return "a" * r.randrange(50, 4000)          # one long word
    return r.choice(SPACES)


def text(seed, n_chars):
    r, out, size = random.Random(seed), [], 0
    while size < n_chars:
        p = piece(r)
        out.append(p)
        out.append(" " if r.random() < 0.7 else "")
        size += len(p) + 1
    return "".join(out)


if __name__ == "__main__":
    path, seed, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text(seed, n))
