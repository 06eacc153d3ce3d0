#!/usr/bin/env bash
# The local demo: starts kcp, sets up providers and consumers, runs the controller and the webhook, and shows a
# VPC delete blocked and then allowed. Flags go to the demo (try --help).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
exec node hack/demo.ts "$@"
