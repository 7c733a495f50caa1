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
# The server writes qlogs from the first packet of each connection
# (--qlog-handshakes), since the runner's qlogs are for debugging handshakes
# too; its other limits keep their defaults (see interop/README.md).
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
# CHECK_SUPPORT=1 only says whether this role supports TESTCASE: exit 0,
# or 127 with the reason on stderr.
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

unsupported() {
    echo "flowshare run_endpoint: test case ${TESTCASE:-(none)} is not supported${1:+ as $ROLE: $1}" >&2
    exit 127
}

# Test cases by the names the runner passes (testname) and by the names the
# runner shows, which some scripts pass instead. handshakeloss and
# handshakecorruption run as multiconnect; the measurements and the
# network-condition tests as transfer. The runner passes keyupdate to the
# client only (the server runs transfer) and connectionmigration to the
# server only (the client runs transfer).
SERVER_EXTRA=() CLIENT_EXTRA=()
case "$TESTCASE" in
    handshake | longrtt) MODE=single ;;
    transfer | multiplexing | goodput | crosstraffic | blackhole | transferloss \
        | transfercorruption | amplificationlimit | ipv6 | rebind-port | rebind-addr) MODE=single ;;
    http3) MODE=single ;;
    multiconnect | handshakeloss | handshakecorruption) MODE=multiconnect ;;
    retry) MODE=single SERVER_EXTRA=(--retry always) ;;
    resumption) MODE=single CLIENT_EXTRA=(--resume) ;;
    zerortt) MODE=single SERVER_EXTRA=(--early-data) CLIENT_EXTRA=(--early-data) ;;
    chacha20)
        # BoringSSL, quiche's TLS library, offers every TLS 1.3 cipher suite
        # and has no setting to offer ChaCha20 alone; a server accepts a
        # client that offers only ChaCha20.
        [[ "$ROLE" == server ]] || unsupported "BoringSSL cannot offer ChaCha20-Poly1305 alone"
        MODE=single
        ;;
    keyupdate)
        [[ "$ROLE" == server ]] || unsupported "quiche 0.30 cannot initiate a key update (it answers the peer's)"
        MODE=single
        ;;
    connectionmigration)
        [[ "$ROLE" == client ]] || unsupported "quiche 0.30 cannot send a preferred_address transport parameter"
        MODE=single
        ;;
    ecn) unsupported "quiche 0.30 neither marks packets ECT nor reports ECN counts" ;;
    v2) unsupported "quiche 0.30 speaks QUIC version 1 only" ;;
    versionnegotiation)
        # The server answers an unknown version in a datagram of 1,200 bytes
        # or more with a Version Negotiation.
        [[ "$ROLE" == server ]] || unsupported "quiche 0.30 clients cannot start with a version they do not speak"
        MODE=single
        ;;
    *) unsupported ;;
esac
if [[ "${CHECK_SUPPORT:-0}" == "1" ]]; then
    exit 0
fi

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
            --cc "$CC" --stats --qlog-handshakes "${SERVER_EXTRA[@]}" ${SERVER_PARAMS:-} 2>&1 | log_to server
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
        EXTRA=("${CLIENT_EXTRA[@]}")
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
