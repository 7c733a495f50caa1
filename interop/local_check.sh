#!/usr/bin/env bash
# Runs run_endpoint.sh as server and client against each other, outside
# docker, with the interop runner's network conditions emulated in userspace.
#
#   interop/local_check.sh [TESTCASE...]      (default: all supported)
#   FLOWSHARE=path/to/flowshare CC=multcp:n=4 interop/local_check.sh transferloss
#
# The client talks to the server through impair.py, a UDP relay with the
# shape of the runner's ns-3 scenarios (testcases_quic.py): 10 Mbit/s,
# 15 ms each way, a 25-packet queue, plus the test's loss, delay or
# blackout (this kernel has no netem). The runner's crosstraffic adds a TCP
# iperf flow; here it runs as goodput with the larger file. For each test
# the script creates the runner's files, runs both roles on 127.0.0.1 with
# the runner's TESTCASE value for each role, and checks what the runner
# checks that does not need a packet capture: exit codes, every file byte
# for byte, the number of handshakes (connections, from the client's stats
# lines), and per test: a Retry and its token (retry, from the server's
# log), a resumed second handshake (resumption, zerortt) and 0-RTT packets
# (zerortt, from the client's qlog). A test case that either role does not
# support (run_endpoint.sh exits 127) is reported as unsupported with the
# reason, not as a failure. Everything it starts is stopped, and its files
# removed, on exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FLOWSHARE=${FLOWSHARE:-$here/../target/release/flowshare}
CC=${CC:-cubic}
[[ -x "$FLOWSHARE" ]] || { echo "no flowshare binary at $FLOWSHARE (set FLOWSHARE)" >&2; exit 1; }
tests=("$@")
if [[ ${#tests[@]} -eq 0 ]]; then
    tests=(handshake transfer multiplexing multiplexingloss http3 goodput crosstraffic blackhole longrtt handshakeloss
        transferloss retry resumption zerortt chacha20 keyupdate connectionmigration ecn v2)
fi

server_port=$((20000 + $$ % 20000))
relay_port=$((server_port + 1))
work=$(mktemp -d /tmp/flowshare-interop.XXXXXX)
server_pid=
relay_pid=

stop() {
    # Each helper runs in its own process group (setsid), stopped as a whole.
    [[ -n "$1" ]] || return 0
    kill -- "-$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    # The server closes its connections before it exits: wait for the group.
    for _ in $(seq 1 50); do
        kill -0 -- "-$1" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL -- "-$1" 2>/dev/null || true
}
cleanup() {
    stop "$relay_pid"
    stop "$server_pid"
    rm -rf "$work"
}
trap cleanup EXIT

random_file() { head -c "$2" /dev/urandom > "$work/www/$1"; }

failures=0
unsupported=0
for test in "${tests[@]}"; do
    rm -rf "$work/www" "$work/downloads" "$work/logs"
    mkdir -p "$work/www" "$work/downloads" "$work/logs" "$work/certs"
    [[ -f "$work/certs/cert.pem" ]] || { "$FLOWSHARE" cert --out "$work/certs" --name server4 >/dev/null; mv "$work/certs/key.pem" "$work/certs/priv.key"; }
    testcase=$test handshakes=1 delay=15 loss=0 blackout= files=() server_testcase= client_testcase=
    case "$test" in
        handshake) files=(a:1000) ;;
        transfer) files=(a:2097152 b:3145728 c:5242880) ;;
        multiplexing) testcase=transfer; for i in $(seq 1 1999); do files+=("m$i:32"); done ;;
        # The runner's multiplexing case through a lossy link: request lines
        # that quiche takes only in part must be continued, not repeated.
        multiplexingloss) testcase=transfer; loss=0.05; for i in $(seq 1 1999); do files+=("m$i:32"); done ;;
        http3) files=(a:5120 b:10240 c:512000) ;;
        goodput) testcase=transfer; files=(a:10485760) ;;
        crosstraffic) testcase=transfer; files=(a:26214400) ;;
        blackhole) testcase=transfer; blackout=5,2; files=(a:10485760) ;;
        longrtt) testcase=handshake; delay=750; files=(a:1000) ;;
        handshakeloss) testcase=multiconnect; loss=0.3; handshakes=50; for i in $(seq 1 50); do files+=("h$i:1024"); done ;;
        transferloss) testcase=transfer; loss=0.02; files=(a:2097152) ;;
        retry) files=(a:10240) ;;
        resumption) handshakes=2; files=(a:5120 b:10240) ;;
        zerortt)
            # 40 files of 32 bytes with 250-letter names: the requests
            # themselves are what 0-RTT must carry.
            handshakes=2
            for i in $(seq 1 40); do files+=("$(printf 'z%03d%0246d' "$i" 0):32"); done
            ;;
        chacha20) files=(a:3145728) ;;
        keyupdate) server_testcase=transfer; files=(a:3145728) ;;
        connectionmigration) client_testcase=transfer; files=(a:2097152) ;;
        ecn) files=(a:102400) ;;
        v2) files=(a:1024) ;;
        *) echo "$test: not a test case this script knows" >&2; failures=$((failures + 1)); continue ;;
    esac
    server_testcase=${server_testcase:-$testcase} client_testcase=${client_testcase:-$testcase}
    reason=
    for role in server client; do
        role_testcase=server_testcase
        [[ $role == client ]] && role_testcase=client_testcase
        if ! reason=$(CHECK_SUPPORT=1 ROLE=$role TESTCASE=${!role_testcase} "$here/run_endpoint.sh" 2>&1); then
            break
        fi
        reason=
    done
    if [[ -n "$reason" ]]; then
        unsupported=$((unsupported + 1))
        printf '%-19s %-7s %s\n' "$test" "n/a" "${reason#flowshare run_endpoint: }"
        continue
    fi
    requests=()
    for file in "${files[@]}"; do
        random_file "${file%%:*}" "${file##*:}"
        requests+=("https://127.0.0.1:$relay_port/${file%%:*}")
    done

    common=(env WWW="$work/www" DOWNLOADS="$work/downloads" CERTS="$work/certs" LOGS="$work/logs" FLOWSHARE="$FLOWSHARE"
        SKIP_SETUP=1 CC="$CC" QLOGDIR="$work/logs/qlog" SSLKEYLOGFILE="$work/logs/keys.log")
    setsid "${common[@]}" ROLE=server TESTCASE="$server_testcase" LISTEN="127.0.0.1:$server_port" \
        "$here/run_endpoint.sh" >/dev/null 2>&1 &
    server_pid=$!
    setsid python3 "$here/impair.py" --listen "127.0.0.1:$relay_port" --server "127.0.0.1:$server_port" \
        --delay-ms "$delay" --loss "$loss" ${blackout:+--blackout "$blackout"} >/dev/null 2>&1 &
    relay_pid=$!
    sleep 0.5
    started=$(date +%s.%N)
    set +e
    "${common[@]}" ROLE=client TESTCASE="$client_testcase" REQUESTS="${requests[*]}" "$here/run_endpoint.sh" \
        >"$work/logs/client.out" 2>&1
    status=$?
    set -e
    elapsed=$(echo "$(date +%s.%N) - $started" | bc)
    stop "$relay_pid"
    stop "$server_pid"
    relay_pid= server_pid=

    bad=0
    for file in "${files[@]}"; do
        cmp -s "$work/www/${file%%:*}" "$work/downloads/${file%%:*}" || bad=$((bad + 1))
    done
    connections=$(grep -c '^stats role=client' "$work/logs/client.out" || true)
    goodput=$(grep -o '^total: .*' "$work/logs/client.out" | grep -o '[0-9.]* Mbit/s' || true)
    # What the test case itself is about, where the logs show it.
    special=ok detail=
    case "$test" in
        retry)
            grep -q 'event=connection_accepted .*retried=true' "$work/logs/server.log" || special="no Retry"
            detail="retry=$([[ $special == ok ]] && echo yes || echo no)"
            ;;
        resumption | zerortt)
            resumed=$(grep '^stats role=client' "$work/logs/client.out" | grep -o 'resumed=[a-z]*' | tr '\n' ' ')
            [[ "$resumed" == "resumed=no resumed=yes " ]] || special="resumed: $resumed"
            detail="second handshake $(echo "$resumed" | awk '{print $2}')"
            if [[ $test == zerortt ]]; then
                zero_rtt=$(cat "$work"/logs/qlog/client-*.sqlog 2>/dev/null \
                    | grep -c '"name":"quic:packet_sent".*"packet_type":"0RTT"' || true)
                [[ $zero_rtt -gt 0 ]] || special="no 0-RTT packets"
                detail="$detail 0rtt_packets=$zero_rtt"
            fi
            ;;
    esac
    if [[ $status -eq 0 && $bad -eq 0 && $connections -eq $handshakes && $special == ok ]]; then
        verdict=ok
    else
        verdict=FAILED
        failures=$((failures + 1))
        tail -n 5 "$work/logs/client.out" | sed "s/^/    $test: /"
    fi
    [[ $special == ok ]] || detail="$detail ($special)"
    printf '%-19s %-7s exit=%s files=%d/%d handshakes=%d/%d %.1fs %s %s\n' "$test" "$verdict" "$status" \
        $((${#files[@]} - bad)) "${#files[@]}" "$connections" "$handshakes" "$elapsed" "$goodput" "$detail"
done
echo "$((${#tests[@]} - failures - unsupported)) passed, $failures failed, $unsupported unsupported"
exit $((failures > 0))
