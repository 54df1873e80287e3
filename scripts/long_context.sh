#!/usr/bin/env bash
# scripts/long_context.sh — the long-context recipe: the stages of recipes/long_context/ (train, then passkey by length × depth), one heatmap.
#
# A stage N is a few files in the recipe directory, each read with the command's --config:
#   stageN.data.json        `ringgpt prepare`: the stage's training documents, and its "mix" file (stageN.mix.json:
#                           passkey with long keys, edge depths, distractors, needles in training prose; text records);
#   stageN.train.json       `ringgpt train`: the model, length, RoPE base, batch, steps (or --stop-loss), learning rate;
#   stageN.passkey*.json    `ringgpt passkey`: the evaluation grids (lengths up to 2x the trained one), one per
#                           file: the generator's filler, held-out prose, distractors.
#   ruler.json              `ringgpt ruler` (optional): RULER's tasks on the last stage's model (OUT/ruler/results.json,
#                           OUT/ruler.png).
# The text the recipe reads outside the repository (Debian's licence texts, the evaluation's haystack) is
# listed with the SHA-256 of every file in OUT/corpora.sha256; the binary, its BLAS kernels, CPU and threads in OUT/machine.txt
# (the build is -march=native: the figures reproduce on the same CPU model, thread count and BLAS kernels).
# Stage 1 trains from scratch; every later stage starts from the previous one's weights (--init-from).
# docs/long_context.md says what each setting does, why, and what was measured with it.
#
# Environment (settings of the run, not of the recipe):
#   SEED          the draw: documents, text windows, data order (default 1; 7 is the evaluation's own)
#   OUT           the run directory (default out/long_context; stages, datasets, results, timings.txt)
#   THREADS       CPU threads (default: all cores)
#   SP            ranks of the ring for the stages after the first and their evaluations (mpiexec -np SP)
#   START         N > 1: keep OUT's stages before N (trained by this recipe and SEED) and run from stage N
#   RECIPE        the recipe directory (default recipes/long_context)
#   RINGGPT_CUDA  ON: build-recipe/ (the recipe's own build directory) has the CUDA backend (default OFF)
#   RINGGPT_BIN   a built binary: no install and no build (the tests)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
if [[ -n ${RINGGPT_BIN:-} ]]; then
  bin=$RINGGPT_BIN
  find_python || { echo "no python3 with numpy and matplotlib for the heatmap: apt-get install python3-matplotlib, or run without RINGGPT_BIN" >&2; exit 1; }
else
  ensure_deps
  build_ringgpt build-recipe -DRINGGPT_CUDA="${RINGGPT_CUDA:-OFF}" >/dev/null   # its own build: build/ keeps its options
  bin=build-recipe/ringgpt
fi
recipe=${RECIPE:-recipes/long_context}
out=${OUT:-out/long_context}
seed=${SEED:-1}
threads=${THREADS:-$(nproc)}
sp=${SP:-1}
start=${START:-1}
die() { echo "long_context.sh: $*" >&2; exit 2; }
[[ $seed =~ ^(0|[1-9][0-9]*)$ ]] || die "SEED must be a non-negative integer without leading zeros (got $seed)"
((seed != 7)) || die "SEED=7 is the passkey evaluation's seed: the model would train on the keys it is tested on; pick another"
[[ $threads =~ ^[1-9][0-9]*$ ]] || die "THREADS must be a positive integer (got $threads)"
[[ $sp =~ ^[1-9][0-9]*$ ]] || die "SP must be a positive integer (got $sp)"
stages=$(compgen -G "$recipe/stage*.train.json" | wc -l || true)
((stages > 0)) || die "$recipe has no stage1.train.json; give RECIPE=a recipe directory"
for n in $(seq 1 "$stages"); do
  for f in data train; do [[ -f $recipe/stage$n.$f.json ]] || die "$recipe/stage$n.$f.json is missing"; done
  compgen -G "$recipe/stage$n.passkey*.json" > /dev/null || die "$recipe/stage$n.passkey.json is missing"
done
[[ $start =~ ^[1-9][0-9]*$ ]] && ((start <= stages)) || die "START must be 1..$stages (got $start)"
((start == 1)) || [[ -f $out/stage$((start - 1))/LATEST ]] ||
  die "START=$start needs $out/stage$((start - 1)) from an earlier run of this recipe; run from START=1"
