#!/usr/bin/env bash
# Builds the images the real node runs, offline, with buildah in the project's own container store
# (test/image/containers.sh), and pushes them to the node's registry. Nothing can be pulled from a
# public registry here, so each is made from Debian's packages or a binary of build-node.sh:
#   pause, coredns      from scratch: the static binary alone
#   postgres            Debian 12 + PostgreSQL 15 (uid 999) + pgvector, with the official image's
#                       env contract (LangGraph's own data plane runs pgvector/pgvector:pg15)
#   redis               Debian 12 + redis-server (uid 998)
#   probe-app           Debian 12 + Python: answers GET /ok on 8000 and tries the rendered stores
#   crash-app           the same, exiting at start
#   langgraph-server    a real LangGraph server with a counter and a long-run graph (langgraph/build.sh)
# A build is kept until this script or a file it copies changes.
#
# Usage: images.sh NODE_BIN_DIR REGISTRY (host:port). Prints `name reference` lines, each image
# pushed and named by its digest.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
node_bin=$1
registry=$2
# shellcheck source=../../image/containers.sh
source "$here/../../image/containers.sh"

prefix=k8s-listener-test
stamp=$(cat "$0" "$here/images/"* "$here/langgraph/"* "$node_bin/.stamp" | sha256sum | cut -c1-16)
store_stamp() { podman image inspect --format '{{index .Labels "k8s-listener.node-stamp"}}' "$1" 2>/dev/null || true; }

commit() { # container image: commit with this build's stamp and drop the working container
  buildah config --label "k8s-listener.node-stamp=$stamp" "$1" >/dev/null
  buildah commit --quiet --rm "$1" "$2" >/dev/null
}

# The Debian root file system all four share, rebuilt only when its own recipe changes (minutes).
build_base() {
  local work
  work=$(mktemp -d)
  # Fixed uids, named by the test configuration's runAsUser; no cluster made at install.
  mmdebstrap --variant=minbase --mode=root --format=directory --quiet \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --include=postgresql-15,redis-server,python3,python3-psycopg2,python3-redis \
    --essential-hook='printf "postgres:x:999:999::/var/lib/postgresql:/bin/sh\nredis:x:998:998::/var/lib/redis:/usr/sbin/nologin\n" >> "$1/etc/passwd"' \
    --essential-hook='printf "postgres:x:999:\nredis:x:998:\n" >> "$1/etc/group"' \
    --essential-hook='mkdir -p "$1/etc/postgresql-common" && echo "create_main_cluster = false" > "$1/etc/postgresql-common/createcluster.conf"' \
    --customize-hook='chroot "$1" useradd --uid 1000 --user-group --create-home app' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm "$work/root"
  tar -C "$work/root" -cf "$work/rootfs.tar" .
  podman import --quiet --change "LABEL k8s-listener.base-stamp=$1" "$work/rootfs.tar" "$prefix/debian-stores:base" >/dev/null
  rm -rf "$work"
}
base_stamp=$(declare -f build_base | sha256sum | cut -c1-16)
if [ "$(podman image inspect --format '{{index .Labels "k8s-listener.base-stamp"}}' "$prefix/debian-stores:base" 2>/dev/null)" != "$base_stamp" ]; then
  started=$(date +%s)
  echo "images.sh: assembling Debian 12 with PostgreSQL 15, Redis and Python" >&2
  build_base "$base_stamp"
  echo "images.sh: assembled in $(( $(date +%s) - started )) s" >&2
fi

