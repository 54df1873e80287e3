#!/usr/bin/env bash
# bench/prepare_corpus.sh — prepare of one corpus as plain text files and as JSONL text records in .jsonl.zst: tokens identical, throughput of each (byte tokenizer and BPE); what --shuffle-docs costs.
# usage: bench/prepare_corpus.sh BUILD [MAX_MB] [RUNS]
# The corpus is this machine's text: the Debian licences, /usr/share/doc (.gz files decompressed) and Python's
# standard library, files that are UTF-8 without NUL bytes, up to MAX_MB (default 48) in name order. Each
# prepare runs RUNS times (default 3), plain and zstd in turn; the best time of each is reported.
set -euo pipefail
BUILD=$(readlink -f "${1:?usage: bench/prepare_corpus.sh BUILD [MAX_MB] [RUNS]}")
MAX_MB=${2:-48} RUNS=${3:-3}
BIN=$BUILD/ringgpt
THREADS=$(nproc)
W=$(mktemp -d "${TMPDIR:-/tmp}/ringgpt_prepare_corpus_XXXXXX")
trap 'rm -rf "$W"' EXIT
command -v zstd > /dev/null || { echo "needs the zstd command (Debian: zstd)" >&2; exit 2; }

python3 - "$W" "$MAX_MB" << 'EOF'
import gzip, json, os, sys, glob
out, cap = sys.argv[1], int(sys.argv[2]) << 20
roots = ["/usr/share/common-licenses", "/usr/share/doc", sys.base_prefix + "/lib/python%d.%d" % sys.version_info[:2]]
os.makedirs(out + "/plain")
total = n = 0
with open(out + "/corpus.jsonl", "w", encoding="utf-8") as jl:
    for root in roots:
        for path in sorted(p for p in glob.glob(root + "/**", recursive=True) if os.path.isfile(p) and not os.path.islink(p)):
            if "site-packages" in path or "dist-packages" in path: continue
            try:
                raw = open(path, "rb").read()
                if raw[:2] == b"\x1f\x8b": raw = gzip.decompress(raw)
                text = raw.decode("utf-8")
            except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
                continue
            if not text or "\0" in text: continue
            n += 1
            open(f"{out}/plain/{n:06d}.txt", "w", encoding="utf-8", newline="").write(text)
            jl.write(json.dumps({"text": text, "source": path}, ensure_ascii=False) + "\n")
            total += len(raw)
            if total >= cap: break
        if total >= cap: break
print(f"corpus: {n} files, {total / 1e6:.1f} MB of text")
EOF
zstd -q -3 -T0 "$W/corpus.jsonl" -o "$W/corpus.jsonl.zst" && rm "$W/corpus.jsonl"
echo "plain files $(du -sm "$W/plain" | cut -f1) MB on disk; corpus.jsonl.zst $(( $(stat -c %s "$W/corpus.jsonl.zst") / 1000000 )) MB"
head -c 8000000 "$W/corpus.jsonl.zst" | zstd -dc 2> /dev/null | python3 -c "
import json, sys
with open('$W/tok_text.txt', 'w') as f:
    for line in sys.stdin:
        try: f.write(json.loads(line)['text'])
        except ValueError: break" || true
"$BIN" tokenizer train --quiet --vocab 8192 --threads "$THREADS" --out "$W/tok.json" "$W/tok_text.txt" > /dev/null

# run_once OUT FLAGS...: one prepare into OUT; prints its wall and CPU seconds (a shared machine's wall time is
# noisy: the CPU time says what the work costs).
run_once() {
    local out=$1; shift
    rm -rf "$out"
    python3 -c "
import resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f'{time.perf_counter() - t:.3f} {r.ru_utime + r.ru_stime:.3f}')" "$BIN" prepare --quiet --threads "$THREADS" --out "$out" "$@"
}
same_shards() { local f; for f in "$1"/*.rgs; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done; }
TEXT_MB=$(du -sb "$W/plain" | python3 -c "import sys; print(int(sys.stdin.read().split()[0]) / 1e6)")
# byte, bpe: plain files and .jsonl.zst in turn; shuffle: the byte tokenizer's plain files without and with --shuffle-docs.
for tok in byte bpe shuffle; do
    flags=(); [ $tok = bpe ] && flags=(--tokenizer "$W/tok.json")
    second=("$W/corpus.jsonl.zst"); [ $tok = shuffle ] && second=(--shuffle-docs "$W/plain")
    times=""
    for _ in $(seq "$RUNS"); do
        times="$times $(run_once "$W/ds_plain" "${flags[@]}" "$W/plain") $(run_once "$W/ds_zst" "${flags[@]}" "${second[@]}")"
    done
    if [ $tok = shuffle ]; then
        python3 -c "
t = [float(x) for x in '$times'.split()]
wp, cp, ws, cs = (min(t[i::4]) for i in range(4))
print(f'--shuffle-docs (byte tokenizer, plain files): {ws:.2f} s ({cs:.2f} CPU s) against {wp:.2f} s ({cp:.2f} CPU s) in file order')"
        continue
    fi
    same_shards "$W/ds_plain" "$W/ds_zst" && same=identical || same=DIFFERENT
    tokens=$("$BIN" inspect "$W/ds_plain" | sed -nE 's/^  (train|val) .* documents, ([0-9]+) tokens.*/\2/p' | awk '{s += $1} END {print s}')
    python3 -c "
t = [float(x) for x in '$times'.split()]
wp, cp, wz, cz = (min(t[i::4]) for i in range(4))   # best of the runs: plain wall, plain CPU, zstd wall, zstd CPU
mb = $TEXT_MB
print(f'$tok: $tokens tokens, shards $same; plain files {wp:.2f} s ({mb / wp:.1f} MB/s of text, {cp:.2f} CPU s), '
      f'.jsonl.zst {wz:.2f} s ({mb / wz:.1f} MB/s, {cz:.2f} CPU s): zstd/plain throughput {wp / wz:.2f}x (CPU {cp / cz:.2f}x)')"
done
