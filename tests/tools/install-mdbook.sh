#!/usr/bin/env bash
#! Installs mdBook 0.5.4, which builds the book in docs/ (`mdbook build docs`), with
#! install-crate.sh: `cargo install --locked`, only the `search` feature (no live-reload server),
#! cached outside the repository under ${FLOTILLA_CACHE:-~/.cache/flotilla}/tools/mdbook-0.5.4/;
#! idempotent. Prints the path of the `mdbook` binary on stdout (tests/run-all.sh runs it).
set -euo pipefail

BIN_DIR="$(bash "$(dirname "${BASH_SOURCE[0]}")/install-crate.sh" mdbook 0.5.4 mdbook \
  --no-default-features --features search)"
echo "$BIN_DIR/mdbook"
