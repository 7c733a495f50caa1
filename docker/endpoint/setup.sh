#!/usr/bin/env bash
# Network set-up of an interop-runner endpoint container, as the runner's
# own endpoint base image does it: the container sits on a /24 whose .2 is
# the ns-3 simulator, which routes to the other side's network.
set -u

echo "flowshare setup: routing through the simulator"
# Docker leaves UDP checksums to the NIC; through ns-3 the receiver needs
# real ones, so compute them in software.
ethtool -K eth0 tx off >/dev/null 2>&1 || true

ipv4=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1 | head -n 1)
if [[ -n "$ipv4" ]]; then
    ip route add 193.167.0.0/16 via "${ipv4%.*}.2" || true
    ip route del "${ipv4%.*}.0/24" dev eth0 2>/dev/null || true
    echo "flowshare setup: IPv4 $ipv4 via ${ipv4%.*}.2"
fi
ipv6=$(ip -6 -o addr show dev eth0 scope global | awk '{print $4}' | cut -d/ -f1 | head -n 1)
if [[ -n "$ipv6" ]]; then
    ip -6 route add fd00:cafe:cafe::/48 via "${ipv6%:*}:2" || true
    ip -6 route del "${ipv6%:*}:/64" dev eth0 2>/dev/null || true
    echo "flowshare setup: IPv6 $ipv6 via ${ipv6%:*}:2"
fi
mkdir -p /logs/qlog
