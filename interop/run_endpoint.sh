#!/usr/bin/env bash
# flowshare's endpoint for the QUIC interop runner
# (https://github.com/quic-interop/quic-interop-runner).
#
# The runner starts the endpoint image with:
#   ROLE           server | client
#   TESTCASE       the test case (the runner passes a test's "testname":
#                  handshake, transfer, http3, multiconnect, ...)
#   REQUESTS       client: space-separated URLs to download
#   SSLKEYLOGFILE  where to write TLS secrets
#   QLOGDIR        where to write one qlog per connection
#   SERVER_PARAMS, CLIENT_PARAMS   extra arguments for flowshare serve / get
# and expects the server to serve /www on port 443 with /certs/cert.pem and
# /certs/priv.key, and the client to write each file to /downloads.
#
# flowshare adds CC: the controller spec for every connection of this
# endpoint (e.g. CC=multcp:n=4, CC=multfrc:n=0.5; default cubic), so that
# the runner's measurements (goodput, crosstraffic) can be repeated per
# controller. A server policy goes in SERVER_PARAMS ("--policy FILE").
#
# Outside the runner (local tests) the paths and the port can be changed
# with WWW, DOWNLOADS, CERTS, PORT (or LISTEN), LOGS, FLOWSHARE (the
# binary), and
# SKIP_SETUP=1 skips the container's network setup and the wait for the
# simulator.
#
# Exit codes: 0 success, 127 test case not supported, other: failure.
set -uo pipefail

ROLE=${ROLE:-}
TESTCASE=${TESTCASE:-}
WWW=${WWW:-/www}
DOWNLOADS=${DOWNLOADS:-/downloads}
CERTS=${CERTS:-/certs}
PORT=${PORT:-443}
LISTEN=${LISTEN:-[::]:$PORT}
LOGS=${LOGS:-/logs}
FLOWSHARE=${FLOWSHARE:-/usr/local/bin/flowshare}
CC=${CC:-cubic}

# Test cases by the names the runner passes (testname) and by the names the
# runner shows, which some scripts pass instead. handshakeloss and
# handshakecorruption run as multiconnect; the measurements and the
# network-condition tests as transfer.
case "$TESTCASE" in
    handshake | longrtt) MODE=single ;;
    transfer | multiplexing | goodput | crosstraffic | blackhole | transferloss \
        | transfercorruption | amplificationlimit | ipv6) MODE=single ;;
    http3) MODE=single ;;
    multiconnect | handshakeloss | handshakecorruption) MODE=multiconnect ;;
    *)
        echo "flowshare run_endpoint: test case ${TESTCASE:-(none)} is not supported" >&2
        exit 127
        ;;
esac

# The interop runner's HTTP/3 test uses h3; every other test hq-interop.
if [[ "$TESTCASE" == "http3" ]]; then
    ALPN=h3
else
    ALPN=hq-interop
fi

if [[ "${SKIP_SETUP:-0}" != "1" && -x /setup.sh ]]; then
    /setup.sh
fi

log_to() {
    # Output goes to the container's log and, when there is one, to /logs.
    if [[ -d "$LOGS" && -w "$LOGS" ]]; then
        tee -a "$LOGS/$1.log"
    else
        cat
    fi
}

case "$ROLE" in
    server)
        # shellcheck disable=SC2086 # SERVER_PARAMS is a list of arguments
        "$FLOWSHARE" serve --listen "$LISTEN" --root "$WWW" \
            --cert "$CERTS/cert.pem" --key "$CERTS/priv.key" \
            --cc "$CC" --stats ${SERVER_PARAMS:-} 2>&1 | log_to server
        exit "${PIPESTATUS[0]}"
        ;;
    client)
        if [[ "${SKIP_SETUP:-0}" != "1" ]]; then
            # Wait for the network simulator (the runner's wait-for-it.sh,
            # without its dependencies).
            for _ in $(seq 1 60); do
                if timeout 1 bash -c 'exec 3<>/dev/tcp/sim/57832' 2>/dev/null; then
                    break
                fi
                sleep 0.5
            done
        fi
        read -r -a URLS <<< "${REQUESTS:-}"
        if [[ ${#URLS[@]} -eq 0 ]]; then
            echo "flowshare run_endpoint: REQUESTS is empty" >&2
            exit 1
        fi
        EXTRA=()
        if [[ "$MODE" == multiconnect ]]; then
            EXTRA+=(--connection-per-url)
        fi
        mkdir -p "$DOWNLOADS"
        # shellcheck disable=SC2086 # CLIENT_PARAMS is a list of arguments
        "$FLOWSHARE" get --out "$DOWNLOADS" --insecure --alpn "$ALPN" \
            --cc "$CC" --stats "${EXTRA[@]}" ${CLIENT_PARAMS:-} "${URLS[@]}" 2>&1 | log_to client
        exit "${PIPESTATUS[0]}"
        ;;
    *)
        echo "flowshare run_endpoint: ROLE must be server or client, not '${ROLE}'" >&2
        exit 1
        ;;
esac
