# tests/fuzz.sh — sourced by the fuzz tests (tests/<folder>/fuzz_*.sh): builds a libFuzzer target with clang + ASan + UBSan
# from the parser's own sources, SKIPs (77) without clang or its libFuzzer runtime, and runs it for SECONDS — or, when
# FUZZ_RUNS is set (bench/fuzz.sh), for that many executions. Every script takes SOURCE_DIR BUILD_DIR SECONDS RINGGPT_BIN.
SRC=${1:?usage: fuzz_X.sh SOURCE_DIR BUILD_DIR SECONDS RINGGPT_BIN}; OUT=${2:?}; SECONDS_=${3:-20}; BIN=${4:?}
CLANG=${CLANG:-$(command -v clang || true)}
if [ -z "$CLANG" ]; then echo "SKIP: clang not found (install clang and libclang-rt-14-dev for the fuzz test)"; exit 77; fi
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)

# fuzz_build NAME TARGET.c SOURCES... [-lLIB ...]: $OUT/fuzz_NAME/fuzz_NAME (sources relative to SRC, libraries as given)
fuzz_build() {
  local name=$1 dir=$OUT/fuzz_$1; shift
  mkdir -p "$dir"
  local args=()
  for a in "$@"; do [[ $a == -* ]] && args+=("$a") || args+=("$SRC/$a"); done
  if ! "$CLANG" -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -I"$SRC" "${args[@]}" -lm -o "$dir/fuzz_$name" 2> "$dir/build.log"; then
    if grep -q "fuzzer" "$dir/build.log"; then
      echo "SKIP: clang cannot link libFuzzer (install libclang-rt-14-dev): $(head -c 300 "$dir/build.log")"; exit 77
    fi
    cat "$dir/build.log"; exit 1
  fi
  FUZZ_DIR=$dir FUZZ_NAME=$name
}

# fuzz_run NAME CORPUS [libFuzzer flags...]: runs it (for SECONDS_, or FUZZ_RUNS executions), prints libFuzzer's final
# statistics, the pass/fail line, and exits with its code
fuzz_run() {
  local name=$1 corpus=$2; shift 2
  local budget=(-max_total_time="$SECONDS_")
  [[ -n ${FUZZ_RUNS:-} ]] && budget=(-runs="$FUZZ_RUNS")
  (cd "$OUT/fuzz_$name" && "./fuzz_$name" "${budget[@]}" -rss_limit_mb=2048 -print_final_stats=1 "$@" "$corpus" 2>&1 | tail -15
   exit "${PIPESTATUS[0]}")
  local rc=$?
  echo "$([ $rc -eq 0 ] && echo 1 || echo 0) passed, $([ $rc -eq 0 ] && echo 0 || echo 1) failed"
  exit $rc
}
