#!/usr/bin/env bash
# Builds helm v3.19.0 from the Go modules pinned in this folder's go.mod/go.sum, and caches the binary per version
# and per go.sum so a second run does not rebuild. The chart checks (test/unit/chart*.test.ts) run this helm.
#
# Prints the path of the helm binary as its last line of stdout; progress goes to stderr.
#   HELM_BIN=/path/to/helm      use a helm you already have (v3); nothing is built.
#   KCP_CACHE_DIR=/path         where built binaries are kept, shared with hack/kcp/build.sh
#                               (default: ${XDG_CACHE_HOME:-$HOME/.cache}/kcp-dependency-controller)
set -euo pipefail

HELM_VERSION=v3.19.0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

LOG_LABEL=helm
source "$here/../lib/gobuild.sh"

if [[ -n "${HELM_BIN:-}" ]]; then
  [[ -x "$HELM_BIN" ]] || { log "HELM_BIN=$HELM_BIN is not an executable"; exit 1; }
  log "using helm from HELM_BIN=$HELM_BIN ($("$HELM_BIN" version --short 2>/dev/null || echo 'version unknown'))"
  echo "$HELM_BIN"
  exit 0
fi

require_go helm
out="$(cache_dir helm "$HELM_VERSION" "$here")"
if cache_hit "$out" helm; then
  log "reusing helm $HELM_VERSION in $out"
  echo "$out/helm"
  exit 0
fi

cache_wait "$out"
if cache_hit "$out" helm; then
  log "reusing helm $HELM_VERSION in $out (built meanwhile)"
  echo "$out/helm"
  exit 0
fi

cache_begin "$out" "helm $HELM_VERSION" \
  "~20 s of module download and ~2 min of compile on 2 cores; later runs reuse the binary"

# The checksum database is not reachable from every machine; go.sum in this folder is the source of truth.
export GOFLAGS="-mod=readonly" GOSUMDB=off CGO_ENABLED=0
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
# As helm's Makefile does: the Kubernetes version `helm template` and `helm lint` assume is that of its client-go.
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=34"
done

go_build_with_progress "$here" "$ldflags" "$out.partial/helm" helm.sh/helm/v3/cmd/helm

cache_commit "$out"
log "built: $("$out/helm" version --short 2>&1 | head -1)"
echo "$out/helm"
