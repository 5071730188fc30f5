#!/usr/bin/env bash
#! `cargo deny check` (deny.toml: advisories, licenses, bans, sources), offline: installs the
#! pinned cargo-deny (tests/tools/install-deny.sh), makes the advisory snapshot deny/advisory-db
#! the database cargo-deny opens — a git repository, which it requires, built from the snapshot
#! under ${FLOTILLA_CACHE:-~/.cache/flotilla}/advisory-dbs and dated as the snapshot, so that
#! deny.toml's maximum-db-staleness judges the snapshot's age — and checks without fetching.
#! Fails, before checking, when Cargo.lock names a crate the database has advisories for but the
#! snapshot does not keep them (run tests/tools/refresh-advisory-db.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE_DIR="${FLOTILLA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flotilla}"
SNAPSHOT="$ROOT/deny/advisory-db"
export FLOTILLA_ADVISORY_DBS="$CACHE_DIR/advisory-dbs"
# Where cargo-deny 0.20 looks for the database of https://github.com/RustSec/advisory-db (its
# default) under db-path: the directory name is derived from that URL.
DB="$FLOTILLA_ADVISORY_DBS/advisory-db-3157b0e258782691"

log() { printf '[check-deny] %s\n' "$*" >&2; }

cd "$ROOT"
missing="$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.lock | sort -u \
  | comm -12 - "$SNAPSHOT/crates-with-advisories" \
  | while read -r name; do [ -d "$SNAPSHOT/crates/$name" ] || echo "$name"; done)"
if [ -n "$missing" ]; then
  log "error: the advisory snapshot lacks the advisories of" $missing
  log "run tests/tools/refresh-advisory-db.sh with a clone of the RustSec advisory database"
  exit 1
fi

date="$(sed -n 's/^date //p' "$SNAPSHOT/SNAPSHOT")"
stamp="$( (cat "$SNAPSHOT/SNAPSHOT"; cd "$SNAPSHOT" && find crates -type f | sort | xargs sha256sum) | sha256sum)"
if [ "$(cat "$DB/.git/flotilla-snapshot" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$DB"
  mkdir -p "$DB"
  cp -R "$SNAPSHOT/crates" "$DB/"
  git -C "$DB" init -q
  git -C "$DB" add crates
  GIT_AUTHOR_DATE="$date" GIT_COMMITTER_DATE="$date" git -C "$DB" \
    -c user.name=flotilla -c user.email=flotilla@localhost -c commit.gpgsign=false \
    commit -q -m "The advisories of deny/advisory-db ($(sed -n 's/^commit //p' "$SNAPSHOT/SNAPSHOT"))"
  touch -d "$date" "$DB/.git/HEAD"
  echo "$stamp" >"$DB/.git/flotilla-snapshot"
fi
age=$(( ($(date +%s) - $(date -d "$date" +%s)) / 86400 ))
log "advisory database: the snapshot of $date ($age days old)"

PATH="$(bash "$ROOT/tests/tools/install-deny.sh"):$PATH"
# cargo-deny reads every crate of Cargo.lock, those of other platforms too (the Windows-only
# ones), which a build here never downloads: fetch them, so that a fresh machine's check does
# not fail on a crate missing from the registry cache. Nothing is fetched once they are there.
cargo fetch --locked
cargo deny --frozen check
