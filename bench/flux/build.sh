#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller (the peer bench:sync measures) from Go
# modules, into a cache outside the repository, and copies their CRDs beside them. Run by
# bench/sync.ts the first time a series asks for Flux; nothing in `npm test` calls it. Skipped
# when the binaries are already there. Prints the cache directory on its last line.
set -euo pipefail

FLUX_VERSION=v1.9.6 # both controllers; see fluxbuild/go.mod for why not v1.10.x

here=$(cd "$(dirname "$0")" && pwd)
cache=${K8S_LISTENER_CACHE:-$HOME/.cache/k8s-listener}
dir="$cache/flux-$FLUX_VERSION"
binaries=(source-controller kustomize-controller)

# A change to this script or the wrapper module invalidates the cache (Go's build cache keeps
# the rebuild short).
stamp=$(cat "$0" "$here/fluxbuild/go.mod" "$here/fluxbuild/go.sum" | sha256sum | cut -c1-16)
if [ -d "$dir" ] && [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "build inputs changed: rebuilding into $dir" >&2
  rm -rf "${dir:?}"/*
fi

missing=()
for b in "${binaries[@]}"; do [ -x "$dir/bin/$b" ] || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ] && [ -d "$dir/crds" ]; then
  echo "reusing Flux $FLUX_VERSION controllers in $dir" >&2
  echo "$dir"
  exit 0
fi

command -v go >/dev/null || { echo "flux build.sh: Go is required to build the Flux controllers" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
mkdir -p "$dir/bin" "$dir/crds"
started=$(date +%s)
echo "building ${missing[*]} (Flux $FLUX_VERSION) into $dir" >&2

for name in "${missing[@]}"; do
  echo "  go build github.com/fluxcd/$name" >&2
  (cd "$here/fluxbuild" && go build -p 2 -trimpath -ldflags "-s -w" -o "$dir/bin/$name.tmp" "github.com/fluxcd/$name")
  mv "$dir/bin/$name.tmp" "$dir/bin/$name"
done

# The CRDs ship in each module's config/crd/bases.
for name in "${binaries[@]}"; do
  src=$(cd "$here/fluxbuild" && go list -m -f '{{.Dir}}' "github.com/fluxcd/$name")
  cp "$src"/config/crd/bases/*.yaml "$dir/crds/"
  chmod u+w "$dir"/crds/*.yaml
done

echo "$stamp" > "$dir/.stamp"
echo "built in $(( $(date +%s) - started )) s" >&2
echo "$dir"
