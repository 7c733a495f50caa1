#!/usr/bin/env bash
# flowshare-iperf: TCP cross traffic through the simulator, in the runner's
# roles (its crosstraffic test starts two such containers):
#   ROLE=client  the receiver, on the client's network: iperf3 -s
#   ROLE=server  the sender, on the server's network: iperf3 -c $CLIENT with
#                the congestion control IPERF_CONGESTION (cubic or reno) for
#                DURATION seconds (default 3600: until the container is stopped)
# Both wait for the simulator (TCP port 57832 on `sim`), as the endpoints do.
# Reports go to /logs (iperf.log, one line a second) when it is mounted.
set -uo pipefail

ROLE=${ROLE:-}
CLIENT=${CLIENT:-client4}
IPERF_CONGESTION=${IPERF_CONGESTION:-cubic}
DURATION=${DURATION:-3600}
PORT=${IPERF_PORT:-5201}

case "$IPERF_CONGESTION" in
    cubic | reno) ;;
    *) echo "flowshare-iperf: IPERF_CONGESTION must be cubic or reno, not '$IPERF_CONGESTION'" >&2; exit 2 ;;
esac
if [[ "${SKIP_SETUP:-0}" != "1" ]]; then
    /setup.sh
    for _ in $(seq 1 60); do
        timeout 1 bash -c 'exec 3<>/dev/tcp/sim/57832' 2>/dev/null && break
        sleep 0.5
    done
fi
log=/dev/null
if [[ -d /logs && -w /logs ]]; then
    log=/logs/iperf.log
fi

case "$ROLE" in
    client)
        echo "flowshare-iperf: receiver on port $PORT"
        iperf3 --server --port "$PORT" --interval 1 --forceflush 2>&1 | tee -a "$log"
        ;;
    server)
        echo "flowshare-iperf: waiting for the receiver at $CLIENT:$PORT"
        for _ in $(seq 1 100); do
            timeout 1 bash -c "exec 3<>/dev/tcp/$CLIENT/$PORT" 2>/dev/null && break
            sleep 0.2
        done
        # Namespaces inherit the host's default congestion control (bbr on
        # some hosts): always name it, and check that the kernel has it.
        if ! grep -qw "$IPERF_CONGESTION" /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null; then
            echo "flowshare-iperf: the kernel offers no $IPERF_CONGESTION ($(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null))" >&2
            exit 1
        fi
        echo "flowshare-iperf: sending to $CLIENT:$PORT with $IPERF_CONGESTION for $DURATION s"
        status=1
        for attempt in 1 2 3 4 5; do
            started=$SECONDS
            iperf3 --client "$CLIENT" --port "$PORT" --time "$DURATION" --interval 1 --forceflush \
                --congestion "$IPERF_CONGESTION" 2>&1 | tee -a "$log"
            status=${PIPESTATUS[0]}
            # The wait above is a test to the receiver, which it ends with an
            # error and a reset; a sender that meets that reset fails at once
            # ("unable to receive control message"): start again.
            if ((status == 0 || SECONDS - started > 5)); then
                break
            fi
            echo "flowshare-iperf: iperf3 failed to start (exit $status, attempt $attempt of 5); again in 1 s"
            sleep 1
        done
        exit "$status"
        ;;
    *)
        echo "flowshare-iperf: ROLE must be client or server, not '$ROLE'" >&2
        exit 1
        ;;
esac
