#!/usr/bin/env python3
"""tests/cli/corruption_sweep.py — every file of a checkpoint and of a dataset (manifest included): single-byte flips at
60 evenly spaced offsets, truncations and appended bytes. Each must be refused (exit 2, one `ringgpt:` line), never
accepted and never a crash. Also: an export onto a full disk leaves no model.safetensors under its final name.

usage: corruption_sweep.py RINGGPT_BINARY
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

OFFSETS = 60


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", **kw)
    return p.returncode, p.stderr


def damages(size):
    """(name, action) pairs: flips at evenly spaced offsets, truncations, appended bytes."""
    out = []
    for k in range(OFFSETS):
        off = k * size // OFFSETS if size > OFFSETS else k % max(size, 1)
        out.append((f"flip byte {off}", ("flip", off)))
    for cut in sorted({0, 1, size // 3, size // 2, size - 1}):
        out.append((f"truncate to {cut}", ("cut", cut)))
    for extra in (b"x", b"\n", b"\0" * 16, b" "):
        out.append((f"append {extra!r}", ("add", extra)))
    return out


def damage(path, pristine, action):
    data = bytearray(pristine)
    kind, arg = action
    if kind == "flip":
        data[arg] ^= 0xFF
    elif kind == "cut":
        data = data[:arg]
    else:
        data += arg
    with open(path, "wb") as f:
        f.write(data)


def sweep(label, root, files, check):
    """Damages each file in turn (restoring it afterwards) and runs check; returns (tried, undetected, crashed)."""
    tried = undetected = crashed = 0
    for rel in files:
        path = os.path.join(root, rel)
        pristine = open(path, "rb").read()
        seen = set()
        for name, action in damages(len(pristine)):
            if action in seen:
                continue
            seen.add(action)
            damage(path, pristine, action)
            rc, err = check()
            tried += 1
            lines = [ln for ln in err.splitlines() if ln.strip()]
            if rc == 0:
                undetected += 1
                print(f"UNDETECTED {label} {rel}: {name}")
            elif rc < 0 or rc >= 128 or not lines or not lines[-1].startswith("ringgpt: "):
                crashed += 1
                print(f"CRASH {label} {rel}: {name}: rc {rc}: {err.strip()[-300:]}")
            elif rc != 2:
                crashed += 1
                print(f"WRONG EXIT {label} {rel}: {name}: rc {rc} (bad input exits 2): {lines[-1]}")
        with open(path, "wb") as f:
            f.write(pristine)
    print(f"{label}: {tried} damaged copies, {undetected} undetected, {crashed} crashes or wrong exits")
    return tried, undetected, crashed


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    w = tempfile.mkdtemp(prefix="ringgpt_sweep_")
    try:
        text = os.path.join(w, "text.txt")
        with open(text, "w") as f:
            for i in range(400):
                f.write(f"Sweep line {i}: the quick brown fox jumps over the lazy dog {i * 7 % 13} times.\n")
        train = [binary, "train", "--data", text, "--model", "tiny", "--dim", "32", "--ffn-dim", "64", "--seq-len", "16",
                 "--batch", "1", "--steps", "1", "--threads", "1", "--out", os.path.join(w, "run")]
        rc, err = run(train)
        assert rc == 0, err
        step = os.path.join(w, "run", "step_00000001")
        ckpt_files = sorted(os.listdir(step))
        evaluate = [binary, "eval", step, "--data", text, "--seq-len", "16", "--batch", "1", "--batches", "1", "--threads", "1"]
        assert run(evaluate)[0] == 0
        docs = os.path.join(w, "docs")
        os.makedirs(docs)
        for i in range(12):
            with open(os.path.join(docs, f"d{i:02d}.txt"), "w") as f:
                f.write(f"document {i} " * 40)
        ds = os.path.join(w, "ds")
        rc, err = run([binary, "prepare", "--out", ds, "--shard-tokens", "2000", "--block-tokens", "500",
                       "--val-fraction", "0.2", "--quiet", docs])
        assert rc == 0, err
        ds_files = sorted(os.listdir(ds))
        verify = [binary, "inspect", "--verify", ds]
        assert run(verify)[0] == 0
        total = [0, 0, 0]
        for r in (sweep("checkpoint", step, ckpt_files, lambda: run(evaluate)),
                  sweep("dataset", ds, ds_files, lambda: run(verify))):
            total = [a + b for a, b in zip(total, r)]
        print(f"checkpoint files {ckpt_files}, dataset files {ds_files}")

        # A full disk (a file-size limit: writes fail with EFBIG) during export: no file under its final name.
        hf = os.path.join(w, "hf")

        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            import resource
            resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))

        rc, err = run([binary, "export", step, "--to", "hf", hf], preexec_fn=limit)
        left = sorted(os.listdir(hf)) if os.path.isdir(hf) else []
        full_ok = rc == 1 and "model.safetensors" not in left and "config.json" not in left and not any(
            n.endswith(".tmp") for n in left)
        print(f"{'ok  ' if full_ok else 'FAIL'} export to a full disk: exit {rc}, left {left}: {err.strip()}")
        passed = total[1] == 0 and total[2] == 0 and full_ok
        print(f"total: {total[0]} damaged copies, {total[1]} undetected, {total[2]} crashes or wrong exits")
        print(f"{int(passed)} passed, {int(not passed)} failed")
        sys.exit(0 if passed else 1)
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    main()
