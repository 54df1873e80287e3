#!/usr/bin/env bash
# bench/tokenizer_bench.sh — the tokenizer targets: encode MB/s vs HF tokenizers on one core (same tokenizer.json, same text),
# `prepare --tokenizer` with 2 threads vs 1, and `tokenizer train` time.
# usage: bench/tokenizer_bench.sh BUILD_DIR [MB] [TRAIN_MB]   (text: Python's standard library sources and /usr/share/doc, which
# every Debian machine here has; MB for encode and prepare, default 20; TRAIN_MB for training at vocab 16384, default 0 = skip)
set -euo pipefail
BUILD=${1:?usage: tokenizer_bench.sh BUILD_DIR [MB] [TRAIN_MB]}; MB=${2:-20}; TRAIN_MB=${3:-0}
BIN=$BUILD/ringgpt
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
PY=""; for c in /usr/bin/python3 python3; do if "$c" -c "import tokenizers" 2>/dev/null; then PY=$c; break; fi; done
text() {   # $1 bytes of real text into $2
  find /usr/lib/python3* /usr/share/doc -type f \( -name '*.py' -o -name '*.txt' -o -name '*.md' -o -name '*.rst' -o -name '*.html' \) \
    -size -2M 2>/dev/null | sort | xargs cat 2>/dev/null | head -c "$1" > "$2" || true
}
text $((MB * 1000000)) "$W/text.txt"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); text $(($(wc -c < "$W/text.txt") / 1000000)) MB"
for pattern in gpt2 llama3; do
  "$BIN" tokenizer train --quiet --vocab 16384 --pattern $pattern --out "$W/tok_$pattern.json" "$W/text.txt" | sed 's/^/  /'
  "$BUILD/tokenizer_bench" "$W/tok_$pattern.json" "$W/text.txt" 3 | tee "$W/rg.txt" | grep -v RESULT
  if [[ -n $PY ]]; then
    RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false taskset -c 0 "$PY" - "$W/tok_$pattern.json" "$W/text.txt" "$W/rg.txt" <<'PY'
import sys, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
raw = open(sys.argv[2], "rb").read()
text = raw.decode("utf-8", errors="replace")   # HF takes str: invalid bytes become U+FFFD (the file is UTF-8 here)
nbytes = len(raw)
f = dict(zip(*[iter(open(sys.argv[3]).read().split("RESULT")[1].split())] * 2))
ours = float(f["ringgpt_warm_mbs"])
def best_of(fn):
    best = 1e30
    for r in range(3):
        t0 = time.perf_counter(); out = fn(); best = min(best, time.perf_counter() - t0)
    return nbytes / 1e6 / best, out
whole, ids = best_of(lambda: tok.encode(text, add_special_tokens=False).ids)
lines = text.splitlines(keepends=True)
batch, enc = best_of(lambda: tok.encode_batch(lines, add_special_tokens=False))
same = "same token count as ringgpt" if len(ids) == int(f["tokens"]) else f"{len(ids)} tokens, not ringgpt's {f['tokens']}"
print(f"HF tokenizers encode, one core, best of 3: whole text {whole:.2f} MB/s ({same}); "
      f"encode_batch of its {len(lines)} lines {batch:.2f} MB/s")
print(f"ringgpt / HF: {ours / whole:.1f}x (whole text), {ours / batch:.1f}x (batch of lines)")
PY
  else echo "HF tokenizers not installed (pip install tokenizers): no comparison"; fi
done
# prepare --tokenizer: one thread vs two (the same shards either way)
# (alternating, best of 3 each: other load on the machine only ever slows a run down)
for pattern in gpt2 llama3; do
  for rep in 1 2 3; do
    for th in 1 2; do
      rm -rf "$W/ds$th"
      /usr/bin/time -f "%e" -a -o "$W/t$th.$pattern" "$BIN" prepare --quiet --out "$W/ds$th" --tokenizer "$W/tok_$pattern.json" --threads $th \
        "$W/text.txt" > /dev/null
    done
  done
  cmp -s "$W/ds1/train_000000.rgs" "$W/ds2/train_000000.rgs" && same="identical shards" || same="SHARDS DIFFER"
  a=$(sort -n "$W/t1.$pattern" | head -1); b=$(sort -n "$W/t2.$pattern" | head -1)
  awk -v a="$a" -v b="$b" -v s="$same" -v p=$pattern \
    'BEGIN { printf "prepare --tokenizer (%s): 1 thread %.2f s, 2 threads %.2f s (best of 3): speedup %.2fx (%s)\n", p, a, b, a / b, s }'
done
if ((TRAIN_MB > 0)); then
  text $((TRAIN_MB * 1000000)) "$W/train.txt"
  /usr/bin/time -f "  wall %e s, peak RSS %M KB" "$BIN" tokenizer train --quiet --vocab 16384 --out "$W/big.json" "$W/train.txt"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
