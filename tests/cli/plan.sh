#!/usr/bin/env bash
# tests/cli/plan.sh — `ringgpt plan`: its memory figures are the memory plan's (train prints the same), the step time is the
# sum of its parts and grows with T, more devices hold a longer context, the smallest hiding block really hides (the plan at
# that block shows <= 5 % exposed, half of it more), a run's config.json is read; nodes: the hops between them priced on
# the inter-node link, a ring kept in its node where it fits, a warning where it straddles nodes it need not; every zero
# figure says why; bad layouts, nodes and devices exit 2, one line. Shard levels: the torchtitan and Ring Attention
# configurations fit with a step time and MFU, --shard auto takes the least level that fits, a level that does not fit
# names the one that would, a layout no level fits says what is missing; presets keep their tied head.
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
for s in optim grads params; do
  q=$(json --model small --seq-len 8192 --ranks 4 --sp 2 --device cpu --shard $s)
  check "--shard $s: step = matmul + attention + ring wait + all-reduce + exposed shard wait + its network stack" python3 -c "
import json, sys; p = json.loads(sys.argv[1])
sys.exit(p['shard'] != sys.argv[2] or not 0 < p['shard_wait_s'] <= p['shard_transfer_s'] or abs(p['step_s'] - p['matmul_s']
         - p['attn_compute_s'] - p['ring_wait_s'] - p['allreduce_s'] - p['shard_wait_s'] - p['shard_stack_s']) > 1e-6 * p['step_s'])" "$q" $s
done
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
echo '{"model": "tiny", "seq-len": 512, "sp": 2, "data": "x.txt", "shard": "params"}' > "$W/config_shard.json"
check "--config reads a run's --shard" test "$(json --config "$W/config_shard.json" --device cpu | field shard)" = params

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
expect_fail 2 "unknown --shard 'zero3'; use none, optim, grads, params or auto" "$BIN" plan --shard zero3

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
# Nodes. One ring of 64 on 8-GPU nodes: 8 of its hops cross nodes, the ring goes at the 400 Gbit/s NIC's pace and the step
# is slower than on one 64-GPU NVLink node; a ring of 8 on 8-GPU nodes stays in its node (only the all-reduce crosses).
slow=$(json --model small --seq-len 1048576 --ranks 64 --sp 64 --device h100-sxm)
fast=$(json --model small --seq-len 1048576 --ranks 64 --sp 64 --device h100-sxm --gpus-per-node 64)
check "sp 64 on 8-GPU nodes: 8 hops between nodes at 400 Gbit/s, a step slower than all on NVLink" python3 -c "
import json, sys; s, f = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.exit(not (s['nodes'] == 8 and s['ring_nodes'] == 8 and s['ring_cross_hops'] == 8 and s['ring_bytes_per_s'] == 400e9 / 8
              and s['hop_node_s'] > s['hop_s'] and f['ring_cross_hops'] == 0 and f['nodes'] == 1
              and s['ring_wait_s'] > f['ring_wait_s'] and s['step_s'] > f['step_s']))" "$slow" "$fast"
p=$(json --model small --seq-len 65536 --ranks 64 --sp 8 --device h100-sxm)
check "sp 8 on 8-GPU nodes: every ring in its node, the all-reduce across the 8 nodes" python3 -c "
import json, sys; p = json.loads(sys.argv[1])
sys.exit(not (p['nodes'] == 8 and p['ring_nodes'] == 1 and p['ring_cross_hops'] == 0 and not p['ring_spans_needlessly']
              and p['ring_bytes_per_s'] == p['link_bytes_per_s'] and 0 < p['allreduce_node_s'] < p['allreduce_s']))" "$p"
"$BIN" plan --model small --seq-len 1048576 --ranks 64 --sp 64 --device h100-sxm > "$W/nodes.txt" 2> "$W/nodes.err" || bad "plan ran"
check "the hop table names the 8 hops between nodes (7->8 first) and marks them the ring's pace" \
  grep -qE '^  between nodes +8 hops .*\(7->8, 15->16, .*<- the ring.s pace' "$W/nodes.txt"
