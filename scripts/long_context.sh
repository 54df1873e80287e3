#!/usr/bin/env bash
# scripts/long_context.sh — the long-context recipe: train at 1K on passkey + text, extend to 4K and 8K with θ scaled, passkey heatmap per stage.
#
# Stages (each one `ringgpt train`, the next starting from the last one's weights with --init-from):
#   1. from scratch at T = 1K on a mix of passkey documents (loss on the key's 5 digits only) of lengths
#      from ~T/7 to T and text records, packed into windows that start at document starts (--doc-mask);
#   2. T = 4K, RoPE θ scaled, passkey documents of 4K mixed with the same text;
#   3. T = 8K, θ scaled again.
# After every stage `ringgpt passkey` measures greedy exact match by length × depth up to 2× the trained
# length, and scripts/plot_passkey.py draws the stages side by side in one heatmap.
#
# θ rule (NTK-aware scaling): when the context grows by s = T_new / T_old, θ_new = θ_old · s^(d/(d−2)), d the
# head dim. RoPE pair i turns at θ^(−2i/d) per token: this rule stretches the slowest pair's wavelength by s,
# so positions up to T_new land on angles that pair saw during training, while the fastest pairs (i ≈ 0, the
# local word order) are unchanged; a short fine-tune then only has to adapt the middle frequencies.
#
# The text: by default a copy text (blocks of random letters, each followed by its copy, as in
# scripts/demo.sh); it trains the look-back-and-copy circuit (an induction head) that retrieving the key
# uses, on every token, while the passkey documents add the key's 5 supervised tokens each. TEXT=FILE mixes
# a real text file instead (cut into documents of the stage's length).
#
# Environment (defaults = the measured 2-core run in README.md, which did NOT learn the task: see there): OUT (out/long_context), STEPS1/2/3,
# BATCH1/2/3, LR, THREADS, TRIALS (per cell), DEPTHS, TEXT_FRAC (text records per passkey record), TEXT,
# DIM/LAYERS/HEADS/KV_HEADS, SP (ring size for the 4K/8K stages and their evaluation; mpiexec -np SP).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_deps
build_ringgpt -DRINGGPT_CUDA=${RINGGPT_CUDA:-OFF} >/dev/null
bin=build/ringgpt
out=${OUT:-out/long_context}
steps=(${STEPS1:-2500} ${STEPS2:-200} ${STEPS3:-100})
batch=(${BATCH1:-8} ${BATCH2:-2} ${BATCH3:-1})
lens=(${LENS:-1024 4096 8192})   # the three stages' training lengths
lr=${LR:-3e-3}
threads=${THREADS:-1}
trials=${TRIALS:-5}
depths=${DEPTHS:-0:1:0.25}
text_frac=${TEXT_FRAC:-0.1}   # text records per passkey record
# Passkey lengths per stage: from short (the needle near the question: easy to find early on) to T.
pk_lengths() {  # pk_lengths STAGE T
  local T=$2 list="" f
  for f in $( (($1 == 1)) && echo "0.14 0.19 0.25 0.375 0.5 0.75 1" || echo "0.25 0.5 0.75 1"); do
    list+=$(awk -v t="$T" -v f="$f" 'BEGIN { n = int(t * f); print (n < 144 ? 144 : n) }'),
  done
  echo "${list%,}"
}
sp=${SP:-1}
model=(--model tiny --dim "${DIM:-64}" --layers "${LAYERS:-2}" --heads "${HEADS:-4}" --kv-heads "${KV_HEADS:-2}")
hd=$(( ${DIM:-64} / ${HEADS:-4} ))
theta=10000
mkdir -p "$out"
rm -rf "$out"/stage* "$out"/data* "$out"/*.json "$out"/*.csv "$out"/*.png "$out"/timings.txt   # only what a run writes
launch() { if ((sp > 1)); then mpiexec --allow-run-as-root --oversubscribe -np "$sp" -x OMP_NUM_THREADS=1 "$bin" "$@" --sp "$sp"; else "$bin" "$@"; fi; }
t_all=$(date +%s)
log_time() { echo "$1 $(( $(date +%s) - $2 )) s" | tee -a "$out/timings.txt"; }

# Passkey records from the generator (loss on the key's digits) at several lengths up to T — short ones
# make the needle easy to find early on, long ones teach the trained length — interleaved with text
# records; `prepare` packs them into windows that start at document starts, and --doc-mask keeps each
# document's attention to itself.
make_data() {  # make_data T DOCS DIR PASSKEY_LENGTHS
  local T=$1 docs=$2 dir=$3
  "$bin" passkey --write-jsonl "$out/passkey_$T.jsonl" --docs "$docs" --lengths "$4" --seed 1 >/dev/null
  "$PY" - "$out/passkey_$T.jsonl" "$T" "$text_frac" "${TEXT:-}" > "$out/mix_$T.jsonl" <<'PYEOF'
import json, random, sys
pk_path, T, frac, text_path = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rng = random.Random(T)
text = open(text_path, encoding="ascii", errors="replace").read() if text_path else None
def text_record():
    if text is not None:  # a window of the text, loss on every token
        n = rng.randrange(256, T)
        at = rng.randrange(0, max(1, len(text) - n))
        return {"prompt": "", "completion": text[at:at + n]}
    # copy text: random letters, then the same letters (the loss on the copy: predictable only by looking back)
    b = "".join(rng.choice("abcdefghijklmnop") for _ in range(rng.choice((32, 64, 128, 256))))
    return {"prompt": b, "completion": b}
for line in open(pk_path):
    print(line.rstrip("\n"))
    if rng.random() < frac:
        print(json.dumps(text_record()))
PYEOF
  "$bin" prepare --out "$dir" --val-fraction 0.02 --block-tokens 65536 --quiet "$out/mix_$T.jsonl" | head -1
}

evaluate() {  # evaluate STAGE LENGTHS
  local t0; t0=$(date +%s)
  launch passkey "$out/stage$1" --lengths "$2" --depths "$depths" --trials "$trials" --label "stage $1: T=${lens[$1-1]}" \
    --out "$out/passkey_stage$1" --threads "$threads" | grep -v "^passkey: length"
  log_time "passkey eval after stage $1 ($2, $trials trials x depths $depths):" "$t0"
}

train_stage() {  # train_stage N [extra train flags]
  local n=$1; shift
  local T=${lens[$n-1]} t0; t0=$(date +%s)
  make_data "$T" $(( steps[n-1] * batch[n-1] * 2 + 200 )) "$out/data$n" "$(pk_lengths "$n" "$T")"
  echo "== stage $n: T=$T, theta $theta, ${steps[$n-1]} steps of ${batch[$n-1]} sequences"
  launch train --data "$out/data$n" "${model[@]}" --rope-theta "$theta" --seq-len "$T" --batch "${batch[$n-1]}" \
    --steps "${steps[$n-1]}" --lr "$lr" --min-lr "$(awk -v l="$lr" 'BEGIN { print l / 10 }')" --warmup 20 --eval-every 0 \
    --doc-mask --log-every 50 --ckpt-every 0 --threads "$threads" --out "$out/stage$n" "$@" | grep --line-buffered -E "^step|^done"
  log_time "stage $n training (T=$T, ${steps[$n-1]} steps):" "$t0"
}

scale_theta() {  # θ · s^(d/(d−2))
  theta=$(awk -v t="$theta" -v s="$1" -v d="$hd" 'BEGIN { printf "%.0f", t * exp(log(s) * d / (d - 2)) }')
}

sp_save=$sp
sp=1   # 1K fits one rank
train_stage 1
evaluate 1 "$(( lens[0] / 2 )),${lens[0]},$(( 2 * lens[0] ))"
sp=$sp_save
scale_theta "$(( lens[1] / lens[0] ))"
train_stage 2 --init-from "$out/stage1"
evaluate 2 "${lens[0]},${lens[1]},$(( 2 * lens[1] ))"
scale_theta "$(( lens[2] / lens[1] ))"
train_stage 3 --init-from "$out/stage2"
evaluate 3 "${lens[0]},${lens[1]},${lens[2]},$(( 2 * lens[2] ))"
"$PY" scripts/plot_passkey.py "$out"/passkey_stage{1,2,3}.json -o "$out/passkey_stages.png" \
  --title "passkey exact match (%) after each stage (tiny model, $trials trials per cell)"
log_time "total:" "$t_all"
echo "heatmap: $out/passkey_stages.png; tables: $out/passkey_stage{1,2,3}.csv; timings: $out/timings.txt"
