#!/usr/bin/env bash
# Fetches the CustomResourceDefinitions of the custom resources the agent can render — the Gateway
# API's standard channel (HTTPRoute) and KEDA's (ScaledObject, TriggerAuthentication) — from the
# Go modules that carry them, into a cache outside the repository. The test cluster applies them at
# start. Skipped when they are there. Prints the directory of the YAML files on its last line.
set -euo pipefail

GATEWAY_API_VERSION=v1.6.3   # sigs.k8s.io/gateway-api: config/crd/standard
KEDA_VERSION=v2.21.0         # github.com/kedacore/keda/v2: config/crd/bases

cache=${K8S_LISTENER_CACHE:-$HOME/.cache/k8s-listener}
dir="$cache/crds-gateway-api-$GATEWAY_API_VERSION-keda-$KEDA_VERSION"

if [ -f "$dir/.complete" ]; then
  echo "reusing the CRDs in $dir" >&2
  echo "$dir"
  exit 0
fi

command -v go >/dev/null || { echo "crds.sh: Go is required to fetch the CRDs' modules" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"

module_dir() { # module@version: the module's directory in the Go module cache
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

echo "fetching sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" >&2
gateway=$(module_dir "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")
# The CRDs only: the channel's ValidatingAdmissionPolicy guards upgrades of a shared cluster.
for file in "$gateway"/config/crd/standard/gateway.networking.k8s.io_*.yaml; do
  case "$file" in *_vap_*) continue ;; esac
  cp "$file" "$dir.tmp/"
done

echo "fetching github.com/kedacore/keda/v2@$KEDA_VERSION" >&2
keda=$(module_dir "github.com/kedacore/keda/v2@$KEDA_VERSION")
cp "$keda"/config/crd/bases/keda.sh_*.yaml "$dir.tmp/"

chmod 644 "$dir.tmp"/*.yaml
for required in gateway.networking.k8s.io_httproutes.yaml keda.sh_scaledobjects.yaml keda.sh_triggerauthentications.yaml; do
  [ -f "$dir.tmp/$required" ] || { echo "crds.sh: $required is missing" >&2; exit 1; }
done
touch "$dir.tmp/.complete"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
echo "$dir"
