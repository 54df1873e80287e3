#!/usr/bin/env python3
# tests/checkpoints/make_hf_llama.py — writes a random Hugging Face Llama directory as a user gets one: config.json,
# generation_config.json, tokenizer_config.json (chat template, add_bos_token), special_tokens_map.json, a tokenizer.json
# trained by HF `tokenizers` (--tokenizer: byte-level BPE, SmolLM2's Digits form with missing byte tokens, Llama 2's or
# Mistral's SentencePiece-style BPE with byte fallback; or none, or one ringgpt does not support) and model.safetensors.
import argparse
import json
import os
import struct
import sys
import tempfile

import numpy as np

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]   # ids 0, 1, 2 (SmolLM2's)
# The tokenizer kinds: tokenizer_hf_compat.py's trainer kind (None: train_tokenizer here), and the special tokens at ids
# 0, 1, 2 with which of them are bos, eos, pad and unk.
SMOL = {"specials": SPECIALS, "bos": "<|im_start|>", "eos": "<|im_end|>", "pad": "<|im_end|>", "unk": "<|endoftext|>"}
SPM = {"specials": ["<unk>", "<s>", "</s>"], "bos": "<s>", "eos": "</s>", "pad": None, "unk": "<unk>"}
KINDS = {"bpe": (None, SMOL), "unsupported": (None, SMOL), "none": (None, SMOL),
         "digits": ("digits", SMOL),             # SmolLM2: Sequence[Digits(individual), ByteLevel], 3 byte tokens dropped
         "spm_prepend": ("spm_prepend", SPM),    # Llama 2 / Mistral v0.1: Prepend + Replace normalizers, byte fallback
         "spm_meta": ("spm_meta", SPM)}          # transformers' LlamaTokenizer(legacy=False): Metaspace, byte fallback
CHAT_TEMPLATE = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                 "{{ '<|im_start|>system\nYou are a helpful AI assistant.<|im_end|>\n' }}{% endif %}"
                 "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
                 "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def bf16(a):
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


# Tensor by tensor straight to the file, so that a model of a few hundred MB is never held twice here either.
def save_safetensors(path, shapes, dtype, rng):
    size = 2 if dtype == "BF16" else 4
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in shapes:
        n = int(np.prod(shape)) * size
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for name, shape in shapes:
            if name.endswith("norm.weight"):
                a = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
            else:
                a = (0.05 * rng.standard_normal(shape)).astype(np.float32)
            f.write((bf16(a) if dtype == "BF16" else a).tobytes())


def weight_shapes(a, vocab):
    hd = a.dim // a.heads
    s = [("model.embed_tokens.weight", (vocab, a.dim))]
    for i in range(a.layers):
        p = f"model.layers.{i}."
        s += [(p + "input_layernorm.weight", (a.dim,)), (p + "self_attn.q_proj.weight", (a.heads * hd, a.dim)),
              (p + "self_attn.k_proj.weight", (a.kv_heads * hd, a.dim)), (p + "self_attn.v_proj.weight", (a.kv_heads * hd, a.dim)),
              (p + "self_attn.o_proj.weight", (a.dim, a.heads * hd)), (p + "post_attention_layernorm.weight", (a.dim,)),
              (p + "mlp.gate_proj.weight", (a.ffn, a.dim)), (p + "mlp.up_proj.weight", (a.ffn, a.dim)),
              (p + "mlp.down_proj.weight", (a.dim, a.ffn))]
    s.append(("model.norm.weight", (a.dim,)))
    if not a.tied:
        s.append(("lm_head.weight", (vocab, a.dim)))
    return s


def train_tokenizer(vocab, corpus, add_bos):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    if add_bos:   # as Llama's tokenizers: the post-processor puts BOS first, and tokenizer_config.json says add_bos_token
        tok.post_processor = processors.TemplateProcessing(single="<|im_start|> $A", special_tokens=[("<|im_start|>", 1)])
    return json.loads(tok.to_str())


