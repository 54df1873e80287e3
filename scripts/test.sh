#!/usr/bin/env bash
# scripts/test.sh — installs what is missing, builds, runs every test through ctest (GPU tests SKIP without a GPU), then
# builds build-asan (ASan + UBSan) and runs the suite again there: 0 sanitizer findings (docs/testing.md).
# usage: scripts/test.sh [--no-asan] [ctest arguments]   (--no-asan: the normal suite only)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
asan=1
if [[ ${1:-} == --no-asan ]]; then asan=0; shift; fi
export RINGGPT_WITH_SLURM=${RINGGPT_WITH_SLURM:-1}   # the srun test runs a one-node Slurm
ensure_deps
build_ringgpt build
(cd build && ctest --output-on-failure --timeout 900 "$@")
((asan)) || exit 0

# The sanitized suite. A finding ends its process with an exit code no test expects, and every report is also
# written under build-asan/sanitizer/: a report there fails the suite even when the test discarded the output.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGGPT_SANITIZE=ON > /dev/null
cmake --build build-asan -j"$(nproc)"
rm -rf build-asan/sanitizer && mkdir build-asan/sanitizer
rc=0
# Not run here, to keep CI inside its budget (the whole suite passes sanitized too, docs/testing.md): the fuzz tests,
# whose targets are ASan + UBSan builds of their own; the README's commands, which train 400 steps through what the
# other tests cover; train_signals (5 minutes sanitized; the stop and save paths run sanitized in cli_slurm_srun).
(cd build-asan && ctest --output-on-failure --timeout 900 -j"$(nproc)" -LE fuzz -E '^(cli_readme_commands|train_signals)$' "$@") || rc=$?
if grep -lE "ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|runtime error:" build-asan/sanitizer/* > /dev/null 2>&1; then
  echo "sanitizer findings (build-asan/sanitizer):" >&2
  grep -lE "ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|runtime error:" build-asan/sanitizer/* | head -20 | xargs cat >&2
  rc=1
fi
exit $rc
