#!/usr/bin/env bash
# Builds Prometheus and promtool from the Go module (the project's own release tag, served by the
# Go module proxy) into a cache outside the repository, for the monitoring tests: promtool checks
# and unit-tests the alert rules and lints the agent's /metrics; a real Prometheus scrapes a
# running agent. Skipped when both binaries are there. Prints the bin directory on its last line.
set -euo pipefail

PROMETHEUS_MODULE_VERSION=v0.316.0   # Prometheus 3.16.0 (its Go module is tagged v0.3MM.P)
PROMETHEUS_VERSION=3.16.0

cache=${K8S_LISTENER_CACHE:-$HOME/.cache/k8s-listener}
bin="$cache/prometheus-$PROMETHEUS_MODULE_VERSION/bin"
binaries=(prometheus promtool)

stamp=$(sha256sum < "$0" | cut -c1-16)
if [ -d "$bin" ] && [ "$(cat "$bin/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "build inputs changed: rebuilding into $bin" >&2
  rm -f "$bin"/*
fi

missing=()
for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ]; then
  echo "reusing Prometheus $PROMETHEUS_VERSION binaries in $bin" >&2
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "monitoring/build.sh: Go is required to build Prometheus" >&2; exit 1; }
# The module has no replace or exclude directives, so `go install module@version` builds it as
# released. Without the builtinassets tag the web UI is left out; the HTTP API is all we query.
export GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=0
mkdir -p "$bin"
started=$(date +%s)
echo "building ${missing[*]} (Prometheus $PROMETHEUS_VERSION) into $bin" >&2
version_flags="-X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION \
 -X github.com/prometheus/common/version.Branch=release \
 -X github.com/prometheus/common/version.Revision=$PROMETHEUS_MODULE_VERSION"
for b in "${missing[@]}"; do
  echo "  go install github.com/prometheus/prometheus/cmd/$b@$PROMETHEUS_MODULE_VERSION" >&2
  GOBIN="$bin" go install -p 2 -trimpath -ldflags "-s -w $version_flags" \
    "github.com/prometheus/prometheus/cmd/$b@$PROMETHEUS_MODULE_VERSION"
done

echo "$stamp" > "$bin/.stamp"
echo "built in $(( $(date +%s) - started )) s" >&2
echo "$bin"
