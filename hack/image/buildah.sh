#!/usr/bin/env bash
# buildah on the image store hack/image/build.sh builds into, e.g. `bash hack/image/buildah.sh images`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bh "$@"
