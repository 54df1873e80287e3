#!/usr/bin/env python3
# tests/model/rope_table.py — ringgpt's RoPE table (inverse frequencies and cos/sin scale) for each scaling type = HF's formulas.
"""Usage: rope_table.py TEST_ROPE_TABLE_BINARY

For every case, the C table (model/rope.h rope_frequencies, through test_rope_table) is compared with a numpy
transcription of transformers' modeling_rope_utils (scripts/check_hf_export.py rope_parameters) to 1e-12 relative,
and, where torch and transformers import, with transformers' own ROPE_INIT_FUNCTIONS (float32: 1e-6). Exit 0 when
all agree, 1 otherwise, 77 (skip) without numpy."""
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import numpy as np
except ImportError:   # another python3 of this machine that has numpy runs it (scripts/pyfind.py), else skip
    sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
    import pyfind
    other = None if os.environ.get("RINGGPT_PYFIND_REEXEC") else pyfind.python_with("numpy")
    if not other:
        print("SKIP: no python3 with numpy (apt-get install python3-numpy)")
        sys.exit(77)
    os.environ["RINGGPT_PYFIND_REEXEC"] = "1"
    os.execv(other, [other] + sys.argv)

spec = importlib.util.spec_from_file_location("chk", os.path.join(HERE, "..", "..", "scripts", "check_hf_export.py"))
chk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(chk)
chk.np = np

# (theta, head dim, sequence length, --rope-scaling text, HF's dict, max_position_embeddings)
CASES = [
    (10000, 64, 512, "none", {}, 2048),
    (10000, 64, 512, "linear:4", {"rope_type": "linear", "factor": 4.0}, 2048),
    (10000, 64, 100, "dynamic:4:128", {"rope_type": "dynamic", "factor": 4.0}, 128),     # within: unscaled
    (10000, 64, 1000, "dynamic:4:128", {"rope_type": "dynamic", "factor": 4.0}, 128),    # beyond: the base grows
    (500000, 128, 1, "yarn:8:4096", {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096}, 32768),
    (1000000, 64, 1, "yarn:4:2048:beta_fast=16,beta_slow=2,truncate=0",
     {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048, "beta_fast": 16, "beta_slow": 2,
      "truncate": False}, 8192),
    (10000, 64, 1, "yarn:16:64:attention_factor=0.8",
     {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 64, "attention_factor": 0.8}, 1024),
    (10000, 64, 1, "yarn:16:64:mscale=1,mscale_all_dim=0.5",
     {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 64, "mscale": 1.0, "mscale_all_dim": 0.5}, 1024),
    (500000, 64, 1, "llama3:32:8192", {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192}, 131072),   # Llama 3.2
    (500000, 128, 1, "llama3:8:8192", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192}, 131072),   # Llama 3.1
    (500000, 64, 1, "llama3:32:64:low_freq_factor=2,high_freq_factor=8",
     {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 2.0, "high_freq_factor": 8.0,
      "original_max_position_embeddings": 64}, 131072),
]


def c_table(binary, theta, hd, n, text):
    out = subprocess.run([binary, str(theta), str(hd), str(n), text], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"test_rope_table {text}: exit {out.returncode}: {out.stderr.strip()}")
    lines = out.stdout.split("\n")
    return float(lines[1].split()[1]), np.array([float(v) for v in lines[2:] if v])


def hf_functions():
    """transformers' (config, seq_len) -> (inv_freq, attention_factor), or None without torch + transformers."""
    try:
        import torch  # noqa: F401 (transformers' rope functions need it)
        from transformers import LlamaConfig
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    except Exception:
        return None

    def table(theta, hd, n, params, max_pos):
        rp = dict(params, rope_theta=float(theta)) if params else {"rope_type": "default", "rope_theta": float(theta)}
        cfg = LlamaConfig(hidden_size=2 * hd, num_attention_heads=2, num_key_value_heads=2, head_dim=hd,
                          max_position_embeddings=max_pos, rope_parameters=rp)
        kind = rp["rope_type"]
        if kind == "default":
            return 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)), 1.0
        inv, att = ROPE_INIT_FUNCTIONS[kind](cfg, "cpu", seq_len=n)
        return inv.double().numpy(), float(att)
    return table


def rel(a, b):
    return float(np.max(np.abs(a - b) / np.abs(b)))


def main():
    binary = sys.argv[1]
    hf = hf_functions()
    failed = 0
    for theta, hd, n, text, params, max_pos in CASES:
        scale, inv = c_table(binary, theta, hd, n, text)
        cfg = {"num_attention_heads": 2, "head_dim": hd, "rope_theta": theta, "max_position_embeddings": max_pos}
        if params:
            cfg["rope_scaling"] = params
        ref_inv, ref_scale = chk.rope_parameters(cfg, n)
        err = max(rel(inv, ref_inv), abs(scale - ref_scale) / ref_scale)
        ok = err < 1e-12 and len(inv) == hd // 2
        line = f"{'ok  ' if ok else 'FAIL'} {text} (theta {theta}, hd {hd}, length {n}): numpy transcription rel {err:.1e}"
        if hf:
            hf_inv, hf_scale = hf(theta, hd, n, params, max_pos)
            herr = max(rel(inv, hf_inv), abs(scale - hf_scale) / hf_scale)
            ok_hf = herr < 1e-6
            ok = ok and ok_hf
            line += f", transformers rel {herr:.1e}{'' if ok_hf else ' FAIL'}"
        if text != "none" and params.get("rope_type") != "linear":   # the table must differ from the unscaled one
            plain, _ = chk.rope_parameters({k: v for k, v in cfg.items() if k != "rope_scaling"}, n)
            scaled = n > max_pos or params["rope_type"] != "dynamic"
            if scaled and np.allclose(plain, inv, rtol=1e-9):
                ok, line = False, line + " (FAIL: the table is the unscaled one)"
        print(line)
        failed += not ok
    if not hf:
        print("note: torch/transformers not importable here: compared with the numpy transcription only")
    print(f"{len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
