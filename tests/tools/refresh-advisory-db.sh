#!/usr/bin/env bash
#! Refreshes deny/advisory-db, the snapshot of the RustSec advisory database that
#! `cargo deny check advisories` reads (tests/tools/check-deny.sh): the test machines reach package
#! registries only, not the database's git repository. Run it after a change to Cargo.lock, and
#! every few months, with a clone of https://github.com/rustsec/advisory-db (bare or not):
#!
#!   tests/tools/refresh-advisory-db.sh /path/to/advisory-db
#!
#! It keeps the advisories of the crates Cargo.lock names (crates/NAME/*.md, as in the database),
#! the names of every crate the database has advisories for (crates-with-advisories: check-deny.sh
#! fails when Cargo.lock gains one whose advisories are not kept) and, in SNAPSHOT, the commit and
#! its date. Advisories are CC0-1.0 (the database's LICENSE.txt, kept beside them).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SOURCE="${1:?usage: $0 ADVISORY_DB_CLONE}"
OUT="$ROOT/deny/advisory-db"
git_db() { git --git-dir="$(git -C "$SOURCE" rev-parse --absolute-git-dir)" "$@"; }

commit="$(git_db rev-parse HEAD)"
date="$(git_db log -1 --format=%cI HEAD)"
rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp"
git_db ls-tree -d --name-only HEAD crates/ | sed 's|^crates/||' | sort -u >"$OUT.tmp/crates-with-advisories"
sed -n 's/^name = "\(.*\)"$/\1/p' "$ROOT/Cargo.lock" | sort -u \
  | comm -12 - "$OUT.tmp/crates-with-advisories" >"$OUT.tmp/kept"
while read -r name; do
  git_db archive HEAD "crates/$name" | tar -x -C "$OUT.tmp"
done <"$OUT.tmp/kept"
git_db show HEAD:LICENSE.txt >"$OUT.tmp/LICENSE.txt"
rm "$OUT.tmp/kept"
cat >"$OUT.tmp/SNAPSHOT" <<SNAPSHOT
commit $commit
date $date
source https://github.com/rustsec/advisory-db
SNAPSHOT
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
printf '[refresh-advisory-db] %s advisories of %s crates, database of %s (%s)\n' \
  "$(find "$OUT/crates" -name '*.md' 2>/dev/null | wc -l)" "$(ls "$OUT/crates" 2>/dev/null | wc -l)" "$date" "$commit" >&2
