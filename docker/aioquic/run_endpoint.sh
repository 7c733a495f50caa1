#!/usr/bin/env bash
# QUIC interop runner endpoint for aioquic (PyPI), written for flowshare's
# container matrix: a peer that no one in this project wrote.
#
# The runner's contract, as interop/run_endpoint.sh follows it:
#   ROLE           server | client
#   TESTCASE       handshake, transfer, http3, multiconnect (and the runner's
#                  other names for them); anything else exits 127
#   REQUESTS       client: space-separated URLs
#   SSLKEYLOGFILE  TLS secrets; QLOGDIR: one qlog per connection
#   /www, /downloads, /certs/cert.pem and /certs/priv.key, port 443
# and one of flowshare's: CC=reno|cubic (aioquic's congestion control,
# default cubic). SKIP_SETUP=1 skips the routing set-up and the wait for
# the simulator; CHECK_SUPPORT=1 only says whether TESTCASE is supported.
set -uo pipefail

ROLE=${ROLE:-}
TESTCASE=${TESTCASE:-}
CC=${CC:-cubic}

unsupported() {
    echo "aioquic run_endpoint: test case ${TESTCASE:-(none)} is not supported${1:+: $1}" >&2
    exit 127
}
case "$TESTCASE" in
    handshake | longrtt | transfer | multiplexing | goodput | crosstraffic | blackhole | transferloss \
        | transfercorruption) MODE=single ;;
    http3) MODE=single ;;
    multiconnect | handshakeloss | handshakecorruption) MODE=multiconnect ;;
    *) unsupported "this endpoint implements handshake, transfer, http3 and multiconnect" ;;
esac
case "$CC" in
    reno | cubic) ;;
    *) echo "aioquic run_endpoint: CC must be reno or cubic for aioquic, not '$CC'" >&2; exit 2 ;;
esac
[[ "${CHECK_SUPPORT:-0}" == "1" ]] && exit 0
if [[ "$TESTCASE" == "http3" ]]; then ALPN=h3; else ALPN=hq-interop; fi

if [[ "${SKIP_SETUP:-0}" != "1" && -x /setup.sh ]]; then
    /setup.sh
fi
LOGS=${LOGS:-/logs}
log_to() {
    if [[ -d "$LOGS" && -w "$LOGS" ]]; then tee -a "$LOGS/$1.log"; else cat; fi
}

case "$ROLE" in
    server)
        python3 -u /endpoint.py server --alpn "$ALPN" --cc "$CC" --www "${WWW:-/www}" \
            --certs "${CERTS:-/certs}" --port "${PORT:-443}" 2>&1 | log_to server
        exit "${PIPESTATUS[0]}"
        ;;
    client)
        if [[ "${SKIP_SETUP:-0}" != "1" ]]; then
            for _ in $(seq 1 60); do
                timeout 1 bash -c 'exec 3<>/dev/tcp/sim/57832' 2>/dev/null && break
                sleep 0.5
            done
        fi
        # shellcheck disable=SC2086 # REQUESTS is a list of URLs
        python3 -u /endpoint.py client --alpn "$ALPN" --cc "$CC" --mode "$MODE" \
            --downloads "${DOWNLOADS:-/downloads}" ${REQUESTS:-} 2>&1 | log_to client
        exit "${PIPESTATUS[0]}"
        ;;
    *)
        echo "aioquic run_endpoint: ROLE must be server or client, not '$ROLE'" >&2
        exit 1
        ;;
esac
