#!/usr/bin/env bash
#! Installs a tool published as a Rust crate, pinned, with `cargo install --locked` (the crate's
#! own lock file) from the crates.io registry: `install-crate.sh CRATE VERSION BINARY [ARGS...]`,
#! ARGS going to `cargo install` (e.g. `--no-default-features --features search`). Cached outside
#! the repository under ${FLOTILLA_CACHE:-~/.cache/flotilla}/tools/CRATE-VERSION/, built in a
#! directory of its own (not the repository's target/); idempotent: a second run with BINARY cached
#! returns at once. Prints the directory holding BINARY on stdout. Used by install-deny.sh and
#! install-mdbook.sh.
set -euo pipefail

CRATE="$1" VERSION="$2" BINARY="$3"
shift 3
CACHE_DIR="${FLOTILLA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla}"
INSTALL_DIR="$CACHE_DIR/tools/$CRATE-$VERSION"

log() { printf '[install-crate] %s\n' "$*" >&2; }

if [ -x "$INSTALL_DIR/bin/$BINARY" ]; then
  echo "$INSTALL_DIR/bin"
  exit 0
fi

start=$SECONDS
log "building $CRATE $VERSION (once; cached in $INSTALL_DIR)"
rm -rf "$INSTALL_DIR.tmp"
CARGO_TARGET_DIR="$(mktemp -d)"
export CARGO_TARGET_DIR
trap 'rm -rf "$CARGO_TARGET_DIR"' EXIT
cargo install --quiet --locked --root "$INSTALL_DIR.tmp" "$@" "$CRATE@$VERSION" >&2
"$INSTALL_DIR.tmp/bin/$BINARY" --version >&2
rm -rf "$INSTALL_DIR"
mv "$INSTALL_DIR.tmp" "$INSTALL_DIR"
rm -f "$INSTALL_DIR/.crates.toml" "$INSTALL_DIR/.crates2.json"
log "installed $BINARY in $INSTALL_DIR/bin ($((SECONDS - start))s)"
echo "$INSTALL_DIR/bin"
