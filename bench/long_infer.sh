#!/usr/bin/env bash
# bench/long_infer.sh — inference at lengths that need the ring: passkey at 64K on sp = 1 vs sp = 4 (same answers?), and
# sample continuing a 200K-token prompt over 4 ranks (time, memory per rank). Prints what it took.
# Usage: bench/long_infer.sh CKPT [PASSKEY_LENGTH] [PROMPT_TOKENS] [BUILD_DIR]   (defaults: 64K, 200000, build)
# CKPT: any byte-level checkpoint, e.g. out/long_context/stage3 from scripts/long_context.sh.
set -euo pipefail
CKPT=$1 LEN=${2:-64K} PROMPT=${3:-200000} BUILD=${4:-build}
BIN=$BUILD/ringgpt
[ -x "$BIN" ] || { echo "long_infer.sh: $BIN not found; build first" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mpi() { local np=$1; shift; mpiexec --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np "$np" "$@"; }
echo "long_infer: $CKPT on $(nproc) cores ($(sed -nE 's/^model name\s*:\s*//p' /proc/cpuinfo | head -1)), load $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== passkey at $LEN, depths 0, 0.5, 1, 1 trial each: sp = 1 (one rank) vs sp = 4 (4 ranks)"
"$BIN" passkey "$CKPT" --lengths "$LEN" --depths 0,0.5,1 --trials 1 --threads 1 \
  --out "$W/sp1" | grep -vE "^passkey: length"
mpi 4 "$BIN" passkey "$CKPT" --lengths "$LEN" \
  --depths 0,0.5,1 --trials 1 --threads 1 --sp 4 --out "$W/sp4" | grep -vE "^passkey: length"
a1=$(grep -E '"(keys|answers)"' "$W/sp1.json") a4=$(grep -E '"(keys|answers)"' "$W/sp4.json")
echo "$a1" | tr -d '\t'
if [[ $a1 == "$a4" ]]; then echo "RESULT: the decoded answers at $LEN are identical on sp = 1 and sp = 4"
else echo "RESULT: the answers differ"; echo "$a4" | tr -d '\t'; exit 1; fi

echo "== sample: continue a $PROMPT-token prompt (copy text) over 4 ranks, 32 tokens, greedy"
awk -v n="$PROMPT" 'BEGIN { srand(3); a = "abcdefghijklmnop"; s = "";
  while (length(s) < n) { b = ""; for (j = 0; j < 64; j++) b = b substr(a, int(rand() * 16) + 1, 1); s = s b b " " }
  printf "%s", substr(s, 1, n - 1) }' > "$W/prompt.txt"   # the BOS token makes it PROMPT tokens
mpi 4 "$BIN" sample "$CKPT" --prompt-file "$W/prompt.txt" --tokens 32 --temperature 0 --sp 4 > "$W/continued.txt"
echo "continuation: $(cat "$W/continued.txt")"
