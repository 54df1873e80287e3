#!/usr/bin/env python3
# scripts/check_hf_export.py — independent check of `ringgpt export --to hf`: own safetensors parser + numpy Llama forward vs ringgpt's logits.
"""Usage:
  check_hf_export.py HF_DIR DUMP_DIR [--tol X]      compare logits (DUMP_DIR from `ringgpt eval --dump-logits`);
                                                     the tolerance follows the weights' dtype (F32 1e-4, BF16 1e-2)
  check_hf_export.py --parse FILE.safetensors ...     check files against the safetensors format
  check_hf_export.py HF_DIR --greedy N --prompt-ids 1,2,3
                                                     print the N ids the numpy forward continues the prompt with
                                                     (greedy, no KV cache: a reference for `sample --temperature 0`)

The numpy forward follows Hugging Face's LlamaForCausalLM (rotate-half RoPE with rope_scaling linear, dynamic, yarn or
llama3, GQA, SwiGLU, RMSNorm) in float64.
Where `transformers` and `torch` are installed it also compares with LlamaForCausalLM itself."""
import json
import os
import struct
import sys

try:
    import numpy as np
except ImportError:   # --help works without it; main finds a Python that has it (scripts/pyfind.py)
    np = None

DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "BF16": "bf16", "I32": "<i4", "I64": "<i8"}
SIZES = {"F32": 4, "F64": 8, "F16": 2, "BF16": 2, "I32": 4, "I64": 8, "U8": 1, "I8": 1, "BOOL": 1}


def parse_safetensors(path, strict_writer=False):
    """Returns ({name: array}, metadata). Checks the layout; strict_writer also checks ringgpt's writer promises."""
    data = open(path, "rb").read()
    assert len(data) >= 8, f"{path}: shorter than 8 bytes"
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), f"{path}: header length {n} exceeds the file"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    assert data[8:9] == b"{", f"{path}: header does not start with '{{'"
    meta = header.pop("__metadata__", None)
    if meta is not None:
        assert all(isinstance(v, str) for v in meta.values()), f"{path}: __metadata__ values must be strings"
    if strict_writer:
        assert meta is not None and meta.get("format") == "pt", f"{path}: __metadata__.format must be 'pt'"
        assert (8 + n) % 8 == 0, f"{path}: data does not start 8-byte aligned"
    buf = data[8 + n:]
    spans, out = [], {}
    for name, rec in header.items():
        dt, shape, (b, e) = rec["dtype"], rec["shape"], rec["data_offsets"]
        count = int(np.prod(shape)) if shape else 1
        assert e - b == count * SIZES[dt], f"{path}: {name}: data_offsets do not match shape x dtype"
        spans.append((b, e, name))
        raw = buf[b:e]
        if dt == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=np.dtype(DTYPES[dt]).newbyteorder("<"))
        out[name] = arr.reshape(shape)
    spans.sort()
    at = 0
    for b, e, name in spans:
        assert b == at, f"{path}: {name}: hole or overlap at byte {b} (expected {at})"
        at = e
    assert at == len(buf), f"{path}: tensors cover {at} bytes, the buffer has {len(buf)}"
    return out, meta