def compat_tokenizer(kind, corpus_lines, vocab):
    """A tokenizer.json of tokenizer_hf_compat.py's kind (tests/tokenizer), with SMOL's special tokens for the byte-level ones."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokenizer"))
    import tokenizer_hf_compat as compat
    compat.SPECIALS = SPECIALS
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "corpus.txt"), "w", encoding="utf-8").write("\n".join(corpus_lines) + "\n")
        out = os.path.join(d, "tokenizer.json")
        compat.train(kind, os.path.join(d, "corpus.txt"), out, vocab)
        if kind == "digits":
            compat.drop_bytes(out)
        return json.load(open(out, encoding="utf-8"))


def vocab_size(tj):
    """Ids HF gives: the model's vocab and the added tokens."""
    return 1 + max(list(tj["model"]["vocab"].values()) + [t["id"] for t in tj["added_tokens"]])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=160)
    ap.add_argument("--vocab", type=int, default=384)
    ap.add_argument("--max-pos", type=int, default=8192)
    ap.add_argument("--tied", action="store_true")
    ap.add_argument("--dtype", default="F32", choices=["F32", "BF16"])
    ap.add_argument("--tokenizer", default="bpe", choices=list(KINDS))
    ap.add_argument("--add-bos", default="true", choices=["true", "false", "absent"])
    ap.add_argument("--corpus", help="a text file to train the tokenizer on")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    vocab = a.vocab
    compat, sp = KINDS[a.tokenizer]
    ids = {k: (sp["specials"].index(sp[k]) if sp[k] else None) for k in ("bos", "eos", "pad")}
    if a.tokenizer != "none":
        corpus = open(a.corpus, encoding="utf-8").read().splitlines() if a.corpus else ["hello world, the quick brown fox"] * 10
        tj = compat_tokenizer(compat, corpus, a.vocab) if compat else train_tokenizer(a.vocab, corpus, a.add_bos == "true")
        vocab = vocab_size(tj) if compat else max(vocab_size(tj), a.vocab)   # the compat kinds: every id a token
        if a.tokenizer == "unsupported":   # HF runs it; ringgpt does not know this pre-tokenizer
            tj["pre_tokenizer"] = {"type": "UnicodeScripts"}
        json.dump(tj, open(os.path.join(a.out, "tokenizer.json"), "w"), ensure_ascii=False, indent=2)
    # A config as transformers writes it, with keys ringgpt does not read; floats as Python prints them.
    cfg = {"_name_or_path": "test-org/TinyRandLlama-Instruct", "architectures": ["LlamaForCausalLM"], "attention_bias": False,
           "attention_dropout": 0.0, "bos_token_id": ids["bos"], "eos_token_id": ids["eos"], "head_dim": a.dim // a.heads, "hidden_act": "silu",
           "hidden_size": a.dim, "initializer_range": 0.041666666666666664, "intermediate_size": a.ffn,
           "max_position_embeddings": a.max_pos, "mlp_bias": False, "model_type": "llama", "num_attention_heads": a.heads,
           "num_hidden_layers": a.layers, "num_key_value_heads": a.kv_heads, "pad_token_id": ids["pad"], "pretraining_tp": 1,
           "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 100000.0, "tie_word_embeddings": a.tied,
           "torch_dtype": "bfloat16" if a.dtype == "BF16" else "float32", "transformers_version": "4.42.3", "use_cache": True,
           "vocab_size": vocab}
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    gen = {"_from_model_config": True, "bos_token_id": ids["bos"], "eos_token_id": ids["eos"], "pad_token_id": ids["pad"],
           "transformers_version": "4.42.3"}
    json.dump(gen, open(os.path.join(a.out, "generation_config.json"), "w"), indent=2)
    tc = {"add_eos_token": False, "add_prefix_space": False,
          "added_tokens_decoder": {str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                                            "single_word": False, "special": True} for i, s in enumerate(sp["specials"])},
          "additional_special_tokens": sp["specials"][1:], "bos_token": sp["bos"],
          "chat_template": CHAT_TEMPLATE, "clean_up_tokenization_spaces": False, "eos_token": sp["eos"],
          "model_max_length": a.max_pos, "pad_token": sp["pad"], "tokenizer_class": "PreTrainedTokenizerFast",
          "unk_token": sp["unk"], "vocab_size": vocab}
    if a.add_bos != "absent":
        tc["add_bos_token"] = a.add_bos == "true"
    json.dump(tc, open(os.path.join(a.out, "tokenizer_config.json"), "w"), indent=2)
    stm = {"additional_special_tokens": sp["specials"][1:], "bos_token": sp["bos"], "eos_token": sp["eos"],
           "pad_token": sp["pad"], "unk_token": sp["unk"]}
    stm = {k: v for k, v in stm.items() if v is not None}   # Llama 2's names no pad token
    json.dump(stm, open(os.path.join(a.out, "special_tokens_map.json"), "w"), indent=2)
    save_safetensors(os.path.join(a.out, "model.safetensors"), weight_shapes(a, vocab), a.dtype, rng)


if __name__ == "__main__":
    main()
