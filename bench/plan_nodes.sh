#!/usr/bin/env bash
# bench/plan_nodes.sh — `ringgpt plan`'s node model against a slow link: a 2-rank ring across two hosts on this machine
# (scripts/two_hosts.sh: one rank a host, the veth link shaped by tc) and the same ring on one host, each a `small` training
# run whose measured step time and ring wait are printed beside what `ringgpt plan --device cpu` predicts for that layout
# (--gpus-per-node 1 --node-link-gbps RATE across the hosts, --gpus-per-node 2 on one). Prints figures, asserts nothing.
# Usage: bench/plan_nodes.sh [BUILD_DIR]        (default: build; needs its ringgpt, and ring_overlap to measure the link)
# Environment (all optional): RATE the tc rate between the hosts (default 200mbit), T tokens per sequence (default 4096),
#   STEPS training steps a run (default 6; the first is left out of the means), OUT where the runs go (default a new
#   /tmp/plan_nodes.* directory, removed at the end unless given).
# Needs root (network namespaces; two_hosts.sh refuses with one line and exit 77 otherwise) and Open MPI. The hosts are
# removed on every exit path by two_hosts.sh's own trap.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(readlink -f "${1:-build}")
RINGGPT=$BUILD/ringgpt LINKBENCH=$BUILD/ring_overlap
RATE=${RATE:-200mbit} T=${T:-4096} STEPS=${STEPS:-6}
[ -x "$RINGGPT" ] || { echo "plan_nodes.sh: $RINGGPT not found; build first (cmake --build $BUILD)" >&2; exit 2; }
[[ $RATE =~ ^[0-9]+(\.[0-9]+)?[kmg]bit$ ]] || { echo "plan_nodes.sh: RATE must be a tc rate such as 200mbit (got '$RATE')" >&2; exit 2; }
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; else OUT=$(mktemp -d /tmp/plan_nodes.XXXXXX); trap 'rm -rf "$OUT"' EXIT; fi
OUT=$(readlink -f "$OUT")
GBIT=$(awk -v r="$RATE" 'BEGIN { n = r + 0; u = substr(r, length(n "") + 1, 1); printf "%g", n * (u == "k" ? 1e-6 : u == "m" ? 1e-3 : 1) }')

# The text both runs read: random words, enough for the steps.
awk 'BEGIN { srand(3); for (i = 0; i < 60000; i++) { w = ""; n = 2 + int(rand() * 7);
  for (j = 0; j < n; j++) w = w sprintf("%c", 97 + int(rand() * 26)); printf "%s%s", w, (i % 12 == 11 ? ".\n" : " ") } }' > "$OUT/corpus.txt"
rm -rf "$OUT/one" "$OUT/two"
TRAIN="train --data $OUT/corpus.txt --model small --seq-len $T --batch 1 --steps $STEPS --threads 1 --sp 2 --ckpt-every -1 --val-fraction 0"

# Across the hosts: the link as sendrecv pairs measure it (when ring_overlap is built), then the training run.
cat > "$OUT/inside.sh" << EOF
#!/usr/bin/env bash
set -u
if [ -x "$LINKBENCH" ]; then "\$HOSTS_MPIEXEC" -np 2 -x OMP_NUM_THREADS=1 "$LINKBENCH" --calibrate link > "$OUT/link.log" 2>&1 || exit 1; fi
"\$HOSTS_MPIEXEC" -np 2 -x OMP_NUM_THREADS=1 "$RINGGPT" $TRAIN --out "$OUT/two" > "$OUT/two.log" 2>&1
EOF
echo "plan_nodes.sh: two hosts at $RATE, small T=$T, $STEPS steps (load $(cut -d' ' -f1 /proc/loadavg))" >&2
bash "$ROOT/scripts/two_hosts.sh" --rate "$RATE" -- bash "$OUT/inside.sh" ||
  { rc=$?; tail -5 "$OUT/two.log" "$OUT/link.log" >&2 2> /dev/null; exit $rc; }
