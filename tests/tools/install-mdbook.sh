#!/usr/bin/env bash
#! Installs mdBook v0.5.4, which builds the book in docs/ (`mdbook build docs`), from crates.io with
#! `cargo install --locked` (its own lock file; only the `search` feature: no live-reload server).
#! Cached outside the repository under ${FLOTILLA_CACHE:-~/.cache/flotilla}/tools/mdbook-0.5.4/;
#! idempotent: a second run with the binary cached returns at once. Prints the path of the `mdbook`
#! binary on stdout (tests/run-all.sh and tests/docs.rs read it through FLOTILLA_MDBOOK).
set -euo pipefail

VERSION="0.5.4"
CACHE_DIR="${FLOTILLA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla}"
ROOT_DIR="$CACHE_DIR/tools/mdbook-$VERSION"
BIN="$ROOT_DIR/bin/mdbook"

log() { printf '[install-mdbook] %s\n' "$*" >&2; }

if [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi

log "building mdbook $VERSION (cargo install --locked)"
rm -rf "$ROOT_DIR.tmp"
cargo install --quiet --locked "mdbook@$VERSION" --no-default-features --features search \
  --root "$ROOT_DIR.tmp" >&2
"$ROOT_DIR.tmp/bin/mdbook" --version >&2
rm -rf "$ROOT_DIR"
mv "$ROOT_DIR.tmp" "$ROOT_DIR"
log "installed $BIN"
echo "$BIN"