check "a ring that must span nodes (64 on nodes of 8) is not warned about" test ! -s "$W/nodes.err"
"$BIN" plan --model small --seq-len 65536 --ranks 64 --sp 8 --device h100-sxm > "$W/in.txt" 2>&1 || bad "plan ran"
check "sp 8 on 8-GPU nodes: no hop between nodes, no warning" test -z "$(grep -E 'between nodes +[0-9]+ hop|warning' "$W/in.txt")"
# A ring of 3 on nodes of 8: rings 2, 5, ... straddle two nodes though one would hold them.
"$BIN" plan --model small --seq-len 6144 --ranks 48 --sp 3 --device h100-sxm > /dev/null 2> "$W/warn.err" || bad "plan ran"
check "rings of 3 on 8-GPU nodes are warned about (ring 2, ranks 6..8, 2 nodes where 1 would do)" \
  grep -q "^ringgpt: warning: ring 2 (ranks 6..8) spans 2 nodes where 1 would hold it" "$W/warn.err"
check "the JSON marks it" test "$(json --model small --seq-len 6144 --ranks 48 --sp 3 2> /dev/null | field ring_spans_needlessly)" = True
# The two-host layout of bench/plan_nodes.sh: 2 ranks, one per node, joined at 200 Mbit/s: both hops cross, at that rate.
"$BIN" plan --device cpu --model small --seq-len 4096 --ranks 2 --sp 2 --gpus-per-node 1 --node-link-gbps 0.2 > "$W/two.txt" 2>&1 ||
  bad "plan ran"
check "two hosts: the hop table names both hops between the nodes at 0.2 Gbit/s" \
  grep -qE '^  between nodes +2 hops +link +0.2 Gbit/s .*\(0->1, 1->0\)' "$W/two.txt"
a=$(json --device cpu --model small --seq-len 4096 --sp 2 --gpus-per-node 1 --node-link-gbps 0.2)
b=$(json --device cpu --model small --seq-len 4096 --sp 2 --gpus-per-node 2 --node-link-gbps 0.2)
check "two hosts at 0.2 Gbit/s: a hop costs more and more of the ring is exposed than with both ranks in one node" python3 -c "
import json, sys; a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.exit(not (a['hop_node_s'] > a['hop_s'] and a['ring_cross_hops'] == 2 and b['ring_cross_hops'] == 0
              and a['ring_wait_s'] > b['ring_wait_s'] and a['allreduce_node_s'] == a['allreduce_s'] > b['allreduce_s']))" "$a" "$b"
expect_fail 2 "--gpus-per-node must be at least 1 (got 0)" "$BIN" plan --gpus-per-node 0
expect_fail 2 "--gpus-per-node must be at least 1 (got -8)" "$BIN" plan --gpus-per-node -8
expect_fail 2 "--ranks 12 does not fill nodes of 8 (--gpus-per-node)" "$BIN" plan --ranks 12 --sp 4
expect_fail 2 "--node-link-gbps must be positive (got -1)" "$BIN" plan --sp 2 --node-link-gbps -1

# Every zero figure says why on its line: the ring's buffers with one rank or under --recompute full, the ring's transfers
# and the all-reduce with one rank, a device count that holds no context.
zero_lines_explained() {   # zero_lines_explained REPORT: each line with a 0.0… figure or a 0 table cell has a reason
  python3 -c "
import re, sys
bad = [l for l in open(sys.argv[1]) if (re.search(r'(?<![\d.])0\.0+(?!\d)', l) or re.match(r'^ +\d+( +\d+){3} ', l) and
       ' 0 ' in l) and not re.search(r'none|\(0: |lie in the working set|0 % hidden: ', l)]
print(''.join(bad), end=''); sys.exit(bool(bad))" "$1"
}
"$BIN" plan --model small --seq-len 8192 --recompute full > "$W/z1.txt" 2>&1 || bad "plan ran"
"$BIN" plan --model small --seq-len 8192 --sp 2 --recompute full > "$W/z2.txt" 2>&1 || bad "plan ran"
full=$(json --model tiny --seq-len 2 --recompute full --device cpu | field mem_bytes)
none=$(json --model tiny --seq-len 2 --recompute none --device cpu | field mem_bytes)
"$BIN" plan --model tiny --seq-len 2 --recompute full --device cpu --devices 1,2 \
  --mem-gib "$(python3 -c "print(($full + $none) / 2 / 2**30)")" > "$W/z3.txt" 2>&1 || bad "plan ran"
