#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs, then typecheck, lint, format, unit tests
# (no kcp), and integration + end-to-end tests that start their own kcp.
set -euo pipefail
WITH_HELM=1 source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
exec npm test --silent
