#!/usr/bin/env bash
#! The project's one test command: checks the code's habits first — `cargo fmt --check`,
#! `cargo clippy` (every target and feature, warnings denied) and `cargo deny check` (advisories
#! from the snapshot in deny/advisory-db, licenses, bans, sources; tests/tools/check-deny.sh) —
#! then builds (or reuses) the Kubernetes binaries, starts the test
#! control plane, installs helm and kubectl (tests/tools/install.sh; tests find them through
#! FLOTILLA_HELM and FLOTILLA_KUBECTL), the servers tests start on loopback
#! (tests/tools/install-servers.sh) and Chromium with chromedriver for the browser test
#! (tests/browser/install.sh), builds the book in docs/ with mdBook (tests/tools/install-mdbook.sh),
#! builds `flotilla` and the node simulator, runs one
#! `flotilla-node-sim` per cluster, runs every test — the offline ones and those of the
#! `controlplane` feature (`cargo test --workspace --all-features`) — then stops what it started
#! and checks that no process the run started survives it (each carries FLOTILLA_TEST_RUN in its
#! environment; a survivor is named, killed, and fails the run). Exits with cargo test's status,
#! else 1 for a failed check or a survivor. A failed check does not stop the tests.
#! Extra arguments go to `cargo test` (e.g. `tests/run-all.sh -- --nocapture`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export FLOTILLA_CONTROLPLANE_DIR="${FLOTILLA_CONTROLPLANE_DIR:-/tmp/flotilla-controlplane}"
STATE="$FLOTILLA_CONTROLPLANE_DIR"
cd "$ROOT"

log() { printf '[run-all] %s\n' "$*" >&2; }

# Marks every process of this run: a process that inherited the mark and is no descendant of this
# shell outlived whatever started it.
export FLOTILLA_TEST_RUN="$$-$(date +%s%N)"
# No incremental compilation state: a run builds once, and that state held 12 GB beside 14 GB of
# test binaries in a build directory carried over three runs; a CI machine ran out of disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# Prints the pids of marked processes that do not descend from this shell.
survivors() {
  local dir pid parent
  for dir in /proc/[0-9]*; do
    pid="${dir#/proc/}"
    { tr '\0' '\n' <"$dir/environ"; } 2>/dev/null | grep -qx "FLOTILLA_TEST_RUN=$FLOTILLA_TEST_RUN" || continue
    parent="$pid"
    while [ "$parent" -gt 1 ] && [ "$parent" != "$$" ]; do
      parent=$(awk '{ print $4 }' "/proc/$parent/stat" 2>/dev/null || echo 1)
    done
    [ "$parent" = "$$" ] || echo "$pid"
  done
}

cleanup() {
  local status=$? pids
  bash tests/controlplane/stop.sh || log "stopping the control plane failed; see $STATE/logs"
  pids="$(survivors)"
  if [ -n "$pids" ]; then
    for pid in $pids; do
      log "still running after the run: pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
    done
    kill -KILL $pids 2>/dev/null || true
    log "error: processes started by the tests outlived them (a server's guard must stop it)"
    [ "$status" != 0 ] || status=1
  fi
  exit "$status"
}
trap cleanup EXIT

start=$SECONDS
checks=0
cargo fmt --all -- --check || { checks=1; log "error: cargo fmt --check found unformatted code"; }
log "fmt checked ($((SECONDS - start))s)"
cargo clippy --workspace --all-targets --all-features -- -D warnings || { checks=1; log "error: clippy found warnings"; }
log "clippy checked ($((SECONDS - start))s)"
bash tests/tools/check-deny.sh || { checks=1; log "error: cargo deny check failed"; }
log "dependencies checked ($((SECONDS - start))s)"

bash tests/controlplane/build.sh >/dev/null
log "kubernetes binaries ready ($((SECONDS - start))s)"
bash tests/browser/install.sh
log "chromium and chromedriver ready ($((SECONDS - start))s)"
bash tests/controlplane/start.sh
log "control plane ready ($((SECONDS - start))s)"
bash tests/tools/install-servers.sh
TOOLS="$(bash tests/tools/install.sh)"
export FLOTILLA_HELM="${FLOTILLA_HELM:-$TOOLS/helm}" FLOTILLA_KUBECTL="${FLOTILLA_KUBECTL:-$TOOLS/kubectl}"
log "helm and kubectl ready ($((SECONDS - start))s)"
# The book: a page SUMMARY.md names but that is missing fails the build (create-missing = false);
# tests/docs.rs checks its links, includes and examples.
"$(bash tests/tools/install-mdbook.sh)" build docs || { checks=1; log "error: mdbook build docs failed"; }
log "book built ($((SECONDS - start))s)"

# With the tests' features: the dependencies built for the tests are reused, not built again.
cargo build --workspace --bins --all-features
for n in 1 2; do
  RUST_LOG="${RUST_LOG:-info}" NO_COLOR=1 setsid "${CARGO_TARGET_DIR:-target}/debug/flotilla-node-sim" \
    --kubeconfig "$STATE/cluster$n.kubeconfig" --node-name "flotilla-sim-$n" --ready-after 500ms \
    >"$STATE/logs/node-sim$n.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/node-sim$n.pid"
  log "started node-sim$n (pid $!)"
done

status=0
cargo test --workspace --all-features --no-fail-fast "$@" || status=$?
log "tests finished with status $status ($((SECONDS - start))s); logs in $STATE/logs"
[ "$status" != 0 ] || status=$checks
exit "$status"