for z in z1 z2 z3; do check "$z: every zero says why" zero_lines_explained "$W/$z.txt"; done
check "--sp 1: ring 0.0 (none, no ring), no transfers, no all-reduce, each with its reason" test \
  "$(grep -cE 'ring 0.0: none, --sp 1 has no ring|ring transfers .*\(none: --sp 1|all-reduce .*\(none: one rank' "$W/z1.txt")" = 5
check "--sp 2 --recompute full: ring 0.0 because its packets lie in the working set" \
  grep -q "recompute full .*ring 0.0: its packets lie in the working set" "$W/z2.txt"
check "a device count that holds no context says why" grep -qE '^ +2 +0 +0 .*\(0: even T = 4 needs' "$W/z3.txt"

# Shard levels. torchtitan's Llama-3-8B at 1M tokens on 32 H100s (FSDP + context parallel) fits at --shard params, with
# a step time and MFU; the Ring Attention paper's first row (Llama-2-7B, 256K on 8 A100s, FSDP) too.
"$BIN" plan --model llama3-8b --seq-len 1048576 --sp 32 --shard params --recompute full --device h100-sxm > "$W/tt.txt" 2>&1 ||
  { cat "$W/tt.txt"; bad "the torchtitan configuration fits"; }
check "torchtitan's configuration: --shard params is this plan and fits" grep -qE '^  --shard params .*<- this plan$' "$W/tt.txt"
check "torchtitan's configuration: a step time and MFU" grep -qE '^  step +[0-9.]+ s .*MFU [0-9.]+ %' "$W/tt.txt"
check "torchtitan's configuration: the recommendation is params" grep -q '^recommended: --shard params, the least sharding that fits' "$W/tt.txt"
p=$(json --model llama3-8b --seq-len 1048576 --sp 32 --recompute full --device h100-sxm)
check "torchtitan's configuration: --shard auto takes params (no lesser level fits on 80 GB)" python3 -c "
import json, sys; p = json.loads(sys.argv[1])
sys.exit(not (p['shard'] == p['shard_least'] == 'params' and p['mem_bytes'] <= 80e9 and 0 < p['mfu'] < 1 and p['step_s'] > 0
              and p['allreduce_s'] == 0 and p['shard_transfer_s'] > 0))" "$p"
p=$(json --model llama2-7b --seq-len 262144 --sp 8 --recompute full --device a100-sxm)
check "the Ring Attention paper's 7B at 256K on 8 A100s: fits at params, with step time and MFU" python3 -c "
import json, sys; p = json.loads(sys.argv[1])
sys.exit(not (p['shard'] == 'params' and p['mem_bytes'] <= 80e9 and 0 < p['mfu'] < 1 and p['step_s'] > 0))" "$p"
expect_fail 2 "GiB per rank (--shard grads over 8 ranks, --recompute full, --sp 8, --batch 1) and the device has 74.5 GiB; would fit: --shard params," \
  "$BIN" plan --model llama2-7b --seq-len 262144 --sp 8 --recompute full --device a100-sxm --shard grads
# Its 4M row on 32 A100s needs more than sharding: the activations --recompute full keeps, in host memory.
expect_fail 2 "--seq-len 4194304 on 32 ranks of a100-sxm (--sp 32) needs activation offload to host memory, which ringgpt does not have" \
  "$BIN" plan --model llama2-7b --seq-len 4194304 --sp 32 --recompute full --device a100-sxm
