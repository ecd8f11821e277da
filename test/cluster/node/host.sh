#!/usr/bin/env bash
# The machine-wide part of the real node, put in place and taken away whole: a pod bridge, the
# sysctls a node needs, a guard that keeps pod traffic on this machine, and the mount namespace the
# node's daemons share; `down` also removes what the daemons added (pods, iptables chains, ipsets,
# cgroups, network namespaces). `down` is idempotent: it also cleans up after a run that was killed.
#
# Usage: host.sh up RUNDIR     prints the pid holding the node's mount namespace
#        host.sh down [RUNDIR]
# What `down` needs (the namespace, the saved sysctls) is kept in STATE, the machine's real-node
# lock directory, which outlives a run directory removed by a runner that was killed.
set -euo pipefail

BRIDGE=k8sl0
GATEWAY=10.244.0.1
POD_CIDR=10.244.0.0/24
GUARD=K8SL-NODE-GUARD
STATE=${K8S_LISTENER_NODE_STATE:-/run/k8s-listener-real-node}/host
action=$1
run=${2:-}
mkdir -p "$STATE"

up() {
  [ -d /proc/sys/net/bridge ] || modprobe br_netfilter 2>/dev/null || true
  # Saved once, so that a second `up` of the same run cannot record the node's own values.
  if [ ! -s "$STATE/sysctl.saved" ]; then
    sysctl -n net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables > "$STATE/sysctl.saved"
  fi
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1

  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip addr replace "$GATEWAY/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up

  # Pods reach each other, Services and this machine; nothing they send is forwarded off it.
  iptables -w -N "$GUARD" 2>/dev/null || iptables -w -F "$GUARD"
  iptables -w -A "$GUARD" -s "$POD_CIDR" ! -o "$BRIDGE" -j DROP
  iptables -w -C FORWARD -j "$GUARD" 2>/dev/null || iptables -w -I FORWARD 1 -j "$GUARD"

  # The kubelet sets kernel.panic, panic_on_oops, vm.overcommit_memory and the keyrings' quotas for
  # the whole machine. In a mount namespace of the node's own, the files it writes are copies
  # holding the values it wants, so the machine's stay as they are. containerd and the kubelet
  # share it, so a volume the kubelet mounts is seen by the runtime; everything mounted in it goes
  # when its last process does.
  local tunables="$STATE/tunables"
  mkdir -p "$tunables"
  local binds=""
  for entry in kernel/panic=10 kernel/panic_on_oops=1 vm/overcommit_memory=1 vm/panic_on_oom=0 \
    kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000; do
    local path=${entry%%=*} value=${entry#*=} file
    file="$tunables/${path//\//.}"
    echo "$value" > "$file"
    binds="$binds mount --bind '$file' '/proc/sys/$path';"
  done
  setsid unshare --mount --propagation private -- sh -c "$binds exec sleep infinity" </dev/null >/dev/null 2>&1 &
  local holder=$!
  for _ in $(seq 50); do
    [ "$(readlink "/proc/$holder/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] && grep -q "$tunables" "/proc/$holder/mountinfo" && break
    sleep 0.1
  done
  readlink "/proc/$holder/ns/mnt" > "$STATE/mntns"
  echo "$holder" > "$STATE/holder.pid"
  echo "$holder"
}

kill_cgroup_tree() { # every process under the kubelet's cgroups (the pods' containers)
  local dir
  for dir in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$dir" ] || continue
    find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  done
}

remove_cgroups() {
  local dir
  for dir in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

down() {
  kill_cgroup_tree
  # The daemons and the runtime's shims: every process in the node's mount namespace.
  if [ -s "$STATE/mntns" ]; then
    local ns pid
    ns=$(cat "$STATE/mntns")
    for pid in /proc/[0-9]*; do
      [ "$(readlink "$pid/ns/mnt" 2>/dev/null)" = "$ns" ] && kill -9 "${pid#/proc/}" 2>/dev/null || true
    done
  fi
  kill_cgroup_tree
  sleep 0.5
  remove_cgroups

  # iptables: the chains of kube-proxy (KUBE-), kube-router (KUBE-ROUTER-, KUBE-NWPLCY-, …), the CNI
  # plugins (CNI-) and this script (K8SL-), with every rule that jumps to them; nothing else.
  local save
  for save in iptables-save ip6tables-save; do
    command -v "$save" >/dev/null || continue
    local restore=${save%-save}-restore
    local rules
    rules=$("$save" -c 2>/dev/null) || continue
    if grep -qE '(KUBE-|CNI-|K8SL-)' <<<"$rules"; then
      grep -vE '(KUBE-|CNI-|K8SL-)' <<<"$rules" | "$restore" -c -w 2>/dev/null || true
    fi
  done
  # nftables: kube-proxy's own table, in each family it serves.
  if command -v nft >/dev/null; then
    nft delete table ip kube-proxy 2>/dev/null || true
    nft delete table ip6 kube-proxy 2>/dev/null || true
  fi
  if command -v ipset >/dev/null; then
    ipset list -n 2>/dev/null | grep -E '^(KUBE-|kube-router)' | xargs -r -n1 ipset destroy 2>/dev/null || true
  fi

  ip link del "$BRIDGE" 2>/dev/null || true
  # The kubelet's links to the containers' logs (they point into the run's directory).
  [ -n "$run" ] && [ -d /var/log/containers ] && find /var/log/containers -maxdepth 1 -lname "$run/*" -delete 2>/dev/null || true
  # Network namespaces the runtime left as files (their mounts went with the namespace).
  local netns
  for netns in /var/run/netns/cni-* ${run:+"$run"/containerd/state/netns/cni-*}; do
    [ -e "$netns" ] || continue
    umount "$netns" 2>/dev/null || true
    rm -f "$netns"
  done

  if [ -s "$STATE/sysctl.saved" ]; then
    local forward bridge_nf
    { read -r forward; read -r bridge_nf; } < "$STATE/sysctl.saved"
    sysctl -qw "net.ipv4.ip_forward=$forward" "net.bridge.bridge-nf-call-iptables=$bridge_nf" || true
    rm -f "$STATE/sysctl.saved"
  fi
  # The holder itself, should its namespace have been recorded wrong.
  [ -s "$STATE/holder.pid" ] && kill -9 "$(cat "$STATE/holder.pid")" 2>/dev/null || true
  rm -rf "$STATE"
}

case $action in
  up) up ;;
  down) down ;;
  *) echo "usage: host.sh up|down RUNDIR" >&2; exit 2 ;;
esac
