# Sourced by hack/image/*.sh: buildah on a private image store in the cache, so that the stand-in base and the
# build's layer cache survive between runs, and what every script checks first.
#
#   KCP_CACHE_DIR=/path   moves the cache (default: ${XDG_CACHE_HOME:-$HOME/.cache}/kcp-dependency-controller)

IMAGE_CACHE="${KCP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kcp-dependency-controller}/image"
mkdir -p "$IMAGE_CACHE"
IMAGE_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The tag the test builds; the chart's image.repository default, tagged for this checkout's tests.
IMAGE_REF="localhost/kcp-dependency-controller:test"
# The base the Dockerfile names: node:${NODE_VERSION}-slim, fully qualified the way buildah resolves the short name.
NODE_VERSION="$(sed -n 's/^ARG NODE_VERSION=//p' "$IMAGE_REPO_ROOT/Dockerfile")"
BASE_REF="docker.io/library/node:${NODE_VERSION}-slim"
# A label only the stand-in carries (hack/image/base.sh): its value is the content key it was built from.
STANDIN_LABEL="io.github.kcp-dependency-controller.stand-in-key"

log() { printf '[image] %s\n' "$*" >&2; }

# overlay where the kernel lets root mount it (a layer costs only its changes); IMAGE_STORAGE_DRIVER=vfs where it
# does not (every layer a full copy of the root filesystem: several times slower). chroot isolation: RUN steps
# without an OCI runtime (crun cannot set rlimits here), on the host's network.
export BUILDAH_ISOLATION=chroot
IMAGE_STORAGE_DRIVER="${IMAGE_STORAGE_DRIVER:-overlay}"
bh() {
  buildah --storage-driver="$IMAGE_STORAGE_DRIVER" --root="$IMAGE_CACHE/$IMAGE_STORAGE_DRIVER" \
    --runroot="$IMAGE_CACHE/run-$IMAGE_STORAGE_DRIVER" "$@"
}

# The tools the image build needs; hack/setup.sh installs them with apt-get when it runs as root.
need_image_tools() {
  local missing=()
  for t in buildah mmdebstrap; do command -v "$t" >/dev/null || missing+=("$t"); done
  if ((${#missing[@]})); then
    log "missing: ${missing[*]}. The image test builds the Dockerfile with buildah and, where node:*-slim cannot be"
    log "pulled, a stand-in base with mmdebstrap. Install them (Debian/Ubuntu: apt-get install -y buildah mmdebstrap;"
    log "hack/setup.sh does it when run as root) and run the test command again."
    exit 1
  fi
  if [[ "$(id -u)" != 0 ]]; then
    log "the image build runs buildah with chroot isolation and mounts the image's root filesystem: run as root"
    exit 1
  fi
  [[ -n "$NODE_VERSION" ]] || { log "no 'ARG NODE_VERSION=' in the Dockerfile"; exit 1; }
}

# base_label: the stand-in's content key when the base in the store is the stand-in; empty for a pulled base or none.
base_label() {
  bh inspect --type image --format "{{index .OCIv1.Config.Labels \"$STANDIN_LABEL\"}}" "$BASE_REF" 2>/dev/null || true
}
