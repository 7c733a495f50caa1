#!/usr/bin/env bash
# Network set-up of a container behind the simulator (the flowshare,
# aioquic and iperf images): the container sits on a /24 whose .2 is the
# simulator, which routes to the other side's network.
#
# No address is written here: the gateway is .2 of the container's own
# subnet, and everything that is not on the container's own link (the
# other side's subnet, whatever the layout: 198.18.0.0/24 and
# 198.19.0.0/24 here, the upstream runner's own two /24s elsewhere) goes
# through it. The on-link route of the container's own /24
# is removed, as the runner's endpoint images do, so that even a neighbour
# on the same network is reached through the simulator; the gateway stays
# reachable as a host route.
set -u

dev=${SETUP_INTERFACE:-eth0}
echo "flowshare setup: routing through the simulator"
# Docker leaves checksums and segmentation to the NIC; through ns-3 the
# receiver needs real checksums and MTU-sized packets, so do both in
# software.
ethtool -K "$dev" tx off tso off gso off >/dev/null 2>&1 || ethtool -K "$dev" tx off >/dev/null 2>&1 || true

cidr=$(ip -4 -o addr show dev "$dev" scope global | awk '{print $4}' | head -n 1)
if [[ -n "$cidr" ]]; then
    ipv4=${cidr%/*}
    prefix=${cidr#*/}
    gateway="${ipv4%.*}.2"
    if [[ "$ipv4" == "$gateway" ]]; then
        echo "flowshare setup: this container has the simulator's address $ipv4; not routing" >&2
    else
        ip route replace "$gateway/32" dev "$dev"
        ip route replace default via "$gateway" dev "$dev"
        ip route del "${ipv4%.*}.0/$prefix" dev "$dev" 2>/dev/null || true
        echo "flowshare setup: IPv4 $ipv4/$prefix via $gateway"
    fi
fi
ipv6=$(ip -6 -o addr show dev "$dev" scope global | awk '{print $4}' | cut -d/ -f1 | head -n 1)
if [[ -n "$ipv6" ]]; then
    gateway6="${ipv6%:*}:2"
    ip -6 route replace "$gateway6/128" dev "$dev" 2>/dev/null || true
    ip -6 route replace default via "$gateway6" dev "$dev" 2>/dev/null || true
    ip -6 route del "${ipv6%:*}:/64" dev "$dev" 2>/dev/null || true
    echo "flowshare setup: IPv6 $ipv6 via $gateway6"
fi
mkdir -p /logs/qlog 2>/dev/null || true
