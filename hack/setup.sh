#!/usr/bin/env bash
# Sourced by the README's commands: brings everything a fresh machine needs, and nothing twice.
#   - npm packages (including the pinned Node 24 from the npm registry's `node` package) when the lockfile changed
#   - kcp v0.30.0's binaries, built from Go modules (hack/kcp/build.sh; cached after the first build)
#   - helm v3.19.0, built from Go modules (hack/helm/build.sh; cached after the first build), for the chart checks
#   - the kubectl plugin's wrapper, .bin/kubectl-dependencies
#   - with WITH_HELM=1 (the test command): buildah and mmdebstrap for the image test, from apt-get when missing and
#     this runs as root (otherwise test/e2e/image.test.ts fails and names what to install)
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
  # The image test (test/e2e/image.test.ts) builds the Dockerfile with buildah; mmdebstrap builds the stand-in base
  # where node:*-slim cannot be pulled (hack/image/base.sh).
  missing=()
  for t in buildah mmdebstrap; do command -v "$t" >/dev/null || missing+=("$t"); done
  if ((${#missing[@]})); then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
      say "installing ${missing[*]} with apt-get (for the image test)"
      apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      say "the image test needs ${missing[*]} (Debian/Ubuntu: apt-get install -y buildah mmdebstrap, as root); it will fail without"
    fi
  fi
fi
