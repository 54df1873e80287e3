# scripts/deps.sh — sourced by demo.sh and test.sh: installs the Debian packages and Python modules that are missing.
RINGGPT_PACKAGES=(build-essential cmake pkg-config libopenblas-dev libopenblas-openmp-dev libopenmpi-dev openmpi-bin
                  libcjson-dev libpcre2-dev zlib1g-dev libzstd-dev zstd python3 python3-numpy python3-matplotlib python3-pip clang libclang-rt-14-dev)

# tests/cli/slurm.sh starts a one-node Slurm from these (and SKIPs without them): scripts/test.sh installs
# them (RINGGPT_WITH_SLURM=0 to skip), scripts/demo.sh does not.
RINGGPT_SLURM_PACKAGES=(slurmd slurmctld slurm-client munge)

# PY = the Python that runs our scripts: the first that has numpy and matplotlib (Debian's has both).
find_python() {
  PY=""
  for cand in python3 /usr/bin/python3; do
    if command -v "$cand" >/dev/null && "$cand" -c "import numpy, matplotlib" 2>/dev/null; then PY=$(command -v "$cand"); break; fi
  done
  export PY
  [[ -n $PY ]]
}

ensure_deps() {
  local missing=() wanted=("${RINGGPT_PACKAGES[@]}")
  [[ ${RINGGPT_WITH_SLURM:-0} == 1 ]] && wanted+=("${RINGGPT_SLURM_PACKAGES[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
      echo "ringgpt: missing Debian packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
      exit 1
    fi
    echo "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  find_python || { echo "ringgpt: no python3 with numpy and matplotlib found" >&2; exit 1; }
  # HF `tokenizers` (PyPI; no torch) is the reference the tokenizer tests compare ids with.
  if ! "$PY" -c "import tokenizers" 2>/dev/null; then
    "$PY" -m pip install -q --break-system-packages tokenizers >/dev/null 2>&1 || "$PY" -m pip install -q tokenizers >/dev/null 2>&1 ||
      echo "ringgpt: pip could not install the Python package tokenizers; the tokenizer compatibility tests will SKIP" >&2
  fi
  # pyarrow reads parquet for scripts/parquet_to_jsonl.py (its test SKIPs without it); optional.
  "$PY" -c "import pyarrow" 2>/dev/null || "$PY" -m pip install -q --break-system-packages pyarrow >/dev/null 2>&1 || true
  # transformers (without torch) lets a test load an export with AutoTokenizer; optional.
  "$PY" -c "import transformers" 2>/dev/null || "$PY" -m pip install -q --break-system-packages transformers >/dev/null 2>&1 || true
  ensure_cuda_deps
}

# With the CUDA toolkit (nvcc): the cuDNN frontend's headers (--attn cudnn; cmake/cuda.cmake finds them next to
# the wheel's `cudnn` package) and cuobjdump/nvdisasm for the SASS checks (tests/check_kernels_sass.sh). Optional:
# without them the build has no cuDNN path and the SASS checks SKIP. cuDNN itself comes with the toolkit (or
# pip's nvidia-cudnn-cu13) and is opened at run time.
ensure_cuda_deps() {
  command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] || return 0
  local want=() cu nvcc
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cu=$("$nvcc" --version 2>/dev/null | sed -nE 's/.*release ([0-9]+)\..*/\1/p' || true)
  "$PY" -c "import importlib.util as u; exit(0 if u.find_spec('cudnn') else 1)" 2>/dev/null || want+=(nvidia-cudnn-frontend)
  "$PY" -c "import sysconfig, glob, sys; sys.exit(0 if glob.glob(sysconfig.get_paths()['purelib'] + '/nvidia/cu*/bin/cuobjdump') else 1)" 2>/dev/null ||
    want+=("nvidia-cuda-cuobjdump${cu:+==${cu}.*}" "nvidia-cuda-nvdisasm${cu:+==${cu}.*}")
  ((${#want[@]})) || return 0
  "$PY" -m pip install -q --break-system-packages "${want[@]}" >/dev/null 2>&1 || "$PY" -m pip install -q "${want[@]}" >/dev/null 2>&1 ||
    echo "ringgpt: pip could not install ${want[*]}; the CUDA build has no --attn cudnn and the SASS checks will SKIP" >&2
}

# build_ringgpt DIR [CMAKE_OPTIONS...]: configures and builds DIR. A script passes options only for a build directory of
# its own (the recipe's build-recipe/): the shared build/ keeps whatever options its cache holds (-DRINGGPT_CUDA=OFF
# there would stay and make the next scripts/test.sh on a GPU machine build no CUDA). A new DIR is a Release build.
build_ringgpt() {
  local dir=$1; shift
  [[ -f $dir/CMakeCache.txt ]] || set -- -DCMAKE_BUILD_TYPE=Release "$@"
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)"
}
