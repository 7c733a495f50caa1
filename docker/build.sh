#!/usr/bin/env bash
# Builds every container image of flowshare from nothing: no image registry,
# only the Debian mirror apt uses and PyPI.
#
#   docker/build.sh [--images LIST] [--binary PATH] [--rebuild-base] [--no-cargo]
#
#   --images LIST    comma-separated subset of: endpoint,sim,iperf,aioquic
#                    (default: all four)
#   --binary PATH    the flowshare binary to put into the endpoint image
#                    (default: target/release/flowshare, built first with
#                    `cargo build --release --bin flowshare`)
#   --no-cargo       do not run cargo; the binary must exist
#   --rebuild-base   debootstrap the base images again even if they exist
#
# What it makes (`docker images` lists them):
#   flowshare-base:bookworm         debootstrap --variant=minbase bookworm with the
#                                   runtime packages of the native images (iproute2,
#                                   ethtool, iptables, iperf3, libns3.37, ...)
#   flowshare-base-python:bookworm  the same with python3 and pip, for aioquic
#   flowshare-endpoint:latest       flowshare serve/get as an interop-runner endpoint
#   flowshare-sim:latest            the project's ns-3 bottleneck (testbed/ns3) as the
#                                   runner's simulator role (docker/sim/run.sh)
#   flowshare-iperf:latest          iperf3 cross traffic (docker/iperf/run.sh)
#   flowshare-aioquic:latest        aioquic (PyPI) behind our own runner endpoint
#                                   (docker/aioquic/)
#
# On a bare machine it first installs what it needs with apt-get (as root):
# debootstrap, g++ and Debian's ns-3 (to build the bottleneck program), pip.
# The base images are kept: a second build only re-copies the binaries and
# scripts (seconds). Debian packages and wheels are cached under
# build/docker/ so that --rebuild-base does not download them again.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
cache="$root/build/docker"
binary="${CARGO_TARGET_DIR:-$root/target}/release/flowshare"
images=endpoint,sim,iperf,aioquic
rebuild_base=0
run_cargo=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --images) images=$2; shift 2 ;;
        --binary) binary=$2; run_cargo=0; shift 2 ;;
        --no-cargo) run_cargo=0; shift ;;
        --rebuild-base) rebuild_base=1; shift ;;
        -h | --help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "usage: $0 [--images endpoint,sim,iperf,aioquic] [--binary PATH] [--no-cargo] [--rebuild-base]" >&2; exit 2 ;;
    esac
done
for image in ${images//,/ }; do
    case "$image" in
        endpoint | sim | iperf | aioquic) ;;
        *) echo "error: unknown image '$image' in --images (known: endpoint, sim, iperf, aioquic)" >&2; exit 2 ;;
    esac
done
want() { [[ ",$images," == *",$1,"* ]]; }

started=$(date +%s)
say() { echo "== [$(($(date +%s) - started)) s] $*"; }

# --- what the host needs -------------------------------------------------
command -v docker >/dev/null || { echo "error: docker is not installed (apt-get install docker.io)" >&2; exit 1; }
docker version --format '{{.Server.Version}}' >/dev/null 2>&1 \
    || { echo "error: no Docker engine answers (is dockerd running? docker version says: $(docker version 2>&1 | tail -n 1))" >&2; exit 1; }
needed=()
command -v debootstrap >/dev/null || [[ -x /usr/sbin/debootstrap ]] || needed+=(debootstrap)
if want sim; then
    command -v g++ >/dev/null || needed+=(g++)
    [[ -d /usr/include/ns3 ]] || needed+=(ns3 libns3-dev)
fi
if want aioquic; then
    python3 -m pip --version >/dev/null 2>&1 || needed+=(python3-pip)
