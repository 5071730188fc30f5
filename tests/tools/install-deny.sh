#!/usr/bin/env bash
#! Installs cargo-deny 0.20.2 (the dependency audit tests/run-all.sh runs: `cargo deny check`,
#! configured by deny.toml) with install-crate.sh: `cargo install --locked`, cached outside the
#! repository under ${FLOTILLA_CACHE:-~/.cache/flotilla}/tools/cargo-deny-0.20.2/; idempotent.
#! Prints the directory holding `cargo-deny` on stdout (put it on PATH for `cargo deny`).
set -euo pipefail

exec bash "$(dirname "${BASH_SOURCE[0]}")/install-crate.sh" cargo-deny 0.20.2 cargo-deny
