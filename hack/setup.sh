#!/usr/bin/env bash
# Sourced by the README's commands: brings everything a fresh machine needs, and nothing twice.
#   - npm packages (including the pinned Node 24 from the npm registry's `node` package) when the lockfile changed
#   - kcp v0.30.0's binaries, built from Go modules (hack/kcp/build.sh; cached after the first build)
#   - helm v3.19.0, built from Go modules (hack/helm/build.sh; cached after the first build), for the chart checks
#   - the kubectl plugin's wrapper, .bin/kubectl-dependencies
# Exports PATH with .bin and node_modules/.bin first (so `node` is Node 24), KCP_BIN_DIR and HELM_BIN.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

say() { printf '[setup] %s\n' "$*" >&2; }

command -v npm >/dev/null || { say "npm is needed (any Node >= 18 with npm); it installs the pinned Node 24 itself"; exit 1; }
stamp="node_modules/.install-stamp"
want="$(cat package.json package-lock.json | sha256sum | cut -c1-16)"
if [[ ! -x node_modules/.bin/node || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  say "installing npm packages (pinned Node 24 included)"
  npm ci --no-audit --no-fund --loglevel=error >&2
  echo "$want" > "$stamp"
fi
export PATH="$repo/node_modules/.bin:$PATH"
node_version="$(node --version)"
case "$node_version" in
  v24.*) ;;
  *) say "expected Node 24 from node_modules/.bin, got $node_version"; exit 1 ;;
esac

# The kubectl plugin (`kubectl dependencies ...`): a wrapper on PATH that runs it with the pinned Node.
mkdir -p .bin
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$repo/node_modules/.bin/node" "$repo/src/cmd/kubectl-dependencies.ts" \
  > .bin/kubectl-dependencies
chmod +x .bin/kubectl-dependencies
export PATH="$repo/.bin:$PATH"

KCP_BIN_DIR="$(bash hack/kcp/build.sh | tail -1)"
export KCP_BIN_DIR

if [[ "${WITH_HELM:-}" == 1 ]]; then
  HELM_BIN="$(bash hack/helm/build.sh | tail -1)"
  export HELM_BIN
fi
