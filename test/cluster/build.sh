#!/usr/bin/env bash
# Builds the Kubernetes binaries the tests and the demo run (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd, kwok, helm) from Go modules, into a cache outside the repository.
# Skipped when every binary is already there. Prints the bin directory on its last line.
set -euo pipefail

K8S_VERSION=v1.34.4        # newest v1.34 patch; its staging modules are v0.34.4
ETCD_VERSION=v3.6.4        # the version k8s.io/kubernetes v1.34.4 pins
KWOK_VERSION=v0.7.0
HELM_VERSION=v3.19.0       # built against k8s.io v0.34, like the cluster

here=$(cd "$(dirname "$0")" && pwd)
cache=${K8S_LISTENER_CACHE:-$HOME/.cache/k8s-listener}
bin="$cache/k8s-$K8S_VERSION/bin"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok helm)

# A change to this script or the wrapper module invalidates the cache (Go's build cache keeps
# the rebuild short).
stamp=$(cat "$0" "$here/k8sbuild/go.mod" "$here/k8sbuild/go.sum" | sha256sum | cut -c1-16)
if [ -d "$bin" ] && [ "$(cat "$bin/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "build inputs changed: rebuilding into $bin" >&2
  rm -f "$bin"/*
fi

missing=()
for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ]; then
  echo "reusing Kubernetes $K8S_VERSION binaries in $bin" >&2
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "build.sh: Go is required to build the test cluster binaries" >&2; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
mkdir -p "$bin"
started=$(date +%s)
echo "building ${missing[*]} (Kubernetes $K8S_VERSION) into $bin" >&2

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
version_flags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION \
 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

build() { # name package [extra ldflags]
  local name=$1 pkg=$2 extra=${3:-}
  [ -x "$bin/$name" ] && return 0
  echo "  go build $pkg" >&2
  (cd "$here/k8sbuild" && go build -p 2 -trimpath -ldflags "-s -w $extra" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$version_flags"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$version_flags"
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$version_flags"
build kubectl k8s.io/kubernetes/cmd/kubectl "$version_flags"
build etcd go.etcd.io/etcd/server/v3 "-X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION"

install() { # name module@version [extra ldflags]
  local name=$1 mod=$2 extra=${3:-}
  [ -x "$bin/$name" ] && return 0
  echo "  go install $mod" >&2
  GOBIN="$bin" GOFLAGS= go install -p 2 -trimpath -ldflags "-s -w $extra" "$mod"
}
install kwok "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"
# Without these, `helm template` and `helm lint` assume Kubernetes v1.20.
helm_kube="-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
install helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION $helm_kube"

echo "$stamp" > "$bin/.stamp"
echo "built in $(( $(date +%s) - started )) s" >&2
echo "$bin"
