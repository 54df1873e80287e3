#!/usr/bin/env python3
# bench/gpu_attention_torch.py — PyTorch scaled_dot_product_attention fwd+bwd on the shapes of bench/gpu_attention_bench.c.
# Same output format and FLOP count (causal forward = 2·T²·hd·H, backward = 2.5× forward), bf16,
# layout (B=1, H, T, hd), H·hd = 2048, every SDPA backend PyTorch has here (flash, cuDNN, efficient), one
# line each: impl=torch-flash, impl=torch-cudnn, impl=torch-efficient (a backend that cannot run a shape
# prints status=unsupported).
# usage: gpu_attention_torch.py [T ...]
import sys

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:
    print("SKIP: PyTorch is not installed (gpu_attention_torch)")
    sys.exit(0)


def timed(fn, reps):
    best = float("inf")
    for rep in range(reps + 1):  # the first run warms up and is not counted
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if rep > 0:
            best = min(best, start.elapsed_time(end) / 1e3)
    return best


BACKENDS = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION", "efficient": "EFFICIENT_ATTENTION"}


def bench(T, hd, reps, name):
    H = 2048 // hd
    q, k, v = (torch.randn(1, H, T, hd, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    dout = torch.randn(1, H, T, hd, device="cuda", dtype=torch.bfloat16)
    state = {}

    def fwd():
        state["o"] = F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def bwd():
        q.grad = k.grad = v.grad = None
        state["o"].backward(dout, retain_graph=True)

    try:
        with sdpa_kernel(getattr(SDPBackend, BACKENDS[name])):
            t_fwd = timed(fwd, reps)
            fwd()
            t_bwd = timed(bwd, reps)
    except RuntimeError as e:   # the backend does not support this shape or GPU
        print(f"attention impl=torch-{name} T={T} hd={hd} H={H} status=unsupported ({str(e).splitlines()[0][:80]})")
        return
    finally:
        state.clear()
        torch.cuda.empty_cache()
    f = 2.0 * T * T * hd * H
    print(f"attention impl=torch-{name} T={T} hd={hd} H={H} fwd_ms={t_fwd * 1e3:.3f} bwd_ms={t_bwd * 1e3:.3f} "
          f"fwd_tflops={f / t_fwd / 1e12:.1f} bwd_tflops={2.5 * f / t_bwd / 1e12:.1f} "
          f"fwdbwd_tflops={3.5 * f / (t_fwd + t_bwd) / 1e12:.1f}", flush=True)


def main():
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device visible to PyTorch (gpu_attention_torch)")
        return
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, cuda {torch.version.cuda}")
    lens = [int(a) for a in sys.argv[1:]] or [4096, 16384, 65536]
    for T in lens:
        for hd in (64, 128):
            for name in BACKENDS:
                if hasattr(SDPBackend, BACKENDS[name]):
                    bench(T, hd, 2 if T >= 65536 else 5, name)


if __name__ == "__main__":
    main()
