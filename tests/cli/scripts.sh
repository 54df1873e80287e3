#!/usr/bin/env bash
# tests/cli/scripts.sh — the Python helpers: plot_metrics.py and plot_passkey.py draw from real output (finding a Python
# with matplotlib through scripts/pyfind.py, or saying how to install it; --help without it), check_hf_export.py --help
# works, the bf16 export passes and it finds a Python with numpy as the plots do; the scripts' build steps leave the shared build/'s CMake cache as they found it.
set -uo pipefail
BIN=$1
. "$(dirname "$0")/common.sh"
S=$(dirname "$0")/../../scripts
make_text "$W/text.txt" 200
"$BIN" train --data "$W/text.txt" --model tiny --seq-len 32 --batch 2 --steps 3 --threads 1 --eval-every 2 --out "$W/run" > /dev/null
check "metrics.jsonl has tokens_seen and elapsed_s" grep -q '"tokens_seen": 192, "elapsed_s": ' "$W/run/metrics.jsonl"
have_mpl=0
for py in python3 /usr/bin/python3; do command -v "$py" > /dev/null && "$py" -c "import matplotlib" 2>/dev/null && have_mpl=1; done
out=$(python3 "$S/plot_metrics.py" "$W/run/metrics.jsonl" --log --out "$W/plots" 2>&1); rc=$?
if [[ $have_mpl == 1 ]]; then
  check "plot_metrics.py --log: loss, optim and throughput PNGs ($out)" test $rc = 0 -a -s "$W/plots/loss.png" -a -s "$W/plots/optim.png" -a -s "$W/plots/throughput.png"
else
  check "plot_metrics.py without matplotlib anywhere says how to install it ($out)" grep -q "apt-get install python3-matplotlib" <<<"$out"
fi
# --title and --hline (what scripts/demo.sh passes): a loss plot other than the plain one; a bad --hline is one line, exit 2.
if [[ $have_mpl == 1 ]]; then
  python3 "$S/plot_metrics.py" "$W/run/metrics.jsonl" --out "$W/plain" > /dev/null 2>&1
  python3 "$S/plot_metrics.py" "$W/run/metrics.jsonl" --out "$W/marked" --title "a title" --hline 2.773:"no copy (floor)" \
    --hline 1.386:"perfect copy" > /dev/null 2>&1
  check "plot_metrics.py --title --hline: the PNGs written, the loss plot not the plain one" bash -c "test -s '$W/marked/loss.png' \
    -a -s '$W/marked/optim.png' -a -s '$W/plain/loss.png' && ! cmp -s '$W/plain/loss.png' '$W/marked/loss.png'"
fi
for h in 2.773 x:floor 2.773: nan:floor; do
  rc=0; out=$(python3 "$S/plot_metrics.py" "$W/run/metrics.jsonl" --out "$W/badh" --hline "$h" 2>&1) || rc=$?
  check "plot_metrics.py --hline '$h': exit 2, one line naming --hline, nothing drawn ($rc: $out)" \
    bash -c '[[ $1 == 2 && $2 == *--hline* && $(grep -c . <<<"$2") == 1 && ! -e $3 ]]' _ $rc "$out" "$W/badh"
done
rc=0; out=$(python3 "$S/plot_metrics.py" "$W/run/metrics.jsonl" --out "$W/badlog" --log --hline 0:zero 2>&1) || rc=$?
check "plot_metrics.py --log --hline 0:zero: exit 2 ($rc: $out)" test $rc = 2
rc=0; out=$(python3 "$S/plot_metrics.py" "$W/none.jsonl" 2>&1) || rc=$?
check "plot_metrics.py on a missing file: one clear line ($out)" test $rc != 0 -a "$(wc -l <<<"$out")" = 1
check "check_hf_export.py --help" python3 "$S/check_hf_export.py" --help
# plot_passkey.py (the command `passkey` prints) finds matplotlib like plot_metrics.py (scripts/pyfind.py); --help of both
# works where no Python has matplotlib (a matplotlib that fails to import stands for one that is missing).
"$BIN" passkey "$W/run" --lengths 160 --depths 0,1 --trials 1 --threads 1 --out "$W/pk" > /dev/null
mkdir -p "$W/nompl/matplotlib"; echo 'raise ImportError("no matplotlib (test)")' > "$W/nompl/matplotlib/__init__.py"
for script in plot_passkey plot_metrics; do
  check "$script.py --help without matplotlib" bash -c "PYTHONPATH='$W/nompl' python3 '$S/$script.py' --help > /dev/null"
done
rc=0; out=$(PYTHONPATH="$W/nompl" python3 "$S/plot_passkey.py" "$W/pk.json" 2>&1) || rc=$?
check "plot_passkey.py without matplotlib anywhere: one line naming it, no traceback ($out)" \
  bash -c '[[ $1 != 0 && $2 == *matplotlib* && $2 != *Traceback* && $(grep -c . <<<"$2") == 1 ]]' _ $rc "$out"