def load_hf(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    index = os.path.join(d, "model.safetensors.index.json")
    w = {}
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    for f in files:
        w.update(parse_safetensors(os.path.join(d, f))[0])
    return cfg, {k: v.astype(np.float64) for k, v in w.items()}


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope_parameters(cfg, seq_len):
    """(inv_freq (hd/2), attention_factor) of the config's RoPE for a sequence of seq_len tokens, in float64: a
    transcription of transformers' modeling_rope_utils (default, linear, dynamic, yarn, llama3). The scaling is
    config.json's rope_scaling (transformers v4: rope_type or the older type) or rope_parameters (v5)."""
    H = cfg["num_attention_heads"]
    hd = cfg.get("head_dim") or cfg["hidden_size"] // H
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    theta = cfg.get("rope_theta", rs.get("rope_theta", 10000.0))
    kind = rs.get("rope_type", rs.get("type", "default"))
    max_pos = cfg.get("max_position_embeddings", 2048)
    orig = rs.get("original_max_position_embeddings") or max_pos
    base = theta
    if kind == "dynamic":   # the base grows with the sequence beyond max_position_embeddings
        n = max(seq_len, max_pos)
        base = theta * (rs["factor"] * n / max_pos - (rs["factor"] - 1)) ** (hd / (hd - 2))
    inv = 1.0 / base ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    attention = 1.0
    if kind == "linear":
        inv = inv / rs["factor"]
    elif kind == "llama3":
        f, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        wavelen = 2 * np.pi / inv
        smooth = (orig / wavelen - lo) / (hi - lo)
        scaled = np.where(wavelen > orig / lo, inv / f, inv)
        medium = (wavelen >= orig / hi) & (wavelen <= orig / lo)
        inv = np.where(medium, (1 - smooth) * inv / f + smooth * inv, scaled)
    elif kind == "yarn":
        f = rs.get("factor") or max_pos / orig
        def mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * np.log(scale) + 1.0
        if rs.get("attention_factor") is not None:
            attention = rs["attention_factor"]
        elif rs.get("mscale") and rs.get("mscale_all_dim"):
            attention = mscale(f, rs["mscale"]) / mscale(f, rs["mscale_all_dim"])
        else:
            attention = mscale(f)
        def dim_of(rotations):   # the pair dimension that turns `rotations` times over the original context
            return hd * np.log(orig / (rotations * 2 * np.pi)) / (2 * np.log(base))
        lo, hi = dim_of(rs.get("beta_fast") or 32), dim_of(rs.get("beta_slow") or 1)
        if rs.get("truncate", True):
            lo, hi = np.floor(lo), np.ceil(hi)
        lo, hi = max(lo, 0), min(hi, hd - 1)
        if lo == hi:
            hi += 0.001
        ramp = np.clip((np.arange(hd // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
        inv = inv / f * ramp + inv * (1 - ramp)
    elif kind not in ("default", "dynamic"):
        raise ValueError(f"rope type {kind} is not transcribed here")
    return inv, attention


def rope_hf(x, inv, attention):
    # x (T, heads, hd): HF rotate_half convention, pairs (i, i + hd/2); cos and sin times the attention factor
    T, _, hd = x.shape
    ang = np.arange(T)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, -1)[:, None, :] * attention
    sin = np.concatenate([np.sin(ang)] * 2, -1)[:, None, :] * attention
    rot = np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], -1)
    return x * cos + rot * sin


def llama_forward(cfg, w, tokens):
    """tokens (T,) -> logits (T, V), float64, following LlamaForCausalLM."""
    C, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads", H)
    hd = cfg.get("head_dim", C // H)
    eps = cfg.get("rms_norm_eps", 1e-6)
    T = len(tokens)
    inv, attention = rope_parameters(cfg, T)   # HF's seq_len: max position + 1
    x = w["model.embed_tokens.weight"][tokens]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = rope_hf((h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, H, hd), inv, attention)
        k = rope_hf((h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, Hkv, hd), inv, attention)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, Hkv, hd)
        att = np.empty((T, H, hd))
        for head in range(H):   # one head at a time: (T, T) scores, not (H, T, T), at long T
            kv = head // (H // Hkv)
            s = q[:, head] @ k[:, kv].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            att[:, head] = s @ v[:, kv]
        att = att.reshape(T, H * hd)
        x = x + att @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g, u = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return x @ head.T


def greedy(cfg, w, prompt, n):
    """The n ids that follow prompt (list of ids) by argmax, each from a full forward of everything so far."""
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(np.argmax(llama_forward(cfg, w, np.array(ids))[-1])))
    return ids[len(prompt):]


