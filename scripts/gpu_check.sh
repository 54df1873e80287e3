#!/usr/bin/env bash
# scripts/gpu_check.sh — one command on a GPU machine: build with CUDA, run the GPU tests and benchmarks, write a report.
# usage: scripts/gpu_check.sh [--quick] [--sanitize] [--out DIR] [--build DIR]
#   --quick     attention and training benchmarks at T=4096 only, 6 steps
#   --build DIR use an existing CUDA build (e.g. $B from ../shared/gpu/pack.sh's device-setup.sh) instead of building
#   --sanitize  also run the attention tests (sm_80 and sm90) and the op test under compute-sanitizer (memcheck)
#   --out DIR   where the report and logs go (default gpu_report/)
# Writes DIR/report.md (device, CUDA/driver versions, every test result and benchmark figure) and
# prints it. Exit status: non-zero when the build or a GPU test failed (benchmarks never fail it).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=gpu_report QUICK=0 SANITIZE=0 PREBUILT=
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --sanitize) SANITIZE=1 ;;
    --out) OUT=$2; shift ;;
    --build) PREBUILT=$2; shift ;;
    *) echo "usage: scripts/gpu_check.sh [--quick] [--sanitize] [--out DIR] [--build DIR]" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REPORT=$OUT/report.md BUILD=build-gpu status=0
JOBS=$(nproc 2>/dev/null || echo 4)
say() { echo "$@" | tee -a "$REPORT"; }
block() { echo '```' >> "$REPORT"; cat "$1" >> "$REPORT"; echo '```' >> "$REPORT"; cat "$1"; }

: > "$REPORT"
say "# ringgpt GPU check — $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
say ""
say "## Device"
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi failed"
  nvcc --version 2>&1 | tail -2 || echo "nvcc not found"; } > "$OUT/device.txt"
block "$OUT/device.txt"

say "## Build (-DRINGGPT_CUDA=ON, Release)"
if [ -n "$PREBUILT" ]; then
  BUILD=$PREBUILT
  say "build: prebuilt $BUILD"
elif cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release -DRINGGPT_CUDA=ON > "$OUT/configure.log" 2>&1 &&
   cmake --build $BUILD -j"$JOBS" > "$OUT/build.log" 2>&1; then
  say "build: ok ($(grep -c -i warning "$OUT/build.log") warning lines; log in build.log)"
else
  say "build: FAILED — see $OUT/configure.log and $OUT/build.log"; tail -30 "$OUT/build.log"; exit 1
fi
# Registers and spills of the attention kernels (sm_90): a spill here is the first thing to fix.
nvcc -std=c++20 -O3 -arch=sm_90 -I. -Xptxas -v -c attention/attention_cuda.cu -o /dev/null 2>&1 |
  grep -E "Compiling entry|registers|spill" | paste - - - | sed -E 's/ptxas info +: //g; s/Compiling entry function //' \
  > "$OUT/ptxas.txt" || true
# The Hopper kernels (--attn sm90): sm_90a only; ptxas also says when it serialises wgmma (C7513...).
nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a -I. -Xptxas -v -c attention/attention_sm90.cu -o /dev/null \
  > "$OUT/ptxas_sm90.log" 2>&1 || true
grep -E "Compiling entry|registers|spill" "$OUT/ptxas_sm90.log" | paste - - - |
  sed -E 's/ptxas info +: //g; s/Compiling entry function //' >> "$OUT/ptxas.txt"
grep "Performance Loss" "$OUT/ptxas_sm90.log" >> "$OUT/ptxas.txt" || true
say "### attention kernels: registers / spills (ptxas)"
block "$OUT/ptxas.txt"

say "## GPU tests (ctest -L gpu)"
(cd $BUILD && ctest -L gpu -V --timeout 900) > "$OUT/tests.log" 2>&1 || status=1
grep -E "rel err|step +[0-9]+:|largest per-step|FAIL|ok   |SKIP|passed, |tests passed|tests failed|Test +#" "$OUT/tests.log" \
  | sed -E 's/^[0-9]+: //' > "$OUT/tests.txt"
block "$OUT/tests.txt"
[ $status -eq 0 ] && say "GPU tests: all passed" || say "GPU tests: FAILURES (full log: tests.log)"

if [ $SANITIZE -eq 1 ]; then
  say "## compute-sanitizer (memcheck) on the attention and op tests"
  for t in test_gpu_attention test_gpu_attention_sm90 test_gpu_ops test_gpu_bf16; do
    compute-sanitizer --tool memcheck $BUILD/$t > "$OUT/sanitize_$t.log" 2>&1 && say "$t: clean" ||
      { say "$t: sanitizer reported problems"; tail -20 "$OUT/sanitize_$t.log" >> "$REPORT"; status=1; }
  done
fi

say "## CPU suite with --device cpu (other labels must stay green on a GPU machine)"
(cd $BUILD && RINGGPT_DEVICE=cpu ctest -LE gpu -j"$JOBS" --timeout 900) > "$OUT/cpu_tests.log" 2>&1 || status=1
tail -3 "$OUT/cpu_tests.log" | tee -a "$REPORT"

say "## Smoke: ringgpt train --device cuda (tiny model, 30 steps)"
TMPD=$(mktemp -d)
awk 'BEGIN { srand(5); for (i = 0; i < 2000; i++) { b = ""; for (j = 0; j < 16; j++) b = b substr("abcdefghijklmnop", int(rand() * 16) + 1, 1); printf "%s%s", b, b } }' > "$TMPD/copy.txt"
$BUILD/ringgpt train --device cuda --data "$TMPD/copy.txt" --model tiny --seq-len 256 --steps 30 --log-every 10 \
  --ckpt-every -1 --out "$TMPD/smoke" > "$OUT/smoke.log" 2>&1 || { status=1; echo "smoke run FAILED" >> "$OUT/smoke.log"; }
block "$OUT/smoke.log"
say "### bad input: --device cuda with no device visible (CUDA_VISIBLE_DEVICES=)"
CUDA_VISIBLE_DEVICES= $BUILD/ringgpt train --device cuda --data "$TMPD/copy.txt" --steps 1 > "$OUT/nodev.log" 2>&1
say "exit $? — $(tail -1 "$OUT/nodev.log")"
rm -rf "$TMPD"

say "## Benchmarks: ringgpt vs PyTorch on this GPU (bench/gpu_side_by_side.sh)"
STEPS=12
[ $QUICK -eq 1 ] && STEPS=6
QUICK=$QUICK STEPS=$STEPS bash bench/gpu_side_by_side.sh "$BUILD" "$OUT/side_by_side" > "$OUT/side_by_side.txt" 2>&1
block "$OUT/side_by_side.txt"

say ""
say "overall: $([ $status -eq 0 ] && echo PASS || echo FAIL) (report: $REPORT)"
exit $status
