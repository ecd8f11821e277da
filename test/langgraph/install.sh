#!/usr/bin/env bash
# Installs the official LangGraph CLI (the real control plane's own client) into a Python virtual
# environment cached outside the repository, as test/cluster/build.sh caches the Kubernetes
# binaries. Skipped when that version is already installed. Prints the venv's bin directory last.
set -euo pipefail

VERSION=0.4.40
cache=${K8S_LISTENER_CACHE:-$HOME/.cache/k8s-listener}
venv="$cache/langgraph-cli-$VERSION"

if [ -x "$venv/bin/langgraph" ] && "$venv/bin/langgraph" --version 2>/dev/null | grep -qx "LangGraph CLI, version $VERSION"; then
  echo "reusing langgraph-cli $VERSION in $venv" >&2
  echo "$venv/bin"
  exit 0
fi

command -v python3 >/dev/null || { echo "install.sh: python3 is required for the LangGraph CLI" >&2; exit 1; }
mkdir -p "$cache"
# A half-made venv (an interrupted install) fails the check above and is made again from nothing.
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "langgraph-cli==$VERSION" >&2
"$venv/bin/langgraph" --version >&2
echo "$venv/bin"
