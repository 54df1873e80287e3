#!/usr/bin/env bash
# tests/cli/plan.sh — `ringgpt plan`: its memory figures are the memory plan's (train prints the same), the step time is the
# sum of its parts and grows with T, more devices hold a longer context, the smallest hiding block really hides (the plan at
# that block shows <= 5 % exposed, half of it more), a run's config.json is read; bad layouts and devices exit 2, one line.
# Usage: plan.sh RINGGPT MPIEXEC
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
json() { "$BIN" plan "$@" --json; }
field() { python3 -c 'import json, sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }

# Memory: plan's figure for --recompute none equals train's printed plan minus its measured runtime part.
make_text "$W/t.txt" 400
"$BIN" train --data "$W/t.txt" --model tiny --seq-len 256 --batch 2 --steps 1 --threads 1 --out "$W/run" > "$W/train.log" 2>&1 ||
  { cat "$W/train.log"; bad "train ran"; }
peak=$(sed -nE 's/^  predicted peak +([0-9.]+) MiB/\1/p' "$W/train.log")
runtime=$(sed -nE 's/^  runtime before the model +([0-9.]+) MiB.*/\1/p' "$W/train.log")
mem=$(json --model tiny --vocab 260 --seq-len 256 --batch 2 --device cpu | field mem_bytes)
check "memory per rank = train's memory plan without its runtime ($peak - $runtime MiB)" \
  python3 -c "import sys; sys.exit(abs($mem / 1048576 - ($peak - $runtime)) > 0.15)"

# The step: its parts add up; a longer T takes longer; the ring's transfer on a slow link is partly exposed.
p=$(json --model small --seq-len 8192 --sp 2 --device cpu --link-gbps 0.05)
check "step = matmul + attention + exposed ring wait + all-reduce" python3 -c "
import json, sys; p = json.loads(sys.argv[1])
sys.exit(abs(p['step_s'] - p['matmul_s'] - p['attn_compute_s'] - p['ring_wait_s'] - p['allreduce_s']) > 1e-6 * p['step_s'])" "$p"
check "on a 50 Mbit/s link part of the transfer is exposed" python3 -c "
import json, sys; p = json.loads(sys.argv[1]); sys.exit(not (0 < p['ring_wait_s'] < p['ring_transfer_s']))" "$p"
a=$(json --model small --seq-len 4096 --sp 2 --device cpu | field step_s)
b=$(json --model small --seq-len 8192 --sp 2 --device cpu | field step_s)
check "T=8192 takes longer than T=4096 ($b s > $a s)" python3 -c "import sys; sys.exit(not $b > $a)"

# The smallest hiding block: at it the plan hides >= 95 %, at half of it less.
for dev in cpu h100-sxm; do
  min=$(json --model small --seq-len 4096 --sp 4 --device $dev | field min_hiding_tokens)
  at=$(json --model small --seq-len $((min * 4)) --sp 4 --device $dev)
  half=$(json --model small --seq-len $((min / 4 * 2 * 4)) --sp 4 --device $dev)
  check "$dev: at $min tokens per rank <= 5 % of the transfer is exposed, at half of it more" python3 -c "
import json, sys; a, h = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.exit(not (a['ring_wait_s'] <= 0.0501 * a['ring_transfer_s'] and h['ring_wait_s'] > 0.05 * h['ring_transfer_s']))" "$at" "$half"
done

# The report: every part is printed; the longest context grows with the device count.
"$BIN" plan --model 125m --seq-len 65536 --sp 8 --ranks 16 --device a100-sxm --recompute full > "$W/plan.txt" 2>&1 || bad "plan ran"
for what in "memory per rank" "step time" "gradient all-reduce" "smallest block that hides the transfer" \
  "longest context that fits" "source: NVIDIA A100" "2x8 ranks"; do
  check "the report shows '$what'" grep -q "$what" "$W/plan.txt"
done
check "more devices hold a longer context (full recompute column)" python3 -c "
import re, sys
rows = [l.split() for l in open(sys.argv[1]) if re.match(r'^\s+\d+\s+\d+\s+\d+\s+\d+', l)]
full = [int(r[3]) for r in rows]; sys.exit(not (len(full) >= 5 and all(b > a for a, b in zip(full, full[1:]))))" "$W/plan.txt"

# A run's config.json gives the model and layout.
echo '{"model": "tiny", "seq-len": 512, "sp": 2, "batch": 3, "data": "x.txt", "steps": 5}' > "$W/config.json"
x=$(json --config "$W/config.json" --device cpu --vocab 260 | field mem_bytes)
y=$(json --model tiny --seq-len 512 --sp 2 --batch 3 --device cpu --vocab 260 | field mem_bytes)
check "--config reads the model and layout of a run's config.json" test "$x" = "$y"

# Bad input: exit 2 and one line naming the problem.
expect_fail 2 "--ranks 6 is not divisible by --sp 4" "$BIN" plan --ranks 6 --sp 4
expect_fail 2 "unknown --device 'tpu'" "$BIN" plan --device tpu
expect_fail 2 "--link-gbps must be positive (got 0)" "$BIN" plan --sp 2 --link-gbps 0
expect_fail 2 "--matmul-tflops must be positive" "$BIN" plan --matmul-tflops -1
expect_fail 2 "does not fit on h100-sxm" "$BIN" plan --model 125m --seq-len 4194304 --device h100-sxm
expect_fail 2 "does not fit on cpu" "$BIN" plan --model small --seq-len 2000000 --device cpu --mem-gib 1
expect_fail 2 "is not divisible by 2·sp = 8" "$BIN" plan --seq-len 1001 --sp 4
expect_fail 2 "--sp must be at least 1" "$BIN" plan --sp 0
expect_fail 2 "unknown --model" "$BIN" plan --model huge
expect_fail 2 "--busy-share must be in (0, 1] (got 1.5)" "$BIN" plan --sp 2 --busy-share 1.5
expect_fail 2 "--host-gbps must not be negative (got -1)" "$BIN" plan --sp 2 --host-gbps -1

# The share of the link while computing: slower transfers on a link the blocks do not fully hide, the same
# step where nothing travels (sp 1).
a=$(json --model small --seq-len 8192 --sp 2 --device cpu --link-gbps 0.2 --busy-share 1 | field ring_wait_s)
b=$(json --model small --seq-len 8192 --sp 2 --device cpu --link-gbps 0.2 --busy-share 0.5 | field ring_wait_s)
check "--busy-share 0.5 exposes more ring wait than 1 on a 0.2 Gbit/s link ($b > $a s)" awk -v a="$a" -v b="$b" 'BEGIN { exit !(b > a) }'
a=$(json --model small --seq-len 8192 --device cpu --busy-share 1 | field step_s)
b=$(json --model small --seq-len 8192 --device cpu --busy-share 0.5 | field step_s)
check "--busy-share leaves a one-rank step alone" test "$a" = "$b"

# The host's network stack: the cpu preset's core moves the ring's pieces in the blocks' time (bytes / its rate on a 1
# Gbit/s link: 4 layers x 6 pieces of 4096 x 4 x 64 fp32 = 100.7 MB, 0.223 s at 3.616 Gbit/s); free with --host-gbps 0
# and on a GPU preset.
a=$(json --model small --seq-len 8192 --sp 2 --device cpu --link-gbps 1 | field ring_stack_s)
check "the cpu preset's network stack costs the blocks 0.223 s a step (got $a)" awk -v a="$a" 'BEGIN { exit !(a > 0.222 && a < 0.224) }'
a=$(json --model small --seq-len 8192 --sp 2 --device cpu --link-gbps 1 --host-gbps 0 | field ring_stack_s)
check "--host-gbps 0 makes the network stack free (got $a)" awk -v a="$a" 'BEGIN { exit !(a == 0) }'
a=$(json --model small --seq-len 8192 --sp 2 --device h100-sxm | field ring_stack_s)
check "a GPU preset's network stack is off the compute (got $a)" awk -v a="$a" 'BEGIN { exit !(a == 0) }'
finish
