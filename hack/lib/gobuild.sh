# Sourced by hack/kcp/build.sh and hack/helm/build.sh: what building Go commands from a pinned wrapper module into a
# cache needs. Callers set LOG_LABEL first.

log() { printf '[%s] %s\n' "$LOG_LABEL" "$*" >&2; }

# content_key FILE...: a short key from the files' contents only (not their paths), so every clone shares a cache.
content_key() { cat "$@" | sha256sum | cut -c1-12; }

# require_go WHAT: stops the build unless go is on PATH.
require_go() {
  command -v go >/dev/null || { log "Go is needed to build $1 from its modules (go 1.24 or newer)"; exit 1; }
}

# cache_dir NAME VERSION MODULE_DIR: where this build's binaries live. The key covers the module's go.mod and go.sum,
# its build.sh and this file, so a change to what is built or how builds anew, and nothing else does.
cache_dir() {
  local name="$1" version="$2" dir="$3"
  local root="${KCP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kcp-dependency-controller}"
  echo "$root/$name-$version-$(content_key "$dir/go.sum" "$dir/go.mod" "$dir/build.sh" "${BASH_SOURCE[0]}")/bin"
}

# cache_hit DIR COMMAND...: whether DIR holds every COMMAND as an executable, i.e. a previous build finished there.
cache_hit() {
  local dir="$1"
  shift
  for c in "$@"; do [[ -x "$dir/$c" ]] || return 1; done
}

# cache_wait DIR: waits while another process builds into DIR (two setups at once on one machine, e.g. two test
# runs, would each compile for many minutes into the same DIR.partial); returns with the lock held by this shell.
cache_wait() {
  mkdir -p "$(dirname "$1")"
  exec 9>"$1.lock"
  if ! flock -n 9; then
    log "another process is building into $1; waiting for it"
    flock 9
  fi
}

# cache_begin DIR WHAT FIRST_BUILD: a build into DIR.partial, so an interrupted one is never taken for a finished one.
cache_begin() {
  mkdir -p "$1.partial"
  log "building $2 from Go modules into $1"
  log "first build: $3"
}

# cache_commit DIR: the finished build replaces DIR in one rename.
cache_commit() {
  rm -rf "$1"
  mv "$1.partial" "$1"
}

# go_build_with_progress MODULE_DIR LDFLAGS OUTPUT PACKAGE...: downloads the module's dependencies and compiles, with
# a heartbeat on stderr every 30 s so a five-minute compile does not look like a hang.
go_build_with_progress() {
  local dir="$1" ldflags="$2" output="$3"
  shift 3
  local start heartbeat
  start=$(date +%s)
  (cd "$dir" && go mod download) >&2
  log "modules ready after $(($(date +%s) - start)) s; compiling"
  ( while sleep 30; do log "still compiling... $(($(date +%s) - start)) s"; done ) &
  heartbeat=$!
  if ! (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$output" "$@") >&2; then
    kill "$heartbeat" 2>/dev/null || true
    return 1
  fi
  kill "$heartbeat" 2>/dev/null || true
  log "compiled in $(($(date +%s) - start)) s"
}
