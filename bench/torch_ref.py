#!/usr/bin/env python3
# bench/torch_ref.py — the project's PyTorch reference of ringgpt's model, timed as bench/gpu_side_by_side.sh times ringgpt.
# The same Llama-style model as model/gpt.c (RMSNorm, GQA, RoPE on pairs (2i, 2i+1), SwiGLU, untied head,
# byte vocabulary 260), trained the way a 100-line PyTorch script would: bf16 autocast, SDPA attention,
# fused AdamW, eager or torch.compile, optionally with per-layer activation checkpointing.
# Prints one line per run:
#   train impl=torch-eager model=125m T=4096 B=8 tokens_per_s=... ms_per_step=... peak_mem_mib=... mfu=...
# usage: torch_ref.py --model 125m --seq-len 4096 --batch 8 [--steps 12] [--compile] [--checkpoint]
import argparse
import math
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint
except ImportError:
    print("SKIP: PyTorch is not installed (torch_ref)")
    sys.exit(0)

# model/config.c's presets (the vocab comes from the byte-level data, as in ringgpt train).
PRESETS = {
    "tiny": dict(n_layer=2, dim=64, n_head=4, n_kv_head=2, ffn_dim=192),
    "small": dict(n_layer=4, dim=256, n_head=4, n_kv_head=4, ffn_dim=704),
    "base": dict(n_layer=8, dim=512, n_head=8, n_kv_head=4, ffn_dim=1408),
    "125m": dict(n_layer=12, dim=768, n_head=12, n_kv_head=12, ffn_dim=2048),
}
VOCAB = 260


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):  # x (B, T, C); the statistics in fp32, as ringgpt keeps them
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope_tables(T, hd, theta, device):
    # angles of positions 0..T-1 for frequency pairs (2i, 2i+1): (T, hd/2), computed in fp64 as ringgpt does
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64, device=device) / hd)
    ang = torch.arange(T, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):  # x (B, T, nh, hd): rotate pairs (2i, 2i+1)
    x2 = x.float().unflatten(-1, (-1, 2))
    a, b = x2[..., 0], x2[..., 1]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2).type_as(x)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, H, Hkv, F_ = c["dim"], c["n_head"], c["n_kv_head"], c["ffn_dim"]
        self.H, self.Hkv, self.hd = H, Hkv, C // H
        self.attn_norm, self.mlp_norm = RMSNorm(C), RMSNorm(C)
        self.wq = nn.Linear(C, C, bias=False)
        self.wk = nn.Linear(C, Hkv * self.hd, bias=False)
        self.wv = nn.Linear(C, Hkv * self.hd, bias=False)
        self.wo = nn.Linear(C, C, bias=False)
        self.w_gate = nn.Linear(C, F_, bias=False)
        self.w_up = nn.Linear(C, F_, bias=False)
        self.w_down = nn.Linear(F_, C, bias=False)

    def forward(self, x, cos, sin):  # x (B, T, C)
        B, T, C = x.shape
        h = self.attn_norm(x)
        q = apply_rope(self.wq(h).view(B, T, self.H, self.hd), cos, sin).transpose(1, 2)     # (B, H, T, hd)
        k = apply_rope(self.wk(h).view(B, T, self.Hkv, self.hd), cos, sin).transpose(1, 2)   # (B, Hkv, T, hd)
        v = self.wv(h).view(B, T, self.Hkv, self.hd).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.Hkv != self.H)
        x = x + self.wo(o.transpose(1, 2).reshape(B, T, C))
        h = self.mlp_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class GPT(nn.Module):
    def __init__(self, c, use_checkpoint):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, c["dim"])
        self.layers = nn.ModuleList(Block(c) for _ in range(c["n_layer"]))
        self.norm = RMSNorm(c["dim"])
        self.lm_head = nn.Linear(c["dim"], VOCAB, bias=False)
        self.use_checkpoint = use_checkpoint
        for name, p in self.named_parameters():   # ringgpt's init: N(0, 0.02), residual projections / sqrt(2L)
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * c["n_layer"]) if name.endswith(("wo.weight", "w_down.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, tokens, targets, cos, sin):  # tokens, targets (B, T)
        x = self.tok(tokens)
        for layer in self.layers:
            x = checkpoint(layer, x, cos, sin, use_reentrant=False) if self.use_checkpoint else layer(x, cos, sin)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.float().reshape(-1, VOCAB), targets.reshape(-1))


def flops_per_token(c, T):
    # the count bench/gpu_side_by_side.sh uses for ringgpt: 6 · (matmul parameters) + 6 · T · C · layers
    C, L, KV = c["dim"], c["n_layer"], c["dim"] // c["n_head"] * c["n_kv_head"]
    matmul = L * (2 * C * C + 2 * KV * C + 3 * c["ffn_dim"] * C) + VOCAB * C
    return 6 * matmul + 6 * T * C * L


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="125m", choices=sorted(PRESETS))
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=12, help="timed steps (after 3 warm-up steps)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--checkpoint", action="store_true", help="per-layer activation checkpointing")
    ap.add_argument("--peak-tflops", type=float, default=989.0, help="dense bf16 peak for MFU (H100/H200 SXM: 989)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device visible to PyTorch (torch_ref)")
        return
    impl = "torch-" + ("compile" if a.compile else "eager") + ("+ckpt" if a.checkpoint else "")
    c, T, B, dev = PRESETS[a.model], a.seq_len, a.batch, "cuda"
    torch.manual_seed(1337)
    model = GPT(c, a.checkpoint).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    step_fn = torch.compile(model) if a.compile else model
    cos, sin = rope_tables(T, c["dim"] // c["n_head"], 10000.0, dev)
    data = torch.randint(97, 123, (B, T + 1), device=dev)   # random letters: the same FLOPs as any text

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_fn(data[:, :-1], data[:, 1:], cos, sin)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    try:
        for _ in range(3):   # warm-up: compilation, cuDNN/cuBLAS plans, the allocator
            step()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(a.steps):
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    except torch.cuda.OutOfMemoryError:
        print(f"train impl={impl} model={a.model} T={T} B={B} status=out_of_memory", flush=True)
        return
    ms = sorted(times)[len(times) // 2] * 1e3
    tps = B * T / (ms / 1e3)
    peak = torch.cuda.max_memory_allocated() / 2**20
    mfu = tps * flops_per_token(c, T) / (a.peak_tflops * 1e12)
    print(f"train impl={impl} model={a.model} T={T} B={B} tokens_per_s={tps:.0f} ms_per_step={ms:.1f} "
          f"peak_mem_mib={peak:.0f} mfu={mfu:.3f} torch={torch.__version__} gpu={torch.cuda.get_device_name()!r}",
          flush=True)


if __name__ == "__main__":
    main()
