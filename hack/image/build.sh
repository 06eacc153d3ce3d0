#!/usr/bin/env bash
# Builds the image from the repository's Dockerfile, unchanged, with buildah, and tags it localhost/kcp-dependency-
# controller:test in the image store under the cache (hack/image/lib.sh). The base it names comes from
# hack/image/base.sh: pulled where the registry is reachable, else the stand-in built from Debian and npm packages.
# Layers are cached (--layers), so a second build with the same inputs reuses them.
#
# Prints the image reference as its last line of stdout; progress goes to stderr.
#   IMAGE_CONTEXT=/path   build another checkout (its Dockerfile and files), e.g. one made with `git archive HEAD`
#                         while the working tree is mid-edit; default: this repository
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

need_image_tools
start=$(date +%s)
# Working containers a failed build left behind, and those of image tests (kdc-e2e-<pid>-*) whose process is gone
# (killed before hack/image/run.sh could remove them); a running test's containers are left alone.
for c in $(bh containers --format '{{.ContainerName}}' 2>/dev/null || true); do
  if [[ "$c" == *-working-container ]] || { [[ "$c" =~ ^kdc-e2e-([0-9]+)- ]] && ! kill -0 "${BASH_REMATCH[1]}" 2>/dev/null; }; then
    bh umount "$c" >/dev/null 2>&1 || true
    bh rm "$c" >/dev/null 2>&1 || true
  fi
done
bash "$here/base.sh"

context="${IMAGE_CONTEXT:-$IMAGE_REPO_ROOT}"
args=(--layers --pull=never --file "$context/Dockerfile")
# A network that inspects TLS (its CA named by NODE_EXTRA_CA_CERTS on the host, as on these machines): the build's
# `npm ci` must trust that CA too. npm reads /usr/local/etc/npmrc (its global config in the node image), so a folder
# with that file and the CA is mounted over the base's empty /usr/local/etc in the RUN steps only; no layer keeps it.
if [[ -n "${NODE_EXTRA_CA_CERTS:-}" && -r "$NODE_EXTRA_CA_CERTS" ]]; then
  etc="$IMAGE_CACHE/build-etc"
  mkdir -p "$etc"
  node -e 'process.stdout.write(require("tls").rootCertificates.join("\n") + "\n")' >"$etc/ca.pem"
  cat "$NODE_EXTRA_CA_CERTS" >>"$etc/ca.pem"
  echo "cafile=/usr/local/etc/ca.pem" >"$etc/npmrc"
  args+=(--volume "$etc:/usr/local/etc:ro")
fi

# The stages first, each under a tag, so that their cached layers are not pruned below; the final build reuses them.
for stage in build deps runtime; do
  log "stage $stage"
  bh bud "${args[@]}" --tag "$IMAGE_REF-stage-$stage" --target "$stage" "$context" >&2
done
log "building $IMAGE_REF from the Dockerfile (buildah bud, layers cached in $IMAGE_CACHE)"
bh bud "${args[@]}" --tag "$IMAGE_REF" "$context" >&2
# What earlier builds left untagged: removed, childless images first, until none is left (vfs keeps a full copy of
# the root filesystem per layer, so stale layers add up fast).
for _ in $(seq 1 30); do
  [[ -n "$(bh images --quiet --filter dangling=true)" ]] || break
  bh rmi --prune >/dev/null 2>&1 || break
done
size="$(bh images --format '{{.Size}}' "$IMAGE_REF")"
layers="$(bh inspect --type image --format '{{len .OCIv1.RootFS.DiffIDs}}' "$IMAGE_REF")"
log "built $IMAGE_REF in $(($(date +%s) - start)) s: $size, $layers layers"
echo "$IMAGE_REF"
