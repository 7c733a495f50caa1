#!/usr/bin/env bash
# flowshare-sim entry point: the QUIC network simulator's role, played by
# the project's ns-3 program (testbed/ns3/bottleneck.cc).
#
#   SCENARIO       the runner's vocabulary, e.g.
#                    simple-p2p --delay=15ms --bandwidth=10Mbps --queue=25
#                    blackhole --delay=15ms --bandwidth=10Mbps --queue=25 --on=5s --off=2s [--repeat=N]
#                    drop-rate ... --rate_to_server=P --rate_to_client=P [--burst_to_server=N --burst_to_client=N]
#                    corrupt-rate ... --rate_to_server=P --rate_to_client=P
#                  (the runner's crosstraffic test is simple-p2p with two
#                  iperf containers; the simulator carries their TCP too)
#   WAITFORSERVER  host:port of the QUIC server; the emulation starts once
#                  the server answers a QUIC probe with Version Negotiation
#                  (10 s at most, as the runner does)
#
# eth0 is the client side (leftnet), eth1 the server side (rightnet); the
# simulator's addresses (.2 on both) are read from the interfaces, never
# written here. The kernel gives them up to ns-3 before the emulation
# starts, so that only ns-3 answers for them and nothing bypasses it.
# Readiness: ns-3 itself accepts TCP connections on port 57832 (on both
# sides) once it runs. Into /logs: trace_node_left.pcap (client side),
# trace_node_right.pcap (server side), ns3-monitor.csv (lag of real time
# behind simulated time, queue, raw-socket drops every 100 ms),
# ns3-series.csv (per-flow bytes and drops), ns3-summary.json (written at
# the end: docker stop, i.e. SIGTERM), sim.log.
set -euo pipefail

LOGS=${LOGS:-/logs}
SCENARIO=${SCENARIO:-simple-p2p --delay=15ms --bandwidth=10Mbps --queue=25}
mkdir -p "$LOGS"
exec > >(tee -a "$LOGS/sim.log") 2>&1

read -r -a words <<<"$SCENARIO"
name=${words[0]:-}
case "$name" in
    simple-p2p | blackhole | drop-rate | corrupt-rate) ;;
    *)
        echo "flowshare-sim: scenario '$name' is not supported; supported: simple-p2p, blackhole, drop-rate, corrupt-rate" >&2
        exit 2
        ;;
esac
echo "flowshare-sim: scenario $SCENARIO"

# eth1 may be connected a moment after the container starts.
for _ in $(seq 1 100); do
    ip link show eth1 >/dev/null 2>&1 && ip -4 -o addr show dev eth1 | grep -q inet && break
    sleep 0.1
done
left=$(ip -4 -o addr show dev eth0 scope global | awk '{print $4}' | head -n 1)
right=$(ip -4 -o addr show dev eth1 scope global 2>/dev/null | awk '{print $4}' | head -n 1)
if [[ -z "$left" || -z "$right" ]]; then
    echo "flowshare-sim: need IPv4 addresses on eth0 (client side) and eth1 (server side), found '${left}' and '${right}'" >&2
    exit 2
fi
echo "flowshare-sim: left eth0 $left, right eth1 $right"

for dev in eth0 eth1; do
    # Real checksums and MTU-sized frames on the raw sockets.
    ethtool -K "$dev" tx off tso off gso off gro off >/dev/null 2>&1 || true
    ip link set "$dev" promisc on
done
# The kernel must not forward between the two sides (the container shares
# the host's forwarding setting): only ns-3 carries packets across.
if ! { iptables -P FORWARD DROP 2>/dev/null && ip6tables -P FORWARD DROP 2>/dev/null; }; then
    echo "flowshare-sim: warning: cannot set the FORWARD policy; the kernel has no addresses left to route with"
fi

if [[ -n "${WAITFORSERVER:-}" ]]; then
    echo "flowshare-sim: waiting for the QUIC server at $WAITFORSERVER"
    if ! bottleneck --waitQuic="$WAITFORSERVER" --waitSeconds=10; then
        echo "flowshare-sim: no answer from $WAITFORSERVER within 10 s; starting anyway"
    fi
fi

# ns-3's nodes take over the addresses (and the interfaces' MACs).
ip -4 addr flush dev eth0
ip -4 addr flush dev eth1
ip -6 addr flush dev eth0 scope global 2>/dev/null || true
ip -6 addr flush dev eth1 scope global 2>/dev/null || true

exec bottleneck --scenario="$name" "${words[@]:1}" \
    --client=eth0 --server=eth1 --left="$left" --right="$right" \
    --readyPort=57832 --stdin=false --pcap="$LOGS" \
    --monitor="$LOGS/ns3-monitor.csv" --series="$LOGS/ns3-series.csv" --summary="$LOGS/ns3-summary.json"
