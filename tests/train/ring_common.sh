# tests/train/ring_common.sh — shared by the train shell tests: mpirun flags, test data, metrics.jsonl reading, refused flags.
# Open MPI needs --allow-run-as-root as root and --oversubscribe for more ranks than cores; one
# OpenMP thread per rank keeps oversubscribed ranks from fighting over the cores.
mpirun_np() { local np=$1; shift; "$MPIEXEC" --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -np "$np" "$@"; }

# gpu_workdir PROBE WHAT: SKIP (exit 77, one line) where PROBE --probe finds no CUDA device; else W, a scratch directory
# removed on exit.
gpu_workdir() {
  "$1" --probe || { echo "SKIP: no CUDA device ($2)"; exit 77; }
  W=$(mktemp -d)
  trap 'rm -rf "$W"' EXIT
}

# A copy task as text: blocks of 16 random letters from a 16-letter alphabet, each followed by its copy.
# Deterministic (awk's srand with a fixed seed).
make_copy_text() {
  awk -v n="$2" 'BEGIN { srand(5); a = "abcdefghijklmnop";
    for (i = 0; i < n; i++) { b = ""; for (j = 0; j < 16; j++) b = b substr(a, int(rand() * 16) + 1, 1);
      printf "%s%s", b, b } }' > "$1"
}

# Prints "step loss" (or "step val_loss" with key val_loss) for every line of a metrics.jsonl that has it.
metric_column() {
  sed -nE "s/.*\"step\": ([0-9]+),.*\"$2\": ([-0-9.e]+).*/\1 \2/p" "$1"
}

# refuses_each OUT FLAGS_SET...: `$BIN train "${FLAGS[@]}" FLAGS_SET` exits 2 with one line naming the set's first flag.
refuses_each() {
  local out=$1 set rc; shift
  for set in "$@"; do
    "$BIN" train "${FLAGS[@]}" $set --out "$out" > "$out.log" 2>&1
    rc=$?
    check "$set: exit 2 with one line naming the flag (got $rc: $(head -1 "$out.log"))" \
      test "$rc" = 2 -a "$(wc -l < "$out.log")" = 1 -a -n "$(grep -e "${set%% *}" "$out.log")"
  done
}
