#!/usr/bin/env bash
# Finds or installs promtool, for `promtool check rules` on the chart's PrometheusRule (test/unit/chart-monitoring.test.ts).
#
# Prints the path of promtool as its last line of stdout; progress goes to stderr.
#   PROMTOOL_BIN=/path/to/promtool   use this one; nothing is installed.
#
# Why not from Go modules like kcp and helm: github.com/prometheus/prometheus/cmd/promtool (v0.316.0, Prometheus 3.x)
# imports every service discovery, and one of them (github.com/hashicorp/nomad/api at the pseudo-version Prometheus
# pins) is not served by the module proxy this project can reach (403, checked 2026-11-22). Debian's `prometheus`
# package ships promtool (2.42 on bookworm), and `check rules` of 2.42 reads every expression these alerts use.
set -euo pipefail
log() { printf '[promtool] %s\n' "$*" >&2; }

if [[ -n "${PROMTOOL_BIN:-}" ]]; then
  [[ -x "$PROMTOOL_BIN" ]] || { log "PROMTOOL_BIN=$PROMTOOL_BIN is not an executable"; exit 1; }
  echo "$PROMTOOL_BIN"
  exit 0
fi

if ! command -v promtool >/dev/null; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    log "installing Debian's prometheus package for its promtool (no service is started)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends prometheus >&2 ||
      { apt-get update -qq >&2 && apt-get install -y --no-install-recommends prometheus >&2; }
  else
    log "promtool not found: install Debian's prometheus package (apt-get install prometheus) or set PROMTOOL_BIN"
    exit 1
  fi
fi
bin="$(command -v promtool)"
log "using $bin ($("$bin" --version 2>&1 | head -1))"
echo "$bin"