if [[ $have_mpl == 1 ]]; then
  check "plot_passkey.py draws the heatmap" bash -c "python3 '$S/plot_passkey.py' '$W/pk.json' -o '$W/pk.png' > /dev/null && test -s '$W/pk.png'"
fi
PYNP=""
for py in python3 /usr/bin/python3; do command -v "$py" > /dev/null && "$py" -c "import numpy" 2>/dev/null && PYNP=$py && break; done
if [[ -n $PYNP ]]; then
  "$BIN" eval "$W/run" --data "$W/text.txt" --batches 1 --threads 1 --dump-logits "$W/dump" > /dev/null
  "$BIN" export "$W/run" --to hf "$W/hf_bf16" --dtype bf16 > /dev/null
  check "check_hf_export.py: a bf16 export passes at the bf16 tolerance" "$PYNP" "$S/check_hf_export.py" "$W/hf_bf16" "$W/dump"
  check "check_hf_export.py: the bf16 export fails at the f32 tolerance (the check can fail)" \
    bash -c "! '$PYNP' '$S/check_hf_export.py' '$W/hf_bf16' '$W/dump' --tol 1e-4 > /dev/null"
  # Started by a Python without numpy (-S: no site-packages), it runs again in a python3 that has it (scripts/pyfind.py);
  # a wrapper first in PATH is that other python3 here (its path differs from the first one's).
  mkdir -p "$W/pybin"; printf '#!/bin/sh\nexec "%s" "$@"\n' "$(command -v "$PYNP")" > "$W/pybin/python3"; chmod +x "$W/pybin/python3"
  check "check_hf_export.py started without numpy runs again where numpy is, and passes" \
    bash -c "PATH='$W/pybin':\$PATH '$PYNP' -S '$S/check_hf_export.py' '$W/hf_bf16' '$W/dump' | grep -q 'tolerance 0.01) ok'"
fi
mkdir -p "$W/nonp/numpy"; echo 'raise ImportError("no numpy (test)")' > "$W/nonp/numpy/__init__.py"
rc=0; out=$(PYTHONPATH="$W/nonp" python3 "$S/check_hf_export.py" "$W/hf_bf16" "$W/dump" 2>&1) || rc=$?
check "check_hf_export.py without numpy anywhere: one line saying how to install it ($out)" \
  bash -c '[[ $1 != 0 && $2 == *"apt-get install python3-numpy"* && $(grep -c . <<<"$2") == 1 ]]' _ $rc "$out"
# Each script builds in its own directory or leaves the cache it finds: long_context.sh once configured the shared
# build/ with -DRINGGPT_CUDA=OFF, which stayed, so the next scripts/test.sh on a GPU machine built no CUDA. Run in a
# scratch copy of deps.sh and long_context.sh over a stub project (a CMake cache in a second, nothing to compile), with
# ensure_deps stubbed (nothing installed): test.sh's build step, the recipe's (it stops at the missing recipe), test.sh's again.
P=$W/proj
mkdir -p "$P/scripts"
cp "$S/deps.sh" "$S/long_context.sh" "$P/scripts/"
echo 'ensure_deps() { :; }   # the test: packages are not what it checks' >> "$P/scripts/deps.sh"
printf 'cmake_minimum_required(VERSION 3.13)\nproject(stub NONE)\nset(RINGGPT_CUDA AUTO CACHE STRING "AUTO, ON or OFF")\n' > "$P/CMakeLists.txt"
build_step() { (cd "$P" && . scripts/deps.sh && build_ringgpt build "$@") > /dev/null; }
build_step -DCMAKE_BUILD_TYPE=Debug
cp "$P/build/CMakeCache.txt" "$W/cache_before"
rc=0; out=$(RECIPE=no_recipe OUT="$W/lc" bash "$P/scripts/long_context.sh" 2>&1) || rc=$?
check "long_context.sh built, then stopped at the missing recipe (exit $rc: $out)" test $rc = 2 -a "${out/no_recipe has no stage1/}" != "$out"
check "long_context.sh configured its own build-recipe/ (RINGGPT_CUDA=OFF there)" grep -qx 'RINGGPT_CUDA:STRING=OFF' "$P/build-recipe/CMakeCache.txt"
check "long_context.sh left the cache of build/ as it was" cmp -s "$W/cache_before" "$P/build/CMakeCache.txt"
build_step
check "test.sh's build step again: build/ keeps RINGGPT_CUDA=AUTO" grep -qx 'RINGGPT_CUDA:STRING=AUTO' "$P/build/CMakeCache.txt"
check "test.sh's build step keeps the build type its cache holds (Debug)" grep -qxE 'CMAKE_BUILD_TYPE:[A-Z]+=Debug' "$P/build/CMakeCache.txt"
finish
