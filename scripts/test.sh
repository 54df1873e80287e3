#!/usr/bin/env bash
# scripts/test.sh — installs what is missing, builds, and runs every test through ctest (GPU tests SKIP without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
export RINGGPT_WITH_SLURM=${RINGGPT_WITH_SLURM:-1}   # the srun test runs a one-node Slurm
ensure_deps
build_ringgpt
cd build
ctest --output-on-failure --timeout 900 "$@"
