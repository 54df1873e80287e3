#!/usr/bin/env bash
# scripts/two_hosts.sh — two network hosts on this machine (network namespaces joined by a veth link shaped by tc tbf), Open MPI over
# TCP between them; runs one command with a launcher for them, then removes everything it made, on every exit path.
#
# Usage: scripts/two_hosts.sh [--rate RATE] [--slots N] [--mpiexec PATH] -- COMMAND [ARGS...]
#   --rate RATE   each direction of the link: a tc rate (10gbit, 1gbit, 500mbit; default: no limit, i.e. what the
#                 kernel's veth and TCP reach on this machine)
#   --slots N     ranks per host (default 1): `-np 2N` puts ranks 0..N-1 on host a, N..2N-1 on host b
#   --mpiexec P   the Open MPI launcher (default: mpiexec on PATH)
# COMMAND runs here (root namespace) with HOSTS_MPIEXEC set to a launcher: "$HOSTS_MPIEXEC" -np 2 PROGRAM ... starts the
# ranks inside the hosts, where the only network is the link (10.77.0.1 = host a, 10.77.0.2 = host b; Open MPI's TCP
# transport, shared memory excluded). HOSTS_RATE is the rate. The script exits with COMMAND's status; 77 (with one line
# on stderr) where it cannot make the hosts: not root, no network namespaces, or tc's tbf missing.
#
# Rate: tbf on the egress of both veth ends (each direction its own limit), a queue of 5 ms at the rate. netem (delay)
# is not available on the machines this was written on, so the link adds only the kernel's own latency (~0.05 ms).
# Open MPI's TCP transport is told to use plain send/receive fragments (btl_tcp_flags send,inplace): its emulated-put
# protocol for large messages waits for acknowledgements that queue behind the opposite direction's data, which
# halves the rate of a ring exchange on a shaped link (measured: 0.48 instead of 0.93 Gbit/s each way at 1 Gbit/s).
# Receive processing runs on the receiving host's cores (RPS on each veth end), as a NIC's interrupts would.
# Cores: host a gets the first half of this machine's cores and host b the rest (taskset; both all of them on one core),
# and Open MPI binds nothing further (--bind-to none): each host's daemon would otherwise bind its first rank to core 0,
# and the two hosts' ranks would share one core.
set -uo pipefail
refuse() { echo "two_hosts.sh: $*" >&2; exit 77; }
usage() { echo "two_hosts.sh: $*; usage: two_hosts.sh [--rate RATE] [--slots N] [--mpiexec PATH] -- COMMAND [ARGS...]" >&2; exit 2; }

RATE="" SLOTS=1 MPIEXEC=mpiexec
while (($#)); do
  case $1 in
    --rate) RATE=${2:-}; shift 2 || usage "--rate needs a value" ;;
    --slots) SLOTS=${2:-}; shift 2 || usage "--slots needs a value" ;;
    --mpiexec) MPIEXEC=${2:-}; shift 2 || usage "--mpiexec needs a value" ;;
    --) shift; break ;;
    *) usage "unknown argument '$1'" ;;
  esac
