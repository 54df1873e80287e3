#!/usr/bin/env python3
"""bench/smollm2_ref.py — transformers' side of bench/smollm2.sh: the loss on ringgpt's eval tokens, and greedy ids.

  smollm2_ref.py loss HF_DIR DUMP_DIR      transformers' mean loss on DUMP_DIR's tokens/targets (from
                                           `ringgpt eval --dump-logits`) and ringgpt's from its logits, the
                                           largest |logit difference| and the argmax agreement
  smollm2_ref.py greedy HF_DIR N IDS       N tokens of HF greedy decoding after the prefill IDS (comma separated),
                                           printed as comma-separated ids
Needs torch and transformers (CPU).
"""
import os
import sys

import numpy as np


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def loss(hf_dir, dump):
    import torch
    from transformers import LlamaForCausalLM
    tokens = np.load(os.path.join(dump, "tokens.npy"))     # (B, T) int
    targets = np.load(os.path.join(dump, "targets.npy"))   # (B, T) int
    ours = np.load(os.path.join(dump, "logits.npy")).astype(np.float64)   # (B, T, V)
    model = LlamaForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    with torch.no_grad():
        theirs = model(torch.tensor(tokens, dtype=torch.long)).logits.double().numpy()   # (B, T, V)
    pick = lambda lg: -np.take_along_axis(log_softmax(lg), targets[..., None].astype(np.int64), axis=-1).mean()
    agree = (theirs.argmax(-1) == ours.argmax(-1)).sum()
    print(f"transformers loss {pick(theirs):.6f}  ringgpt loss {pick(ours):.6f}  "
          f"|diff| {abs(pick(theirs) - pick(ours)):.2e}  max |dlogit| {np.abs(theirs - ours).max():.2e}  "
          f"argmax equal on {agree} of {tokens.size} positions")


def greedy(hf_dir, n, ids):
    import torch
    from transformers import LlamaForCausalLM
    model = LlamaForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    prefill = torch.tensor([[int(i) for i in ids.split(",")]], dtype=torch.long)
    with torch.no_grad():
        out = model.generate(prefill, max_new_tokens=int(n), do_sample=False, attention_mask=torch.ones_like(prefill))
    print(",".join(str(int(i)) for i in out[0, prefill.shape[1]:]))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "loss":
        loss(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "greedy":
        greedy(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