def rel_err(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def compare_transformers(hf_dir, tokens, ref, tol, exact=None):
    """LlamaForCausalLM's logits (float32) vs ringgpt's ref; exact: the numpy float64 forward's, to show HF's own error."""
    try:
        import torch
        from transformers import LlamaForCausalLM
    except Exception:
        print("transformers/torch not installed: skipping the LlamaForCausalLM comparison")
        return True
    model = LlamaForCausalLM.from_pretrained(hf_dir, torch_dtype=torch.float32).eval()
    with torch.no_grad():
        out = model(torch.tensor(tokens, dtype=torch.long)).logits.double().numpy()
    err = rel_err(out, ref)
    rope = getattr(model.config, "rope_parameters", None) or getattr(model.config, "rope_scaling", None)
    print(f"LlamaForCausalLM (RoPE {rope}) vs ringgpt: relative error {err:.2e} (tolerance {tol:g})")
    if exact is not None:   # at long positions HF's float32 angles are the larger error: this says which side has it
        print(f"LlamaForCausalLM vs the numpy float64 forward: relative error {rel_err(out, exact):.2e}")
    return err < tol


# Tolerance on the relative logit error by the exported weights' dtype: the numpy forward runs on the rounded
# weights, ringgpt's logits on its fp32 ones, so the error is the rounding (bf16: 8-bit mantissa, ~1e-3 measured).
TOLERANCE = {"F32": 1e-4, "F64": 1e-4, "F16": 5e-3, "BF16": 1e-2}


def weights_dtype(cfg):
    """The exported weights' dtype as config.json states it (ringgpt export writes torch_dtype)."""
    return {"bfloat16": "BF16", "float16": "F16", "float64": "F64"}.get(cfg.get("torch_dtype"), "F32")


def parse_args(argv):
    import argparse
    ap = argparse.ArgumentParser(
        prog="check_hf_export.py",
        description="Independent check of `ringgpt export --to hf`: an own safetensors parser and a float64 numpy "
                    "Llama forward (and LlamaForCausalLM where transformers is installed) against ringgpt's logits.",
        epilog="example: ringgpt eval run --data D --batches 1 --dump-logits dump && ringgpt export run --to hf hf && "
               "check_hf_export.py hf dump")
    ap.add_argument("hf_dir", nargs="?", help="the exported Hugging Face directory")
    ap.add_argument("dump_dir", nargs="?", help="a `ringgpt eval --dump-logits` directory of the same checkpoint")
    ap.add_argument("--tol", type=float, help="relative logit error allowed (default by the weights' dtype: "
                    + ", ".join(f"{k} {v:g}" for k, v in TOLERANCE.items()) + ")")
    ap.add_argument("--parse", nargs="+", metavar="FILE", help="only check .safetensors files against the format")
    ap.add_argument("--greedy", type=int, metavar="N", help="print the N greedy ids after --prompt-ids (comma-separated)")
    ap.add_argument("--prompt-ids", help="the prompt of --greedy as token ids, 1,2,3 (its start token included)")
    a = ap.parse_args(argv[1:])
    if a.greedy is not None and not (a.hf_dir and a.prompt_ids and not a.dump_dir):
        ap.error("--greedy N takes HF_DIR and --prompt-ids 1,2,3")
    if not a.parse and a.greedy is None and not (a.hf_dir and a.dump_dir):
        ap.error("give HF_DIR and DUMP_DIR, --parse FILE... or HF_DIR --greedy N --prompt-ids 1,2,3")
    return a


def main(argv):
    global np
    a = parse_args(argv)
    if np is None:   # runs the script again in a python3 of this machine that has numpy, or says how to install it
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import pyfind
        np = pyfind.require("numpy", "check_hf_export.py")
    if a.parse:
        for f in a.parse:
            tensors, meta = parse_safetensors(f, strict_writer=True)
            try:
                from safetensors.numpy import load_file
                theirs = load_file(f)
                assert set(theirs) == set(tensors), f"{f}: the safetensors package sees other tensor names"
                assert all(np.array_equal(theirs[k].view(np.uint8), tensors[k].view(np.uint8)) for k in tensors
                           if theirs[k].dtype == tensors[k].dtype)
                who = "own parser and the safetensors package"
            except ImportError:
                who = "own parser (safetensors package not installed)"
            print(f"ok {f}: {len(tensors)} tensors, metadata {meta} ({who})")
        return 0
    cfg, w = load_hf(a.hf_dir)
    if a.greedy is not None:
        print(",".join(map(str, greedy(cfg, w, [int(i) for i in a.prompt_ids.split(",")], a.greedy))))
        return 0
    dtype = weights_dtype(cfg)
    tol = a.tol if a.tol is not None else TOLERANCE[dtype]
    tokens = np.load(os.path.join(a.dump_dir, "tokens.npy"))
    ref = np.load(os.path.join(a.dump_dir, "logits.npy")).astype(np.float64)
    worst, exact = 0.0, []
    for b in range(tokens.shape[0]):
        exact.append(llama_forward(cfg, w, tokens[b]))
        worst = max(worst, rel_err(exact[-1], ref[b]))
    ok = worst < tol
    print(f"numpy Llama forward vs ringgpt eval --dump-logits: relative error {worst:.2e} over {tokens.shape} tokens "
          f"({dtype} weights, tolerance {tol:g}) {'ok' if ok else 'FAIL'}")
    ok = compare_transformers(a.hf_dir, tokens, ref, tol, np.stack(exact)) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