mkdir -p "$out"
for n in $(seq "$start" "$stages"); do rm -rf "$out/stage$n" "$out/data$n" "$out/passkey_stage$n".*; done   # only what a run writes
rm -rf "$out/passkey_stages.png" "$out/corpora.sha256" "$out/ruler" "$out/ruler.png"
# Every file of every haystack the configs name (paths outside the repository: the checksums make the run checkable).
"$PY" - "$recipe"/stage*.json $(compgen -G "$recipe/ruler.json" || true) <<'PYEOF' | sort -u | while read -r f; do sha256sum "$f"; done > "$out/corpora.sha256"
import json, os, sys
for cfg in sys.argv[1:]:
    c = json.load(open(cfg))
    if "mix" in c: c.update(json.load(open(c["mix"])))   # a data config's mix file (a path from the repository's root)
    for key in ("haystack", "held-out"):
        path = c.get(key)
        if not path: continue
        for root, _, files in os.walk(path) if os.path.isdir(path) else [(os.path.dirname(path), None, [os.path.basename(path)])]:
            for f in files:
                p = os.path.join(root, f)
                if not os.path.islink(p) and not f.startswith("."): print(p)
PYEOF
{ "$bin" --version; grep -m3 -E '^(cpu family|model|model name)[[:space:]]*:' /proc/cpuinfo || true   # x86's lines of CPU 0
  echo "threads: $threads, ranks after stage 1: $sp, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"; } > "$out/machine.txt"
[[ ! -f $out/timings.txt ]] || sed -i -E "/^(stage|passkey after stage) ([$start-9]|[1-9][0-9])[ :]|^ruler after|^total/d" "$out/timings.txt"
launch() {  # launch RANKS ARGS...: one process, or a ring of RANKS under mpiexec
  local ranks=$1; shift
  if ((ranks > 1)); then mpiexec --allow-run-as-root --oversubscribe -np "$ranks" -x OMP_NUM_THREADS=1 "$bin" "$@" --sp "$ranks"
  else "$bin" "$@"; fi
}
log_time() { echo "$1 $(($(date +%s) - $2)) s" | tee -a "$out/timings.txt"; }
t_all=$(date +%s)
for n in $(seq "$start" "$stages"); do
  ranks=$((n == 1 ? 1 : sp))   # the first stage's length fits one rank
  init=(); ((n == 1)) || init=(--init-from "$out/stage$((n - 1))")
  t0=$(date +%s)
  "$bin" prepare --config "$recipe/stage$n.data.json" --seed "$seed" --out "$out/data$n" | head -1
  echo "== stage $n: $(tr -d '\n ' < "$recipe/stage$n.train.json")"
  launch "$ranks" train --config "$recipe/stage$n.train.json" --data "$out/data$n" --seed $((1336 + seed)) --threads "$threads" \
    --out "$out/stage$n" "${init[@]}" | grep --line-buffered -E "^step|^stop-loss|^done"
  log_time "stage $n training:" "$t0"
  t0=$(date +%s)
  for grid in "$recipe"/stage$n.passkey*.json; do   # stageN.passkey.json -> passkey_stageN, stageN.passkey.X.json -> passkey_stageN.X
    name=$(basename "$grid" .json); name=passkey_stage$n${name#stage$n.passkey}
    launch "$ranks" passkey "$out/stage$n" --config "$grid" --out "$out/$name" --threads "$threads" | grep -v "^passkey: length"
  done
  log_time "passkey after stage $n:" "$t0"
done
if [[ -f $recipe/ruler.json ]]; then   # RULER's tasks on the final model, over the last stage's ranks
  t0=$(date +%s)
  launch "$ranks" ruler "$out/stage$stages" --config "$recipe/ruler.json" --out "$out/ruler" --threads "$threads" | grep -v "^ruler: length"
  "$PY" scripts/plot_ruler.py "$out/ruler/results.json" -o "$out/ruler.png" --title "RULER after stage $stages ($recipe, SEED=$seed)"
  log_time "ruler after stage $stages:" "$t0"
fi
results=()
for n in $(seq 1 "$stages"); do results+=("$out/passkey_stage$n.json" $(compgen -G "$out/passkey_stage$n.*.json" || true)); done
"$PY" scripts/plot_passkey.py "${results[@]}" -o "$out/passkey_stages.png" \
  --title "passkey exact match (%) after each stage ($recipe, SEED=$seed)"
log_time "total:" "$t_all"
echo "heatmap: $out/passkey_stages.png; tables: $out/passkey_stage*.csv$([[ -f $recipe/ruler.json ]] && echo "; RULER: $out/ruler.png, $out/ruler/results.json"); timings: $out/timings.txt"
