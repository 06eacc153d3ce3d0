# Sourced by hack/kcp/build.sh and hack/helm/build.sh: what building Go commands from a pinned wrapper module into a
# cache needs. Callers set LOG_LABEL first.

log() { printf '[%s] %s\n' "$LOG_LABEL" "$*" >&2; }

# content_key FILE...: a short key from the files' contents only (not their paths), so every clone shares a cache.
content_key() { cat "$@" | sha256sum | cut -c1-12; }

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