# One host: the same ranks over shared memory.
echo "plan_nodes.sh: one host" >&2
mpiexec --allow-run-as-root --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 "$RINGGPT" $TRAIN --out "$OUT/one" \
  > "$OUT/one.log" 2>&1 || { tail -5 "$OUT/one.log" >&2; exit 1; }

link=$(sed -nE 's/.*bandwidth_gbps=([0-9.]+).*/\1/p' "$OUT/link.log" 2> /dev/null | tail -1)
python3 - "$RINGGPT" "$OUT" "$RATE" "$GBIT" "$T" "${link:-}" << 'PY'
import json, os, subprocess, sys
ringgpt, out, rate, gbit, T, link = sys.argv[1:]
def plan(*flags):   # ringgpt plan --device cpu for this layout, as a dict
    return json.loads(subprocess.run([ringgpt, "plan", "--device", "cpu", "--model", "small", "--seq-len", T, "--batch", "1",
                                      "--ranks", "2", "--sp", "2", "--json"] + list(flags),
                                     check=True, capture_output=True, text=True).stdout)
def means(run):   # mean step time, ring wait and compute (the most of any rank) over the steps after the first
    m = [json.loads(l) for l in open(os.path.join(out, run, "metrics.jsonl"))][1:]
    mean = lambda f: sum(f(x) for x in m) / len(m)
    return mean(lambda x: x["step_ms"] / 1e3), mean(lambda x: max(x["rank_ring_wait_s"])), mean(lambda x: max(x["rank_compute_s"]))
two, one = means("two"), means("one")
# This machine's compute today against the preset's: the one-host run's compute over the plan's, applied to both rates.
p = plan("--gpus-per-node", "2")
k = (p["matmul_s"] + p["attn_compute_s"] - p["ring_stack_s"]) / one[2]
speed = ["--matmul-tflops", "%.4g" % (p["matmul_flops"] * k / 1e12), "--attn-tflops", "%.4g" % (p["attn_flops"] * k / 1e12)]
across = ["--gpus-per-node", "1", "--node-link-gbps", link or gbit]
rows = [("two hosts, %s: --gpus-per-node 1 --node-link-gbps %s" % (rate, gbit), two, plan("--gpus-per-node", "1", "--node-link-gbps", gbit)),
        ("  at the link's measured rate, compute rates as measured on one host", two, plan(*across, *speed)),
        ("one host (shared memory): --gpus-per-node 2", one, p),
        ("  compute rates as measured on one host", one, plan("--gpus-per-node", "2", *speed))]
print("small, T=%s, sp=2, B=1, one thread a rank; the link between the hosts: tc %s, measured %s Gbit/s (sendrecv pairs)"
      % (T, rate, link or "-"))
print("measured: the mean of the steps after the first; plan: ringgpt plan --device cpu (compute %.2fx the preset's today)" % k)
print("%-70s %8s %8s %9s %8s %9s" % ("layout", "step", "plan", "ring wait", "plan", "transfer"))
for name, (step, wait, _), q in rows:
    print("%-70s %8.3f %8.3f %9.3f %8.3f %9.3f" % (name, step, q["step_s"], wait, q["ring_wait_s"], q["ring_transfer_s"]))
q2, q1 = rows[1][2], rows[3][2]
print("the slow hops' cost (two hosts - one host): measured %+.3f s a step, %+.3f s ring wait; planned (measured rates) "
      "%+.3f s a step, %+.3f s ring wait" % (two[0] - one[0], two[1] - one[1], q2["step_s"] - q1["step_s"], q2["ring_wait_s"] - q1["ring_wait_s"]))
PY
echo "commit $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown), $(date -u '+%F %H:%M UTC'), $(nproc) cores, \
$(sed -nE 's/^model name\s*:\s*//p' /proc/cpuinfo | head -1), load after $(cut -d' ' -f1 /proc/loadavg)"
