#!/usr/bin/env bash
#! Installs cargo-deny 0.20.2 (the dependency audit tests/run-all.sh runs: `cargo deny check`,
#! configured by deny.toml) with `cargo install --locked` from the crates.io registry, cached
#! outside the repository under ${FLOTILLA_CACHE:-~/.cache/flotilla}/tools/cargo-deny-0.20.2/;
#! idempotent: a second run with the binary cached returns at once. Prints the directory holding
#! `cargo-deny` on stdout (put it on PATH for `cargo deny`).
set -euo pipefail

VERSION="0.20.2"
CACHE_DIR="${FLOTILLA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla}"
INSTALL_DIR="$CACHE_DIR/tools/cargo-deny-$VERSION"

log() { printf '[install-deny] %s\n' "$*" >&2; }

if [ -x "$INSTALL_DIR/bin/cargo-deny" ]; then
  echo "$INSTALL_DIR/bin"
  exit 0
fi

start=$SECONDS
log "building cargo-deny $VERSION (once; cached in $INSTALL_DIR)"
rm -rf "$INSTALL_DIR.tmp"
# Its own build directory, not the repository's target/.
CARGO_TARGET_DIR="$(mktemp -d)"
export CARGO_TARGET_DIR
trap 'rm -rf "$CARGO_TARGET_DIR"' EXIT
cargo install --quiet --locked --root "$INSTALL_DIR.tmp" "cargo-deny@$VERSION" >&2
"$INSTALL_DIR.tmp/bin/cargo-deny" --version >&2
rm -rf "$INSTALL_DIR"
mv "$INSTALL_DIR.tmp" "$INSTALL_DIR"
rm -f "$INSTALL_DIR/.crates.toml" "$INSTALL_DIR/.crates2.json"
log "installed cargo-deny in $INSTALL_DIR/bin ($((SECONDS - start))s)"
echo "$INSTALL_DIR/bin"
