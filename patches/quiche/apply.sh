#!/usr/bin/env bash
# Builds the patched quiche that the workspace's [patch.crates-io] points at.
#
# Fetches quiche's .crate from crates.io with cargo, checks it against the
# pinned sha256, unpacks it into build/quiche as a git repository whose first
# commit (tag `upstream`) is the crate as published, and applies
# patches/quiche/*.patch on top with `git am`. Re-running it is a no-op while
# the crate and the patches are unchanged, and rebuilds the tree otherwise.
#
#   patches/quiche/apply.sh          apply (idempotent)
#   git -C build/quiche diff --stat upstream    what the series changes
set -euo pipefail

VERSION=0.30.0
SHA256=52b35a721a2a56797347929745fa783fc99e680d9484b80324ce40106b75493a

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dest="$root/build/quiche"
stamp_file="$dest/.git/flowshare-patches"
patches=("$here"/*.patch)

stamp=$({ echo "quiche $VERSION $SHA256"; cat "${patches[@]}"; } | sha256sum | cut -d' ' -f1)
if [[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$stamp" ]]; then
    echo "build/quiche: quiche $VERSION with ${#patches[@]} flowshare patch(es), up to date"
    exit 0
fi

cargo_home=${CARGO_HOME:-$HOME/.cargo}
# Empty output, not failure, when cargo has never downloaded anything yet.
cached_crate() {
    [[ -d "$cargo_home/registry/cache" ]] || return 0
    find "$cargo_home/registry/cache" -name "quiche-$VERSION.crate" | head -n 1
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

crate=$(cached_crate)
if [[ -z "$crate" ]]; then
    echo "fetching quiche $VERSION from crates.io"
    mkdir "$scratch/fetch" "$scratch/fetch/src"
    : > "$scratch/fetch/src/lib.rs"
    printf '[package]\nname = "fetch-quiche"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\nquiche = "=%s"\n' \
        "$VERSION" > "$scratch/fetch/Cargo.toml"
    cargo fetch --quiet --manifest-path "$scratch/fetch/Cargo.toml"
    crate=$(cached_crate)
    [[ -n "$crate" ]] || { echo "error: cargo fetched quiche $VERSION but its .crate is not in $cargo_home/registry/cache" >&2; exit 1; }
fi

actual=$(sha256sum "$crate" | cut -d' ' -f1)
if [[ "$actual" != "$SHA256" ]]; then
    echo "error: $crate has sha256 $actual, expected $SHA256; refusing to build from it" >&2
    exit 1
fi

tree="$scratch/quiche"
mkdir "$tree"
tar -xzf "$crate" -C "$tree" --strip-components=1

git_in_tree() {
    git -C "$tree" -c user.name=flowshare -c user.email=flowshare@users.noreply.invalid \
        -c commit.gpgsign=false "$@"
}
git_in_tree init --quiet --initial-branch=main
printf '/target\n' >> "$tree/.git/info/exclude"
git_in_tree add --all
git_in_tree commit --quiet --message "quiche $VERSION as published on crates.io (sha256 $SHA256)"
git_in_tree tag upstream
if ! git_in_tree am --quiet "${patches[@]}"; then
    echo "error: the patch series does not apply to quiche $VERSION" >&2
    exit 1
fi
echo "$stamp" > "$tree/.git/flowshare-patches"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tree" "$dest"
echo "build/quiche: quiche $VERSION verified (sha256 $SHA256), ${#patches[@]} patch(es) applied:"
git -C "$dest" diff --stat upstream HEAD | tail -n 1
