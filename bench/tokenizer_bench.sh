#!/usr/bin/env bash
# bench/tokenizer_bench.sh — the tokenizer targets: encode MB/s vs HF tokenizers on one core (same tokenizer.json, same text),
# `prepare --tokenizer` with 2 threads vs 1, and `tokenizer train` time.
# usage: bench/tokenizer_bench.sh BUILD_DIR [MB] [TRAIN_MB]   (text: Python's standard library sources and /usr/share/doc, which
# every Debian machine here has; MB for encode and prepare, default 10; TRAIN_MB for training at vocab 16384, default 0 = skip)
set -euo pipefail
BUILD=${1:?usage: tokenizer_bench.sh BUILD_DIR [MB] [TRAIN_MB]}; MB=${2:-10}; TRAIN_MB=${3:-0}
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
def best_of(fn, reps=2):   # (wall MB/s, CPU MB/s, result), best of reps
    wall = cpu = 1e30
    for r in range(reps):
        t0, c0 = time.perf_counter(), time.process_time(); out = fn()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return nbytes / 1e6 / wall, nbytes / 1e6 / cpu, out
whole, whole_cpu, ids = best_of(lambda: tok.encode(text, add_special_tokens=False).ids)
lines = text.splitlines(keepends=True)
batch, batch_cpu, enc = best_of(lambda: tok.encode_batch(lines, add_special_tokens=False))
same = "same token count as ringgpt" if len(ids) == int(f["tokens"]) else f"{len(ids)} tokens, not ringgpt's {f['tokens']}"
print(f"HF tokenizers encode, one core: whole text {whole:.2f} MB/s wall, {whole_cpu:.2f} MB per CPU second ({same}); "
      f"encode_batch of its {len(lines)} lines {batch:.2f} MB/s wall, {batch_cpu:.2f} MB per CPU second")
ours, ours_cpu = float(f["ringgpt_warm_mbs"]), float(f["ringgpt_cpu_mbs"])
print(f"ringgpt / HF per CPU second: {ours_cpu / whole_cpu:.1f}x (whole text), {ours_cpu / batch_cpu:.1f}x (batch of lines); "
      f"wall: {ours / whole:.1f}x, {ours / batch:.1f}x")
PY
  else echo "HF tokenizers not installed (pip install tokenizers): no comparison"; fi
done
# prepare --tokenizer: one thread vs two (the same shards either way)
# (alternating, best of 3 each: other load on the machine only ever slows a run down; CPU seconds show the work)
for pattern in gpt2 llama3; do
  for rep in 1 2 3; do
    for th in 1 2; do
      rm -rf "$W/ds$th"
      /usr/bin/time -f "%e %U %S" -a -o "$W/t$th.$pattern" "$BIN" prepare --quiet --out "$W/ds$th" --tokenizer "$W/tok_$pattern.json" --threads $th \
        "$W/text.txt" > /dev/null
    done
  done
  cmp -s "$W/ds1/train_000000.rgs" "$W/ds2/train_000000.rgs" && same="identical shards" || same="SHARDS DIFFER"
  a=$(sort -n "$W/t1.$pattern" | head -1); b=$(sort -n "$W/t2.$pattern" | head -1)
  awk -v a="$a" -v b="$b" -v s="$same" -v p=$pattern 'BEGIN { split(a, x, " "); split(b, y, " ");
    printf "prepare --tokenizer (%s): 1 thread %.2f s (%.2f CPU s), 2 threads %.2f s (%.2f CPU s), best of 3: speedup %.2fx (%s)\n",
           p, x[1], x[2] + x[3], y[1], y[2] + y[3], x[1] / y[1], s }'
done
if ((TRAIN_MB > 0)); then
  text $((TRAIN_MB * 1000000)) "$W/train.txt"
  /usr/bin/time -f "  wall %e s, peak RSS %M KB" "$BIN" tokenizer train --quiet --vocab 16384 --out "$W/big.json" "$W/train.txt"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
