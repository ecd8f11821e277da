#!/usr/bin/env bash
# Builds what a real node of the test cluster runs, from Go modules at pinned versions, into a
# cache outside the repository: kubelet and kube-proxy (the same Kubernetes build as the control
# plane, test/cluster/k8sbuild), containerd with its runc shim and ctr, runc (cgo, with seccomp:
# Pod Security `restricted` asks for RuntimeDefault), the CNI plugins the node's network needs,
# CoreDNS, the OCI registry the node pulls from, and the pod sandbox's pause binary.
# Skipped when every binary is already there. Prints the bin directory on its last line.
set -euo pipefail

K8S_VERSION=v1.34.4
CONTAINERD_VERSION=v2.4.2
RUNC_VERSION=v1.5.2
CNI_PLUGINS_VERSION=v1.10.0
COREDNS_VERSION=v1.15.0
REGISTRY_VERSION=v3.1.2
KUBE_ROUTER_VERSION=v2.1.0

here=$(cd "$(dirname "$0")" && pwd)
cache=${K8S_LISTENER_CACHE:-$HOME/.cache/k8s-listener}
stamp=$(cat "$0" "$here/k8sbuild/go.mod" "$here/k8sbuild/go.sum" "$here/node/pause.c" | sha256sum | cut -c1-16)
bin="$cache/node-$K8S_VERSION/bin"
binaries=(kubelet kube-proxy containerd containerd-shim-runc-v2 ctr runc bridge host-local loopback portmap
  coredns registry kube-router pause)

if [ -d "$bin" ] && [ "$(cat "$bin/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "node build inputs changed: rebuilding into $bin" >&2
  rm -f "$bin"/*
fi
missing=()
for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ]; then
  echo "reusing the node's binaries in $bin" >&2
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "build-node.sh: Go is required to build the node's binaries" >&2; exit 1; }
command -v cc >/dev/null || { echo "build-node.sh: a C compiler is required (runc, pause)" >&2; exit 1; }
[ -e /usr/include/seccomp.h ] || {
  echo "build-node.sh: libseccomp's headers are missing (as root: apt-get install libseccomp-dev)" >&2
  exit 1
}
export GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$bin"
started=$(date +%s)
echo "building ${missing[*]} into $bin" >&2

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
version_flags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean"
kube() { # name package: from the control plane's wrapper module, so the versions are the same
  local name=$1 pkg=$2
  [ -x "$bin/$name" ] && return 0
  echo "  go build $pkg" >&2
  (cd "$here/k8sbuild" && GOFLAGS=-mod=mod go build -p 2 -trimpath -ldflags "-s -w $version_flags" \
    -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
}
install() { # name module@version [ldflags] [tags]: a command of a published module, as it pins its own dependencies
  local name=$1 mod=$2 ldflags=${3:-} tags=${4:-}
  [ -x "$bin/$name" ] && return 0
  echo "  go install $mod" >&2
  local tmp
  tmp=$(mktemp -d)
  GOBIN="$tmp" go install -p 2 -trimpath -tags "$tags" -ldflags "-s -w $ldflags" "$mod"
  mv "$tmp/$(basename "${mod%@*}")" "$bin/$name"
  rm -rf "$tmp"
}

kube kubelet k8s.io/kubernetes/cmd/kubelet
kube kube-proxy k8s.io/kubernetes/cmd/kube-proxy

containerd=github.com/containerd/containerd/v2
containerd_flags="-X $containerd/version.Version=$CONTAINERD_VERSION"
install containerd "$containerd/cmd/containerd@$CONTAINERD_VERSION" "$containerd_flags" no_btrfs,no_devmapper
install containerd-shim-runc-v2 "$containerd/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" "$containerd_flags"
install ctr "$containerd/cmd/ctr@$CONTAINERD_VERSION" "$containerd_flags"
# runc applies seccomp profiles through libseccomp: the one command built with cgo.
CGO_ENABLED=1 install runc "github.com/opencontainers/runc@$RUNC_VERSION" \
  "-X main.version=${RUNC_VERSION#v}" seccomp

for plugin in main/bridge ipam/host-local main/loopback meta/portmap; do
  install "${plugin#*/}" "github.com/containernetworking/plugins/plugins/$plugin@$CNI_PLUGINS_VERSION" \
    "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_PLUGINS_VERSION"
done
install coredns "github.com/coredns/coredns@$COREDNS_VERSION"
install registry "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION"
# The NetworkPolicy implementation (its firewall only): the one served that works with iptables
# and ipset, which these machines have (kube-network-policies needs the nftables queue).
install kube-router "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION"

if [ ! -x "$bin/pause" ]; then
  echo "  cc pause.c" >&2
  cc -static -Os -s -o "$bin/pause" "$here/node/pause.c"
fi

echo "$stamp" > "$bin/.stamp"
echo "built in $(( $(date +%s) - started )) s" >&2
echo "$bin"