# On one rank the 8B's model state alone (135 GiB at --shard params) is what is missing: more ranks hold it.
expect_fail 2 "the model state alone is 135.3 GiB per rank even at --shard params over 1 rank, the device has 74.5 GiB; would fit: --shard params --recompute full with --ranks 4 (dp 4)" \
  "$BIN" plan --model llama3-8b --seq-len 8192
expect_fail 2 "(--shard params over 8 ranks, --recompute none, --sp 1, --batch 1) and the device has 74.5 GiB; would fit: --recompute mlp, --recompute full, --ranks 16 (dp 16)," \
  "$BIN" plan --model llama3-8b --seq-len 8192 --ranks 8
# --shard auto is the least level that fits: each lesser level is refused, the chosen one runs (H100s; these layouts
# take none, optim, grads and params).
for run in llama3.2-1b:mlp:32:1048576 llama3.2-3b:mlp:32:524288 llama3.2-3b:full:16:1048576 llama3.2-3b:mlp:32:1048576 \
  llama3-8b:full:32:1048576; do
  IFS=: read -r m r sp T <<< "$run"
  least=$(json --model $m --seq-len $T --sp $sp --recompute $r --device h100-sxm 2> /dev/null | field shard)
  ok_levels=""
  for s in none optim grads params; do
    "$BIN" plan --model $m --seq-len $T --sp $sp --recompute $r --device h100-sxm --shard $s --json > /dev/null 2>&1 &&
      ok_levels="$ok_levels $s"
  done
  echo "$least" >> "$W/least"
  check "$m at T=$T on $sp H100s (--recompute $r): auto took '$least', the first of the levels that fit:$ok_levels" \
    test -n "$least" -a "$(echo $ok_levels | cut -d' ' -f1)" = "$least"
done
check "the layouts above take every level" test "$(sort -u "$W/least" | tr '\n' ' ')" = "grads none optim params "
check "llama3.2-1b at 1M on 32 H100s: none is enough" test "$(json --model llama3.2-1b --seq-len 1048576 --sp 32 --recompute mlp | field shard)" = none
# The model state per rank: at params on 8 ranks about 1/8 of none's plus the gathered units.
a=$(json --model llama3-8b --seq-len 65536 --sp 8 --recompute full --shard params --device h100-sxm --mem-gib 1000)
b=$(json --model llama3-8b --seq-len 65536 --sp 8 --recompute full --shard none --device h100-sxm --mem-gib 1000)
check "llama3-8b on 8 ranks: params' model state = none's / 8 + the units' buffers (4 x the 2.1 GB LM head and norm, slices)" python3 -c "
import json, sys; a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
pad = -(-(128256 * 4096 + 4096) // 8) * 4; span = 8 * pad   # the longest unit padded to 8 equal slices
sys.exit(not (abs(a['model_state_bytes'] - b['model_state_bytes'] / 8 - 4 * span - 4 * pad) < 1e-3 * a['model_state_bytes']
              and a['gathered_bytes'] == 4 * span + 2 * pad and b['gathered_bytes'] == 0))" "$a" "$b"
# Presets: released shapes tied as their configs are (llama3.2-1b: 1.24B parameters); --tie-embeddings=false unties.
"$BIN" plan --model llama3.2-1b --seq-len 8192 > "$W/p1.txt" 2>&1 || bad "plan ran"
check "llama3.2-1b: tied head, vocab 128256, 1235.81M parameters" grep -q "vocab 128256, tied head, 1235.81M parameters" "$W/p1.txt"
"$BIN" plan --model llama3.2-1b --tie-embeddings=false --seq-len 8192 > "$W/p2.txt" 2>&1 || bad "plan ran"
check "--tie-embeddings=false unties it (+262.7M)" grep -q "untied head, 1498.48M parameters" "$W/p2.txt"
finish
