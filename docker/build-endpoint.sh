#!/usr/bin/env bash
# Builds flowshare's interop-runner endpoint image (flowshare-endpoint:latest)
# from nothing, no registry: a thin wrapper around docker/build.sh, which
# builds every image (endpoint, simulator, iperf, aioquic) the same way.
#
#   docker/build-endpoint.sh [--binary PATH] [--rebuild-base] [--smoke]
#
# --binary PATH    the flowshare binary (default: the release build, made
#                  first with `cargo build --release --bin flowshare`)
# --rebuild-base   debootstrap flowshare-base:bookworm again
# --smoke          afterwards, a server and a client container on a throw-away
#                  docker network (198.18.77.0/24, no simulator), the client
#                  fetching two files with TESTCASE=transfer and then with
#                  http3, compared byte for byte; and TESTCASE=retry must exit
#                  127. Everything it creates is removed.
#
# The runner's whole layout (simulator, compose, the matrix) is in
# docker/README.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
endpoint_image=flowshare-endpoint:latest
binary="${CARGO_TARGET_DIR:-$root/target}/release/flowshare"
build_args=(--images endpoint)
smoke=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --binary) binary=$2; build_args+=(--binary "$2"); shift 2 ;;
        --rebuild-base) build_args+=(--rebuild-base); shift ;;
        --smoke) smoke=1; shift ;;
        *) echo "usage: $0 [--binary PATH] [--rebuild-base] [--smoke]" >&2; exit 2 ;;
    esac
done

"$here/build.sh" "${build_args[@]}"
[[ $smoke == 1 ]] || exit 0

scratch=$(mktemp -d /tmp/flowshare-docker.XXXXXX)
network=
containers=()
cleanup() {
    for container in "${containers[@]}"; do docker rm -f "$container" >/dev/null 2>&1 || true; done
    [[ -n "$network" ]] && docker network rm "$network" >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT

if [[ $smoke == 1 ]]; then
    echo "== smoke test"
    network=flowshare-smoke-$$
    docker network create --subnet 198.18.77.0/24 "$network" >/dev/null
    mkdir -p "$scratch/www" "$scratch/certs"
    head -c 3000000 /dev/urandom > "$scratch/www/a"
    head -c 100000 /dev/urandom > "$scratch/www/b"
    "$binary" cert --out "$scratch/certs" --name server >/dev/null
    mv "$scratch/certs/key.pem" "$scratch/certs/priv.key"
    server=flowshare-smoke-server-$$
    containers+=("$server")
    docker run -d --name "$server" --network "$network" --network-alias server --cap-add NET_ADMIN \
        -e ROLE=server -e TESTCASE=transfer -e SKIP_SETUP=1 -e CC=multcp:n=2 \
        -v "$scratch/www:/www:ro" -v "$scratch/certs:/certs:ro" "$endpoint_image" >/dev/null
    status=0
    for testcase in transfer http3; do
        rm -rf "$scratch/downloads"
        mkdir -p "$scratch/downloads"
        client=flowshare-smoke-client-$testcase-$$
        containers+=("$client")
        docker run --name "$client" --network "$network" -e ROLE=client -e TESTCASE=$testcase -e SKIP_SETUP=1 \
            -e REQUESTS="https://server:443/a https://server:443/b" -v "$scratch/downloads:/downloads" \
            "$endpoint_image" > "$scratch/client.log" 2>&1 || status=$?
        if [[ $status == 0 ]] && cmp -s "$scratch/www/a" "$scratch/downloads/a" && cmp -s "$scratch/www/b" "$scratch/downloads/b"; then
            echo "   $testcase: ok ($(grep -o 'total: .*' "$scratch/client.log"))"
        else
            echo "   $testcase: FAILED (exit $status)"; cat "$scratch/client.log"; exit 1
        fi
    done
    unsupported=0
    docker run --rm --network "$network" -e ROLE=client -e TESTCASE=retry -e SKIP_SETUP=1 "$endpoint_image" >/dev/null 2>&1 || unsupported=$?
    [[ $unsupported == 127 ]] || { echo "   retry: expected exit 127, got $unsupported"; exit 1; }
    echo "   retry: exit 127 (unsupported), as the runner expects"
    docker logs "$server" 2>&1 | grep '^stats' | sed 's/^/   server /'
fi