fi
command -v strip >/dev/null || needed+=(binutils)
if ((${#needed[@]} > 0)); then
    [[ $(id -u) -eq 0 ]] || { echo "error: missing ${needed[*]}; run as root or apt-get install them" >&2; exit 1; }
    say "installing ${needed[*]}"
    log=$(mktemp /tmp/flowshare-apt.XXXXXX)
    if ! { apt-get update -qq -o DPkg::Lock::Timeout=300 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        -o DPkg::Lock::Timeout=600 "${needed[@]}"; } >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        rm -f "$log"
        echo "error: apt-get could not install ${needed[*]}" >&2
        exit 1
    fi
    rm -f "$log"
fi
[[ $(id -u) -eq 0 ]] || { echo "error: debootstrap needs root; run docker/build.sh as root" >&2; exit 1; }
PATH=$PATH:/usr/sbin:/sbin

scratch=$(mktemp -d /tmp/flowshare-docker.XXXXXX)
cleanup() { rm -rf "$scratch"; }
trap cleanup EXIT

# --- host-built binaries -------------------------------------------------
if want endpoint; then
    if [[ $run_cargo == 1 ]]; then
        say "cargo build --release --bin flowshare"
        (cd "$root" && cargo build --release --bin flowshare --quiet)
    fi
    [[ -x "$binary" ]] || { echo "error: no flowshare binary at $binary (cargo build --release --bin flowshare, or --binary PATH)" >&2; exit 1; }
fi
if want sim; then
    say "ns-3 bottleneck program (testbed/ns3)"
    bottleneck=$("$root/testbed/ns3/build.sh")
fi

# --- base images ----------------------------------------------------------
# debootstrap_image TAG PACKAGES: a minimal Debian with PACKAGES added at
# debootstrap time, imported as TAG (skipped when TAG exists).
debootstrap_image() {
    local tag=$1 packages=$2
    if [[ $rebuild_base == 0 ]] && docker image inspect "$tag" >/dev/null 2>&1; then
        say "base $tag exists (kept; --rebuild-base to make it again)"
        return
    fi
    say "base $tag: debootstrap $suite from $mirror with $packages"
    local rootfs="$scratch/rootfs-${tag//[:\/]/-}"
    mkdir -p "$cache/debs"
    if ! debootstrap --variant=minbase --cache-dir="$cache/debs" --include="$packages" \
        "$suite" "$rootfs" "$mirror" >"$scratch/debootstrap.log" 2>&1; then
        tail -n 20 "$scratch/debootstrap.log" >&2
        echo "error: debootstrap of $tag failed (log above)" >&2
        exit 1
    fi
    # What an image does not need: package lists and caches, documentation.
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/doc/* \
        "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
    tar -C "$rootfs" --numeric-owner -c . \
        | docker import --change 'CMD ["/bin/bash"]' --message "debootstrap --variant=minbase $suite + $packages" \
            - "$tag" >/dev/null
    rm -rf "$rootfs"
    say "   $(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}') $tag"
}

native=0
for image in endpoint sim iperf; do want $image && native=1; done
if [[ $native == 1 ]]; then
    debootstrap_image flowshare-base:bookworm \
        iproute2,ethtool,iptables,libstdc++6,ca-certificates,procps,iperf3,libns3.37
fi
if want aioquic; then
    debootstrap_image flowshare-base-python:bookworm \
        iproute2,ethtool,ca-certificates,procps,python3,python3-pip
fi

# build_image TAG CONTEXT: docker build of a prepared context (classic
# builder, no network: everything is in the context).
build_image() {
    local tag=$1 context=$2 previous
    previous=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
    DOCKER_BUILDKIT=0 docker build --quiet --network none -t "$tag" "$context" >"$scratch/build.log" 2>&1 \
        || { cat "$scratch/build.log" >&2; echo "error: docker build of $tag failed" >&2; exit 1; }
    # The image this one replaces, unless something still uses it.
    if [[ -n "$previous" && "$previous" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]]; then
        docker rmi "$previous" >/dev/null 2>&1 || true
    fi
    say "   $(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}') $tag"
}

# check_libraries TAG PROGRAM: every shared library PROGRAM needs resolves
# inside the image.
check_libraries() {
    local missing
    missing=$(docker run --rm --network none --entrypoint ldd "$1" "$2" | grep "not found" || true)
    [[ -z "$missing" ]] || { echo "error: libraries missing in $1 for $2: $missing" >&2; exit 1; }
}

# native_image TAG BINARY NAME FILE...: TAG from the native base with the
# host-built BINARY as NAME (debug info stripped: the release profile keeps
# some for profiling, and it is most of the size) and the FILEs beside it;
# every library the binary needs is checked inside the image.
native_image() {
    local tag=$1 binary=$2 name=$3
    shift 3
    say "image $tag ($binary)"
    local context="$scratch/$name"
    mkdir -p "$context"
    cp "$binary" "$context/$name"
    strip --strip-debug "$context/$name" 2>/dev/null || true
    cp "$@" "$context/"
    chmod 0755 "$context/$name" "$context"/*.sh
    build_image "$tag" "$context"
    check_libraries "$tag" "/usr/local/bin/$name"
}

if want endpoint; then
    native_image flowshare-endpoint:latest "$binary" flowshare \
        "$root/interop/run_endpoint.sh" "$here/endpoint/setup.sh" "$here/endpoint/Dockerfile"
fi
if want sim; then
    native_image flowshare-sim:latest "$bottleneck" bottleneck "$here/sim/run.sh" "$here/sim/Dockerfile"
fi

if want iperf; then
    say "image flowshare-iperf:latest"
    context="$scratch/iperf"
    mkdir -p "$context"
    cp "$here/iperf/run.sh" "$here/iperf/Dockerfile" "$here/endpoint/setup.sh" "$context/"
    chmod 0755 "$context/run.sh" "$context/setup.sh"
    build_image flowshare-iperf:latest "$context"
fi

if want aioquic; then
    # aioquic and its dependencies as wheels from PyPI for the image's
    # Python (bookworm: CPython 3.11, glibc 2.36), kept in the cache.
    wheels="$cache/wheels"
    if ! ls "$wheels"/aioquic-*.whl >/dev/null 2>&1; then
        say "aioquic wheels from PyPI"
        mkdir -p "$wheels"
        python3 -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
            --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
            --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
            --platform manylinux2014_x86_64 --platform any \
            -d "$wheels" "aioquic${AIOQUIC_VERSION:+==$AIOQUIC_VERSION}" \
            || { echo "error: pip could not download aioquic from PyPI" >&2; exit 1; }
    fi
    say "image flowshare-aioquic:latest ($(basename "$(ls "$wheels"/aioquic-*.whl | tail -n 1)"))"
    context="$scratch/aioquic"
    mkdir -p "$context/wheels"
    cp "$wheels"/*.whl "$context/wheels/"
    cp "$here/aioquic/Dockerfile" "$here/aioquic/run_endpoint.sh" "$here/aioquic/endpoint.py" \
        "$here/endpoint/setup.sh" "$context/"
    chmod 0755 "$context/run_endpoint.sh" "$context/setup.sh" "$context/endpoint.py"
    build_image flowshare-aioquic:latest "$context"
    docker run --rm --network none --entrypoint python3 flowshare-aioquic:latest -c \
        'import aioquic; print("   aioquic", aioquic.__version__)'
fi

say "done in $(($(date +%s) - started)) s"
docker images --filter 'reference=flowshare-*' --format '   {{.Repository}}:{{.Tag}}  {{.Size}}'
