#!/usr/bin/env bash
# tests/train/two_hosts_cleanup.sh — scripts/two_hosts.sh refuses without root (exit 77, one line) and on a bad flag (exit 2,
# one line) making nothing, and removes its hosts on every exit path: the command failing (its exit code passed on) and the
# script ended by SIGTERM while a process runs inside a host (that process ended too). SKIP (77) with the reason where
# network namespaces cannot be made (the refusal checks still run first).
# Usage: two_hosts_cleanup.sh
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
chmod 755 "$W"
cp "$HERE/../../scripts/two_hosts.sh" "$W/two_hosts.sh"   # readable by the unprivileged user below
chmod 755 "$W/two_hosts.sh"
bg=""
trap '[ -n "$bg" ] && kill -TERM "$bg" 2> /dev/null; rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ns_exists() { ip netns list 2> /dev/null | grep -qw "$1"; }
one_line() { [ "$(wc -l < "$1")" -eq 1 ] || { cat "$1"; fail "$2: stderr is not one line"; }; }

# Without root: one line, exit 77.
if [ "$(id -u)" -eq 0 ]; then
  setpriv --reuid=65534 --regid=65534 --clear-groups bash "$W/two_hosts.sh" -- true > /dev/null 2> "$W/err"
else
  bash "$W/two_hosts.sh" -- true > /dev/null 2> "$W/err"
fi
rc=$?
[ $rc -eq 77 ] || { cat "$W/err"; fail "without root: exit $rc, want 77"; }
one_line "$W/err" "without root"
grep -q "needs root" "$W/err" || fail "without root: the line does not say root is needed: $(cat "$W/err")"
echo "ok: without root: exit 77, $(cat "$W/err")"

# A bad flag: one line, exit 2, no namespace made (the script's names end in its pid).
bash "$W/two_hosts.sh" --rate fast -- true > /dev/null 2> "$W/err" &
pid=$!
wait $pid
rc=$?
[ $rc -eq 2 ] || { cat "$W/err"; fail "--rate fast: exit $rc, want 2"; }
one_line "$W/err" "--rate fast"
! ns_exists "rg${pid}a" && ! ns_exists "rg${pid}b" || fail "--rate fast left a namespace behind"
echo "ok: --rate fast: exit 2, $(cat "$W/err")"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: the cleanup checks need root (network namespaces)"; exit 77; }
if ! ip netns add "rgprobe$$" 2> "$W/err"; then echo "SKIP: cannot create network namespaces here ($(head -c 200 "$W/err"))"; exit 77; fi
ip netns del "rgprobe$$"

# The command fails: its exit code comes back and both hosts are gone.
bash "$W/two_hosts.sh" --rate 100mbit -- bash -c 'grep -o "ip netns exec [^ ]*" "$HOSTS_MPIEXEC" | head -1 | cut -d" " -f4 > "$0"
  exit 3' "$W/ns" 2> "$W/err"
rc=$?
[ $rc -eq 3 ] || { cat "$W/err"; fail "a failing command: exit $rc, want its own 3"; }
nsa=$(cat "$W/ns")
[[ $nsa == rg*a ]] || fail "the command did not see its hosts (got '$nsa')"
! ns_exists "$nsa" && ! ns_exists "${nsa%a}b" || fail "a failing command left $nsa or ${nsa%a}b behind"
echo "ok: a failing command: exit 3 passed on, $nsa and ${nsa%a}b removed"

# SIGTERM while a process runs inside host b: that process ended, the hosts removed, exit 143.
rm -f "$W/ns" "$W/inner"
bash "$W/two_hosts.sh" -- bash -c 'ns=$(grep -o "ip netns exec [^ ]*" "$HOSTS_MPIEXEC" | head -1 | cut -d" " -f4)
  ip netns exec "${ns%a}b" sleep 300 & echo $! > "$0.inner"; echo "$ns" > "$0"; wait' "$W/ns" 2> "$W/err" &
bg=$!
for _ in $(seq 100); do [ -s "$W/ns" ] && [ -s "$W/ns.inner" ] && break; sleep 0.1; done
[ -s "$W/ns" ] || { cat "$W/err"; fail "the hosts did not come up within 10 s"; }
nsa=$(cat "$W/ns") inner=$(cat "$W/ns.inner")
ns_exists "$nsa" || fail "$nsa is not there while the command runs"
kill -TERM "$bg"
wait "$bg"
rc=$?
bg=""
[ $rc -eq 143 ] || { cat "$W/err"; fail "SIGTERM: exit $rc, want 143"; }
! ns_exists "$nsa" && ! ns_exists "${nsa%a}b" || fail "SIGTERM left $nsa or ${nsa%a}b behind"
alive() { local st; st=$(ps -o stat= -p "$1" 2> /dev/null) && [[ $st != Z* ]]; }   # a zombie has ended
! alive "$inner" || { kill -KILL "$inner"; fail "SIGTERM left the process inside ${nsa%a}b running"; }
echo "ok: SIGTERM: exit 143, the process inside ${nsa%a}b ended, $nsa and ${nsa%a}b removed"
