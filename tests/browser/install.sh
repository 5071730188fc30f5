#!/usr/bin/env bash
#! Installs what the browser tests need, Debian's chromium and chromium-driver (the browser and
#! its WebDriver server; /usr/bin/chromium, /usr/bin/chromedriver). Idempotent: returns at once
#! when both are there. Debian's packages live outside the repository (no download of a test
#! tool's own browser).
set -euo pipefail

log() { printf '[browser] %s\n' "$*" >&2; }

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
fi