done
(($#)) || usage "no command given"
[[ $SLOTS =~ ^[1-9][0-9]*$ ]] || usage "--slots must be a positive integer (got '$SLOTS')"
[[ -z $RATE || $RATE =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]] || usage "--rate must be a tc rate such as 1gbit or 500mbit (got '$RATE')"
command -v "$MPIEXEC" > /dev/null || usage "--mpiexec $MPIEXEC: not found"

[[ $(id -u) == 0 ]] || refuse "needs root (network namespaces, veth links and tc); run it as root"
command -v ip > /dev/null && command -v tc > /dev/null || refuse "needs ip and tc (Debian: apt-get install iproute2)"
command -v taskset > /dev/null || refuse "needs taskset (Debian: apt-get install util-linux)"
NCPU=$(nproc)
CPUS_A=0-$(( NCPU > 1 ? NCPU / 2 - 1 : 0 )) CPUS_B=$(( NCPU > 1 ? NCPU / 2 : 0 ))-$(( NCPU - 1 ))

# Names unique to this run, so that two runs (or two engineers) never touch each other's hosts.
TAG=rg$$
NSA=${TAG}a NSB=${TAG}b
DIR=$(mktemp -d /tmp/two_hosts.XXXXXX)
made=() child=""
cleanup() {
  [[ -n $child ]] && kill -TERM "$child" 2> /dev/null
  local ns pid
  for ns in "${made[@]}"; do   # end what still runs inside our hosts (by pid), then remove them
    for pid in $(ip netns pids "$ns" 2> /dev/null); do kill -TERM "$pid" 2> /dev/null; done
  done
  for ns in "${made[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do [[ -z $(ip netns pids "$ns" 2> /dev/null) ]] && break; sleep 0.2; done
    for pid in $(ip netns pids "$ns" 2> /dev/null); do kill -KILL "$pid" 2> /dev/null; done
    ip netns del "$ns" 2> /dev/null   # deleting a namespace deletes its end of the veth, and so the pair
  done
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT   # (the EXIT trap then cleans up)
trap 'exit 143' TERM

ip netns add "$NSA" 2> "$DIR/err" || refuse "cannot create network namespaces here ($(head -c 200 "$DIR/err" | tr '\n' ' '))"
made+=("$NSA")
ip netns add "$NSB" 2> "$DIR/err" || refuse "cannot create a second network namespace ($(head -c 200 "$DIR/err" | tr '\n' ' '))"
made+=("$NSB")
ip link add "${TAG}a0" netns "$NSA" type veth peer name "${TAG}b0" netns "$NSB" 2> "$DIR/err" ||
  refuse "cannot create a veth link between namespaces ($(head -c 200 "$DIR/err" | tr '\n' ' '))"
ip -n "$NSA" addr add 10.77.0.1/24 dev "${TAG}a0" && ip -n "$NSB" addr add 10.77.0.2/24 dev "${TAG}b0" &&
  ip -n "$NSA" link set lo up && ip -n "$NSB" link set lo up &&
  ip -n "$NSA" link set "${TAG}a0" up && ip -n "$NSB" link set "${TAG}b0" up || refuse "cannot configure the veth link"
# Receive processing on the receiving host's own cores (RPS), as a NIC's interrupts would be. Without it a veth packet
# is processed on whichever core sent it, and TCP's sends that ACKs clock out from the other core's softirq take the
# other core's queue: one flow through two queues arrives out of order, TCP retransmits spuriously (thousands of
# segments in a few steps) and stalls — 40-175 ms waits on the unlimited link at 2048 tokens per rank, measured.
cpumask() {   # cpumask FIRST LAST: the cores FIRST..LAST as /sys's hex bitmap (32-bit words, comma-separated)
  local out="" w c v
  for ((w = (NCPU - 1) / 32; w >= 0; w--)); do
    v=0
    for ((c = 0; c < 32; c++)); do ((w * 32 + c >= $1 && w * 32 + c <= $2)) && v=$((v | 1 << c)); done
    out+=$(printf '%08x' "$v")$( ((w > 0)) && echo ,)
  done
  echo "$out"
}
for end in "$NSA ${TAG}a0 $CPUS_A" "$NSB ${TAG}b0 $CPUS_B"; do
  read -r ns dev cpus <<< "$end"
  ip netns exec "$ns" sh -c "echo $(cpumask "${cpus%-*}" "${cpus#*-}") > /sys/class/net/$dev/queues/rx-0/rps_cpus" 2> "$DIR/err" ||
    echo "two_hosts.sh: note: cannot steer $dev's receive processing to its host's cores (RPS: $(head -c 200 "$DIR/err" | tr '\n' ' ')); the link may reorder packets" >&2
done
if [[ -n $RATE ]]; then
  # burst: 1 ms at the rate, at least 128 KiB; queue: 5 ms at the rate. tbf cuts a GSO packet larger than its burst
  # into segments in software, on the sending core: with a 64 KiB burst at 500 Mbit/s (where TCP sizes its segments
  # to ~1 ms, 62.5 KB + headers) that work came out of the ring's compute (0.54 -> 0.92 s a block, measured).
  bits=$(awk -v r="$RATE" 'BEGIN { n = r + 0; u = substr(r, length(n "") + 1, 1);
    m = u == "k" ? 1e3 : u == "m" ? 1e6 : u == "g" ? 1e9 : 1; printf "%.0f", n * m }')
  burst=$(( bits / 8 / 1000 > 131072 ? bits / 8 / 1000 : 131072 ))
  for end in "$NSA ${TAG}a0" "$NSB ${TAG}b0"; do
    read -r ns dev <<< "$end"
    ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$RATE" burst "$burst" latency 5ms 2> "$DIR/err" ||
      refuse "tc cannot shape the link (tbf: $(head -c 200 "$DIR/err" | tr '\n' ' '))"
  done
fi
# The launcher: mpiexec inside host a; Open MPI starts host b's daemon through the agent, which enters host b.
cat > "$DIR/agent" << EOF
#!/bin/sh
# Open MPI's rsh agent for the two hosts: \$1 is the host, the rest the command to run there.
host=\$1; shift
case \$host in
  10.77.0.1) ns=$NSA cpus=$CPUS_A ;;
  10.77.0.2) ns=$NSB cpus=$CPUS_B ;;
  *) echo "two_hosts agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" taskset -c "\$cpus" sh -c "\$*"
EOF
cat > "$DIR/mpiexec" << EOF
#!/bin/sh
# mpiexec for the two hosts of scripts/two_hosts.sh ($NSA, $NSB), Open MPI over TCP on the veth link only.
exec ip netns exec $NSA taskset -c $CPUS_A "$(command -v "$MPIEXEC")" --allow-run-as-root --oversubscribe \\
  -H 10.77.0.1:$SLOTS,10.77.0.2:$SLOTS --mca plm_rsh_agent "$DIR/agent" --bind-to none \\
  --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \\
  --mca btl_tcp_flags send,inplace "\$@"
EOF
chmod +x "$DIR/agent" "$DIR/mpiexec"
export HOSTS_MPIEXEC=$DIR/mpiexec HOSTS_RATE=${RATE:-unlimited}
"$@" &   # in the background, so that a signal to this script is handled at once (the trap ends it too)
child=$!
wait "$child"
rc=$?
child=""
exit $rc
