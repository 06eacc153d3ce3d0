#!/usr/bin/env bash
# Runs one process of an image the way a Kubernetes pod with the chart's securityContext runs it, where no container
# runtime works (podman's crun cannot set rlimits in this sandbox, and `buildah run` cannot make the root read-only):
#   - a working container of the image (buildah from), its root filesystem mounted (buildah mount)
#   - a new mount and PID namespace (unshare); in it the root bind-mounted and, with --read-only, remounted read-only
#   - /proc, the host's /dev, each --volume read-only and each --tmpfs (an emptyDir) mounted in it
#   - chroot into it as --user UID:GID (plus the supplementary --group), no capabilities (dropped with root) and
#     no_new_privs (allowPrivilegeEscalation: false); only the given --env; the working directory --workdir
#   - the host's network (no network namespace): ports are the host's
# The working container is removed when the process ends.
#
#   hack/image/run.sh --image REF --name NAME --user 1000:1000 [--group 1000] [--read-only] [--workdir /app]
#                     [--volume HOST_DIR:PATH]... [--tmpfs PATH:SIZE]... [--env K=V]... -- COMMAND ARG...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

image="" name="" user="" readonly=0 workdir=/ groups=() volumes=() tmpfs=() envs=()
while (($#)); do
  case "$1" in
    --image) image="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --user) user="$2"; shift 2 ;;
    --group) groups+=("$2"); shift 2 ;;
    --read-only) readonly=1; shift ;;
    --workdir) workdir="$2"; shift 2 ;;
    --volume) volumes+=("$2"); shift 2 ;;
    --tmpfs) tmpfs+=("$2"); shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) log "run.sh: unknown option $1"; exit 2 ;;
  esac
done
[[ -n "$image" && -n "$name" && -n "$user" && $# -gt 0 ]] || { log "run.sh: --image, --name, --user and a command"; exit 2; }

ctr="$(bh from --quiet --pull=never --name "$name" "$image")"
cleanup() { bh umount "$ctr" >/dev/null 2>&1 || true; bh rm "$ctr" >/dev/null 2>&1 || true; }
trap cleanup EXIT
root="$(bh mount "$ctr")"

# Mount points the pod's volumes need, made in the container's own layer before the root turns read-only.
for v in "${volumes[@]}"; do mkdir -p "$root/${v#*:}"; done
for t in "${tmpfs[@]}"; do mkdir -p "$root/${t%%:*}"; done

inner="set -euo pipefail
mount --make-rprivate /
mount --bind '$root' '$root'
mount -t proc proc '$root/proc'
mount --rbind /dev '$root/dev'"
for v in "${volumes[@]}"; do
  src="${v%%:*}" dst="$root/${v#*:}"
  inner+="
mount --bind '$src' '$dst'
mount -o remount,bind,ro '$dst'"
done
for t in "${tmpfs[@]}"; do
  inner+="
mount -t tmpfs -o 'size=${t#*:},mode=1777,nosuid,nodev' tmpfs '$root/${t%%:*}'"
done
((readonly)) && inner+="
mount -o remount,bind,ro '$root'"
group_list="$(IFS=,; echo "${groups[*]:-${user#*:}}")"
inner+='
exec setpriv --no-new-privs -- chroot --userspec="$0" --groups="$1" "$2" /usr/bin/env -i -C "$3" "${@:4}"'

unshare --mount --pid --fork --kill-child -- bash -c "$inner" "$user" "$group_list" "$root" "$workdir" \
  "${envs[@]}" "$@" &
pid=$!
# SIGTERM to the process group reaches the process itself (PID 1 of its namespace, which handles it); this shell
# keeps waiting for it to end, then removes the working container.
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM INT
rc=0
while kill -0 "$pid" 2>/dev/null; do wait "$pid" && rc=0 || rc=$?; done
exit "$rc"
