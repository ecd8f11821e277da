#!/usr/bin/env bash
# Builds a real LangGraph server image for the real node's tests, offline, with mmdebstrap and
# buildah in the project's own container store (test/image/containers.sh):
#   Debian 12 minbase + its python3 (3.11), a venv at /opt/langgraph with the packages pinned in
#   requirements.txt (stock langgraph-api 0.11.1 with the MIT Postgres + Redis runtime
#   langgraph-runtime-pg 0.11.1.post1, LANGGRAPH_RUNTIME_EDITION=pg), and two graphs, `counter`
#   (counter.py) and `long_run` (long_run.py), served from /deps/counter. /storage/entrypoint.sh
#   runs the API server on $PORT (8000), /storage/queue_entrypoint.sh a queue-only worker (GET /ok
#   on $PORT as well).
#   It runs as uid 1000 (`app`, HOME /home/app). See README.md for the environment it reads.
# pip runs inside the new root file system with this machine's pip settings (index, extra index,
# trusted hosts, proxy, CA bundle), read here at build time and removed before the image is made.
# A build is kept until this script or a file it copies changes.
#
# Usage: test/cluster/node/langgraph/build.sh. Its last stdout line is the image's tag.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../../image/containers.sh
source "$here/../../../image/containers.sh"

for tool in buildah podman mmdebstrap; do
  command -v "$tool" >/dev/null || {
    echo "langgraph/build.sh: $tool is missing (as root: apt-get install buildah podman mmdebstrap)" >&2
    exit 1
  }
done

tag=k8s-listener-test/langgraph-server:1
base=k8s-listener-test/langgraph-server:rootfs
inputs=(build.sh requirements.txt counter.py long_run.py entrypoint.sh queue_entrypoint.sh)
stamp=$(cd "$here" && cat "${inputs[@]}" | sha256sum | cut -c1-16)

current=$(podman image inspect --format '{{index .Labels "k8s-listener.node-stamp"}}' "$tag" 2>/dev/null || true)
if [ "$current" = "$stamp" ]; then
  echo "reusing $tag from the project's container store" >&2
  echo "$tag"
  exit 0
fi

# One setting of this machine's pip: PIP_<NAME> first, then pip's configuration files.
host_pip() {
  local name=$1 var value
  var=PIP_$(printf '%s' "$name" | tr 'a-z-' 'A-Z_')
  if [ -n "${!var:-}" ]; then
    printf '%s\n' "${!var}"
    return
  fi
  command -v pip3 >/dev/null || return 0
  for section in install global; do
    value=$(pip3 config get "$section.$name" 2>/dev/null || true)
    if [ -n "$value" ]; then
      printf '%s\n' "$value"
      return
    fi
  done
}

started=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The pip configuration for the install step alone: it lives in the root file system's /tmp while
# pip runs and is deleted right after, so no index, host or certificate of this machine is kept.
mkdir -p "$work/lg-pip"
{
  echo '[global]'
  for key in index-url extra-index-url trusted-host proxy; do
    value=$(host_pip "$key")
    if [ -z "$value" ] && [ "$key" = proxy ]; then value=${https_proxy:-${HTTPS_PROXY:-}}; fi
    if [ -n "$value" ]; then printf '%s = %s\n' "$key" "$(printf '%s' "$value" | tr '\n' ' ')"; fi
  done
  cafile=$(host_pip cert)
  cafile=${cafile:-${REQUESTS_CA_BUNDLE:-${SSL_CERT_FILE:-}}}
  if [ -n "$cafile" ] && [ -f "$cafile" ]; then
    cp "$cafile" "$work/lg-pip/ca.pem"
    echo 'cert = /tmp/lg-pip/ca.pem'
  fi
  echo 'disable-pip-version-check = true'
  echo 'default-timeout = 180'
  echo 'no-cache-dir = true'
} > "$work/lg-pip/pip.conf"
cp "$here/requirements.txt" "$work/lg-pip/requirements.txt"

echo "langgraph/build.sh: assembling Debian 12 with Python 3.11 and the LangGraph server" >&2
# No compiler in the image: every package comes as a wheel (--only-binary :all:) but for
# forbiddenfruit (a dependency of blockbuster), published as source only and pure Python, which
# pip builds with setuptools in an isolated environment. pip runs with an empty environment, so
# none of this machine's PIP_* variables points into the chroot.
mmdebstrap --variant=minbase --mode=root --format=directory --quiet \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
  --include=python3,python3-venv \
  --customize-hook='chroot "$1" useradd --uid 1000 --user-group --create-home --shell /bin/sh app' \
  --customize-hook="copy-in $work/lg-pip /tmp" \
  --customize-hook='chroot "$1" python3 -m venv /opt/langgraph' \
  --customize-hook='chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 PIP_CONFIG_FILE=/tmp/lg-pip/pip.conf /opt/langgraph/bin/pip install --quiet --only-binary :all: --no-binary forbiddenfruit --use-pep517 -r /tmp/lg-pip/requirements.txt' \
  --customize-hook='rm -rf "$1/tmp/lg-pip" "$1/root/.cache" "$1/etc/resolv.conf" "$1/etc/hostname"' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm "$work/root"
if [ -e "$work/root/tmp/lg-pip" ] || [ ! -x "$work/root/opt/langgraph/bin/uvicorn" ]; then
  echo "langgraph/build.sh: the install step did not finish cleanly" >&2
  exit 1
fi
tar -C "$work/root" -cf "$work/rootfs.tar" .
rm -rf "$work/root"
podman import --quiet "$work/rootfs.tar" "$base" >/dev/null
rm -rf "$work"
trap - EXIT

previous=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
c=$(buildah from --pull=never "$base")
buildah copy --chmod 0644 "$c" "$here/counter.py" /deps/counter/counter.py >/dev/null
buildah copy --chmod 0644 "$c" "$here/long_run.py" /deps/counter/long_run.py >/dev/null
buildah copy --chmod 0755 "$c" "$here/entrypoint.sh" /storage/entrypoint.sh >/dev/null
buildah copy --chmod 0755 "$c" "$here/queue_entrypoint.sh" /storage/queue_entrypoint.sh >/dev/null
# The langgraph.json of `langgraph build` images is LANGSERVE_GRAPHS: graph id -> "file:variable".
buildah config --user 1000:1000 --workingdir /deps/counter \
  --env PATH=/opt/langgraph/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env LANGGRAPH_RUNTIME_EDITION=pg \
  --env LANGSERVE_GRAPHS='{"counter": "/deps/counter/counter.py:graph", "long_run": "/deps/counter/long_run.py:graph"}' \
  --env PORT=8000 \
  --env LANGSMITH_TRACING=false \
  --env LOG_COLOR=false \
  --env PYTHONUNBUFFERED=1 \
  --env PYTHONDONTWRITEBYTECODE=1 \
  --entrypoint '["/storage/entrypoint.sh"]' --cmd '' --port 8000 \
  --label "k8s-listener.node-stamp=$stamp" "$c"
buildah commit --quiet --rm "$c" "$tag" >/dev/null
podman rmi "$base" >/dev/null
# The image this tag named before, now untagged (kept if a container still uses it).
if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$tag")" ]; then
  podman rmi "$previous" >/dev/null 2>&1 || true
fi

size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "langgraph/build.sh: built $tag in $(( $(date +%s) - started )) s, $(( size / 1048576 )) MiB uncompressed" >&2
echo "$tag"
