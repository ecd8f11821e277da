#!/usr/bin/env bash
# Sourced by the image scripts (and read by test/support/containerEngine.ts): one container
# store and one engine configuration of the project's own, in the cache outside the repository,
# so that nothing here touches the machine's /etc/containers or another project's images.
# vfs: no overlay filesystem is needed. runc and cgroupfs, no default ulimits: crun fails on this
# machine's cgroups and rlimits. Host networking: no bridge network to set up.
cache=${K8S_LISTENER_CACHE:-$HOME/.cache/k8s-listener}
containers="$cache/containers"
mkdir -p "$containers/storage" "$containers/run"
cat > "$containers/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$containers/storage"
runroot = "$containers/run"
CONF
cat > "$containers/containers.conf" <<CONF
[containers]
default_ulimits = []
netns = "host"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
export CONTAINERS_STORAGE_CONF="$containers/storage.conf" CONTAINERS_CONF="$containers/containers.conf"
