#!/usr/bin/env bash
# tests/cli/blas_kernels.sh — the BLAS kernels: never older than the CPU's AVX2 unless OPENBLAS_CORETYPE says so; the run again is the same run.
# Usage: blas_kernels.sh RINGGPT MPIEXEC
# OpenBLAS 0.3.21 gives a CPU model newer than its release its Prescott kernels (SSE3); ringgpt then runs itself
# again with the kernels for the CPU's widest unit (core/cpu_threads.c, cpu_blas_kernels). Checked: the kernels
# --version names, a forced OPENBLAS_CORETYPE kept, and that the run again changes nothing else: the same
# losses as a run with those kernels forced, exit codes and one-line errors, under mpiexec too.
set -uo pipefail
BIN=$1 MPIEXEC=$2
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/../train/ring_common.sh"   # mpirun_np
kernels() { "$BIN" --version | sed -nE 's/^BLAS: .*\(kernels: ([A-Za-z0-9]+).*/\1/p'; }
unset OPENBLAS_CORETYPE
picked=$(kernels)
check "--version names the kernels ($picked)" test -n "$picked"
# Only where OpenBLAS falls back on its own (a CPU newer than its release) does the run again happen; say which.
if "$BIN" --version | grep -q "OpenBLAS's own pick"; then echo "note: here OpenBLAS fell back: the checks below run through the exec"
else echo "note: here OpenBLAS's own pick stands: the checks below do not exercise the exec"; fi
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  check "this CPU has AVX2: the kernels use it ($("$BIN" --version | tail -1))" \
    bash -c '[[ " Haswell Zen Excavator SkylakeX Cooperlake SapphireRapids " == *" $1 "* ]]' _ "$picked"
else
  ok "this CPU has no AVX2: OpenBLAS's own pick ($picked) stands"
fi
check "a forced OPENBLAS_CORETYPE is kept (Prescott)" bash -c "[[ \$(OPENBLAS_CORETYPE=Prescott '$BIN' --version | tail -1) == *'(kernels: Prescott)' ]]"

make_text "$W/text.txt" 200
losses() { grep -oE 'loss [0-9.]+' "$1" | tr '\n' ' '; }
train=(train --data "$W/text.txt" --model tiny --seq-len 32 --batch 2 --steps 3 --threads 1 --log-every 1)
"$BIN" "${train[@]}" --out "$W/own" > "$W/own.log" 2>&1
OPENBLAS_CORETYPE=$picked "$BIN" "${train[@]}" --out "$W/forced" > "$W/forced.log" 2>&1
check "train as started = train with $picked forced ($(losses "$W/own.log"))" \
  test -n "$(losses "$W/own.log")" -a "$(losses "$W/own.log")" = "$(losses "$W/forced.log")"
# The run again failing (no /proc/self/exe: /proc unmounted in a mount namespace of our own) keeps OpenBLAS's pick,
# says so in one line, and the run goes on with those kernels (--version names them, without the run again's mark).
own_pick=$("$BIN" --version | sed -nE "s/.*OpenBLAS's own pick, ([A-Za-z0-9]+),.*/\1/p")
noproc() { unshare --mount --propagation private bash -c 'umount -l /proc && exec "$@"' _ "$@"; }
if [[ -z $own_pick ]]; then echo "note: no run again here, so no failed one to check"
elif [[ ${RINGGPT_SANITIZED:-0} == 1 ]]; then   # LeakSanitizer aborts at exit without /proc (detect_leaks=0 or not)
  echo "note: under AddressSanitizer, which needs /proc: the failed run again is checked by the plain build's test"
elif ! noproc true 2> /dev/null; then echo "note: cannot unmount /proc in a mount namespace here (unshare needs root): the failed run again is not checked"
else
  noproc "$BIN" "${train[@]}" --out "$W/noexec" > "$W/noexec.log" 2>&1
  OPENBLAS_CORETYPE=$own_pick "$BIN" "${train[@]}" --out "$W/pick" > "$W/pick.log" 2>&1
  check "the run again fails without /proc: one line says so and what to set" \
    grep -q "^ringgpt: note: OpenBLAS chose its $own_pick kernels.*failed.*set OPENBLAS_CORETYPE=$picked" "$W/noexec.log"
  check "... and the run completes on $own_pick's kernels ($(losses "$W/noexec.log"))" \
    test -s "$W/noexec/LATEST" -a "$(losses "$W/noexec.log")" = "$(losses "$W/pick.log")"
  check "... which --version names: $(noproc "$BIN" --version 2> /dev/null | tail -1)" \
    bash -c '[[ $1 == *"(kernels: $2)" ]]' _ "$(noproc "$BIN" --version 2> /dev/null | tail -1)" "$own_pick"
fi
mpirun_np 2 "$BIN" "${train[@]}" --batch 2 --out "$W/dp" > "$W/dp.log" 2>&1
check "under mpiexec, 2 ranks: the run completes ($(tail -1 "$W/dp.log"))" test -s "$W/dp/LATEST"
expect_fail 2 "unknown command 'trian'" "$BIN" trian
expect_fail 2 "--steps needs a value" "$BIN" train --data "$W/text.txt" --steps
finish
