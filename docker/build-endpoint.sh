#!/usr/bin/env bash
# Builds flowshare's interop-runner endpoint image from nothing: no registry.
#
#   docker/build-endpoint.sh [--binary PATH] [--rebuild-base] [--base-only] [--smoke]
#
# 1. Base image `flowshare-base:bookworm` (skipped when it exists, unless
#    --rebuild-base): debootstrap a minimal Debian bookworm rootfs (the
#    packages the endpoint needs: bash, iproute2, ethtool for the network
#    set-up, libstdc++6 for BoringSSL) from the Debian mirror apt uses, and
#    `docker import` it.
# 2. Endpoint image `flowshare-endpoint:latest` from that base: the flowshare
#    binary (default: the release build, `cargo build --release --bin
#    flowshare`), interop/run_endpoint.sh and docker/endpoint/setup.sh, in
#    the runner's endpoint layout (see docker/endpoint/Dockerfile). The
#    build checks that every library the binary needs resolves inside the
#    image.
# 3. With --smoke: a server and a client container on a throw-away docker
#    network (198.18.77.0/24), the client fetching two files with
#    TESTCASE=transfer and then with http3, compared byte for byte; and
#    TESTCASE=retry must exit 127. Everything it creates is removed.
#
# The ns-3 simulator image and the compose files of the runner's layout are
# the testbed's (testbed/), not built here.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
base_image=flowshare-base:bookworm
endpoint_image=flowshare-endpoint:latest
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
binary="${CARGO_TARGET_DIR:-$root/target}/release/flowshare"
rebuild_base=0
base_only=0
smoke=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --binary) binary=$2; shift 2 ;;
        --rebuild-base) rebuild_base=1; shift ;;
        --smoke) smoke=1; shift ;;
        --base-only) base_only=1; shift ;;
        *) echo "usage: $0 [--binary PATH] [--rebuild-base] [--base-only] [--smoke]" >&2; exit 2 ;;
    esac
done

scratch=$(mktemp -d /tmp/flowshare-docker.XXXXXX)
network=
containers=()
cleanup() {
    for container in "${containers[@]}"; do docker rm -f "$container" >/dev/null 2>&1 || true; done
    [[ -n "$network" ]] && docker network rm "$network" >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT

if [[ $rebuild_base == 1 ]] || ! docker image inspect "$base_image" >/dev/null 2>&1; then
    echo "== base: debootstrap bookworm from $mirror"
    rootfs="$scratch/rootfs"
    debootstrap --variant=minbase --include=iproute2,ethtool,libstdc++6,ca-certificates,procps \
        bookworm "$rootfs" "$mirror" > "$scratch/debootstrap.log" 2>&1 \
        || { tail -n 20 "$scratch/debootstrap.log" >&2; exit 1; }
    # What an image does not need: package lists and caches, documentation.
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
    tar -C "$rootfs" --numeric-owner -c . \
        | docker import --change 'CMD ["/bin/bash"]' --message "debootstrap --variant=minbase bookworm" - "$base_image" >/dev/null
    rm -rf "$rootfs"
    echo "   $(docker image inspect --format '{{.Size}}' "$base_image" | awk '{printf "%.0f MB", $1/1e6}') $base_image"
fi

[[ $base_only == 1 ]] && exit 0
[[ -x "$binary" ]] || { echo "error: no flowshare binary at $binary (cargo build --release --bin flowshare, or --binary)" >&2; exit 1; }
echo "== endpoint: $binary"
context="$scratch/context"
mkdir -p "$context"
cp "$binary" "$context/flowshare"
# Debug info (the release profile keeps some for profiling) is most of the size.
strip --strip-debug "$context/flowshare" 2>/dev/null || true
cp "$root/interop/run_endpoint.sh" "$here/endpoint/setup.sh" "$here/endpoint/Dockerfile" "$context/"
chmod 0755 "$context/flowshare" "$context/run_endpoint.sh" "$context/setup.sh"
DOCKER_BUILDKIT=0 docker build --quiet --build-arg "BASE=$base_image" -t "$endpoint_image" "$context" >/dev/null
missing=$(docker run --rm --entrypoint ldd "$endpoint_image" /usr/local/bin/flowshare | grep "not found" || true)
[[ -z "$missing" ]] || { echo "error: libraries missing in the image: $missing" >&2; exit 1; }
echo "   $(docker image inspect --format '{{.Size}}' "$endpoint_image" | awk '{printf "%.0f MB", $1/1e6}') $endpoint_image ($(docker run --rm --entrypoint /usr/local/bin/flowshare "$endpoint_image" --version))"

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
