#!/usr/bin/env python3
# tests/checkpoints/make_hf_rope.py — writes a small random Llama-3.2-shaped HF directory (config.json + model.safetensors) with a given RoPE scaling.
"""Usage: make_hf_rope.py DIR SCALING_JSON [--style v4|v4type|v5] [--orig N] [--max-pos N] [--layers N] [--seed N]

Llama 3.2's shape, scaled down: head_dim 64, 4 query heads to 1 key/value head (3.2-1B has 32 to 8), tied embeddings,
rope_theta 500000, vocab 260 (ringgpt's byte-level tokenizer, so text data evaluates it). SCALING_JSON is the
rope_scaling dict ("{}" for none). --style: v4 writes rope_scaling with rope_type, v4type the older "type" key, v5
rope_parameters (with rope_theta inside, none at the top level)."""
import argparse
import json
import os
import struct

import numpy as np


def save_safetensors(path, tensors):
    header, off, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for k, a in tensors.items():
        b = a.astype("<f4").tobytes()
        header[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("scaling")
    ap.add_argument("--style", default="v4", choices=["v4", "v4type", "v5"])
    ap.add_argument("--max-pos", type=int, default=131072)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    C, H, Hkv, hd, F, V = 256, 4, 1, 64, 512, 260
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": C, "intermediate_size": F,
           "num_hidden_layers": a.layers, "num_attention_heads": H, "num_key_value_heads": Hkv, "head_dim": hd,
           "hidden_act": "silu", "max_position_embeddings": a.max_pos, "rms_norm_eps": 1e-5, "vocab_size": V,
           "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32"}
    scaling = json.loads(a.scaling)
    if a.style == "v5":
        cfg["rope_parameters"] = dict(scaling or {"rope_type": "default"}, rope_theta=500000.0)
    else:
        cfg["rope_theta"] = 500000.0
        if a.style == "v4type" and scaling:
            scaling = {("type" if k == "rope_type" else k): v for k, v in scaling.items()}
        cfg["rope_scaling"] = scaling or None
    rng = np.random.default_rng(a.seed)
    w = {"model.embed_tokens.weight": rng.normal(0, 0.2, (V, C)), "model.norm.weight": 1 + 0.1 * rng.normal(0, 1, C)}
    # q and k large enough that attention scores are a few units: the positions (and so the scaling) matter
    shapes = {"self_attn.q_proj": (H * hd, C, 0.12), "self_attn.k_proj": (Hkv * hd, C, 0.12),
              "self_attn.v_proj": (Hkv * hd, C, 0.06), "self_attn.o_proj": (C, H * hd, 0.06),
              "mlp.gate_proj": (F, C, 0.06), "mlp.up_proj": (F, C, 0.06), "mlp.down_proj": (C, F, 0.04)}
    for l in range(a.layers):
        p = f"model.layers.{l}."
        for name, (o, i, std) in shapes.items():
            w[p + name + ".weight"] = rng.normal(0, std, (o, i))
        w[p + "input_layernorm.weight"] = 1 + 0.1 * rng.normal(0, 1, C)
        w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rng.normal(0, 1, C)
    os.makedirs(a.dir, exist_ok=True)
    with open(os.path.join(a.dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    save_safetensors(os.path.join(a.dir, "model.safetensors"), w)


if __name__ == "__main__":
    main()