# pgvector, which Debian 12 does not package (postgresql-15-pgvector is in later releases only):
# built from its source, which the Go module proxy serves like any tagged repository, against
# Debian's postgresql-server-dev-15, portable (no -march=native) and without LLVM bitcode.
pgvector_version=v0.8.1
pgvector=${K8S_LISTENER_CACHE:-$HOME/.cache/k8s-listener}/pgvector-$pgvector_version-pg15
if [ ! -s "$pgvector/lib/vector.so" ]; then
  echo "images.sh: building pgvector $pgvector_version" >&2
  # Run outside any module, in an empty directory removed after.
  modless=$(mktemp -d)
  source_dir=$(cd "$modless" && GOFLAGS=-mod=mod go mod download -json "github.com/pgvector/pgvector@$pgvector_version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  rmdir "$modless"
  work=$(mktemp -d)
  cp -r "$source_dir"/. "$work"
  chmod -R u+w "$work"
  make -C "$work" -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config OPTFLAGS= with_llvm=no >/dev/null
  mkdir -p "$pgvector.tmp/lib" "$pgvector.tmp/extension"
  cp "$work/vector.so" "$pgvector.tmp/lib/"
  cp "$work/vector.control" "$work"/sql/vector--*.sql "$pgvector.tmp/extension/"
  rm -rf "$work" "$pgvector"
  mv "$pgvector.tmp" "$pgvector"
fi

if [ "$(store_stamp "$prefix/probe-app:1")" != "$stamp" ]; then
  empty=$(mktemp -d)
  c=$(buildah from --pull=never "$prefix/debian-stores:base")
  buildah copy --chmod 0755 "$c" "$here/images/postgres-entrypoint.sh" /usr/local/bin/postgres-entrypoint >/dev/null
  buildah copy "$c" "$pgvector/lib/vector.so" /usr/lib/postgresql/15/lib/ >/dev/null
  buildah copy "$c" "$pgvector/extension" /usr/share/postgresql/15/extension/ >/dev/null
  # The socket directory pg_isready looks in (systemd makes it on a Debian host).
  buildah copy --chown 999:999 --chmod 3777 "$c" "$empty" /run/postgresql >/dev/null
  buildah config --user 999:999 --entrypoint '["/usr/local/bin/postgres-entrypoint"]' --cmd '' \
    --env PGDATA=/var/lib/postgresql/data "$c"
  commit "$c" "$prefix/postgres:15"
  rmdir "$empty"

  c=$(buildah from --pull=never "$prefix/debian-stores:base")
  buildah config --user 998:998 --entrypoint '["redis-server"]' --cmd '' --workingdir /data "$c"
  commit "$c" "$prefix/redis:7"

  c=$(buildah from --pull=never "$prefix/debian-stores:base")
  buildah copy "$c" "$here/images/probe-app.py" /opt/probe-app/app.py >/dev/null
  buildah config --user 1000:1000 --entrypoint '["python3", "-u", "/opt/probe-app/app.py"]' --cmd '' \
    --port 8000 "$c"
  commit "$c" "$prefix/probe-app:1"

  c=$(buildah from --pull=never "$prefix/probe-app:1")
  buildah config --entrypoint '["/bin/sh", "-c", "echo \"crash-app: exiting at start\" >&2; exit 3"]' "$c"
  commit "$c" "$prefix/crash-app:1"
fi

scratch_image() { # name tag binary [entrypoint args…]
  local name=$1 tag=$2 binary=$3
  shift 3
  [ "$(store_stamp "$prefix/$name:$tag")" = "$stamp" ] && return 0
  local c entrypoint
  c=$(buildah from scratch)
  buildah copy --chmod 0755 "$c" "$node_bin/$binary" "/$binary" >/dev/null
  entrypoint=$(printf '"%s",' "/$binary" "$@")
  buildah config --user 65534:65534 --entrypoint "[${entrypoint%,}]" "$c"
  commit "$c" "$prefix/$name:$tag"
}
scratch_image pause 1 pause
scratch_image coredns 1.15.0 coredns -conf /etc/coredns/Corefile

bash "$here/langgraph/build.sh" >/dev/null
# The same server under another digest: a new revision that changes nothing but the image.
if [ "$(store_stamp "$prefix/langgraph-server:2")" != "$stamp" ]; then
  c=$(buildah from --pull=never "$prefix/langgraph-server:1")
  buildah config --label k8s-listener.variant=2 "$c"
  commit "$c" "$prefix/langgraph-server:2"
fi

for entry in pause=pause:1 coredns=coredns:1.15.0 postgres=postgres:15 redis=redis:7 probe-app=probe-app:1 \
  crash-app=crash-app:1 langgraph-server=langgraph-server:1 langgraph-server-2=langgraph-server:2; do
  name=${entry%%=*} image=${entry#*=}
  digestfile=$(mktemp)
  buildah push --quiet --tls-verify=false --digestfile "$digestfile" \
    "$prefix/$image" "docker://$registry/$prefix/$image" >/dev/null
  echo "$name $registry/$prefix/${image%%:*}@$(cat "$digestfile")"
  rm -f "$digestfile"
done
