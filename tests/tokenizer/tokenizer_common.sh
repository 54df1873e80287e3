# tests/tokenizer/tokenizer_common.sh — shared by the tokenizer tests: a work dir, pass/fail counting, a python3 with HF `tokenizers`.
. "$(dirname "${BASH_SOURCE[0]}")/../harness.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# expect_fail CODE PATTERN CMD...: CMD exits with CODE and its stderr contains PATTERN.
expect_fail() {
  local code=$1 pattern=$2; shift 2
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  if [[ $rc == "$code" && $err == *"$pattern"* ]]; then ok "exit $code: $pattern"; else bad "expected exit $code with '$pattern', got $rc: $err"; fi
}
# PYTOK: a python3 that imports `tokenizers` (scripts/deps.sh installs it from PyPI into Debian's python3,
# preferred here for that reason); one pip try if none has it.
find_pytok() {
  PYTOK=""
  for cand in /usr/bin/python3 python3; do
    if command -v "$cand" >/dev/null && "$cand" -c "import tokenizers" 2>/dev/null; then PYTOK=$(command -v "$cand"); return; fi
  done
  local py; py=$(command -v /usr/bin/python3 || command -v python3) || return
  "$py" -m pip install -q --break-system-packages tokenizers >/dev/null 2>&1 || "$py" -m pip install -q tokenizers >/dev/null 2>&1
  "$py" -c "import tokenizers" 2>/dev/null && PYTOK=$py
}
# shard_ids SHARD [N]: the first N token ids (all without N) of a .rgs shard, separated by spaces, read with an own
# reader of data/FORMAT.md (header, block index, raw-deflate blocks, byte planes), not through ringgpt.
shard_ids() {
  python3 - "$1" "${2:-0}" <<'PY'
import struct, sys, zlib
path, want = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
assert data[:8] == b"RGPTSHRD", f"{path}: not a shard"
width, codec = struct.unpack_from("<II", data, 16)
n_blocks, index_at = struct.unpack_from("<QQ", data, 56)
ids = []
for b in range(n_blocks):
    at, _, comp, n = struct.unpack_from("<QQII", data, index_at + 32 * b)
    raw = zlib.decompress(data[at:at + comp], -15)
    if codec == 2:   # byte planes: byte k of token i at raw[k * n + i]
        ids += [sum(raw[k * n + i] << (8 * k) for k in range(width)) for i in range(n)]
    else:
        ids += [int.from_bytes(raw[i * width:(i + 1) * width], "little") for i in range(n)]
    if want and len(ids) >= want:
        break
print(" ".join(map(str, ids[:want] if want else ids)))
PY
}
