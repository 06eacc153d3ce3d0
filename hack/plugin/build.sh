#!/usr/bin/env bash
# The kubectl plugin as one file (dist/kubectl-dependencies), its krew archive and manifest: hack/plugin/build.ts.
# Needs the npm packages (bash hack/setup.sh, or npm ci); uses the pinned Node 24 from node_modules.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# stripTypeScriptTypes is experimental in Node 24; its warning says nothing about this build.
exec "$repo/node_modules/.bin/node" --disable-warning=ExperimentalWarning hack/plugin/build.ts "$@"
