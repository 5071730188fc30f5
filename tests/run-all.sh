#!/usr/bin/env bash
#! The project's one test command: builds (or reuses) the Kubernetes binaries, starts the test
#! control plane, installs helm and kubectl (tests/tools/install.sh; tests find them through
#! FLOTILLA_HELM and FLOTILLA_KUBECTL), the servers tests start on loopback
#! (tests/tools/install-servers.sh) and Chromium with chromedriver for the browser test
#! (tests/browser/install.sh), builds `flotilla`, runs one `flotilla node-sim` per cluster, runs
#! every test (`cargo test --workspace`), then stops what it started. Exits with cargo's status.
#! Extra arguments go to `cargo test` (e.g. `tests/run-all.sh -- --nocapture`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export FLOTILLA_CONTROLPLANE_DIR="${FLOTILLA_CONTROLPLANE_DIR:-/tmp/flotilla-controlplane}"
STATE="$FLOTILLA_CONTROLPLANE_DIR"
cd "$ROOT"

log() { printf '[run-all] %s\n' "$*" >&2; }

cleanup() {
  bash tests/controlplane/stop.sh || log "stopping the control plane failed; see $STATE/logs"
}
trap cleanup EXIT

start=$SECONDS
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

cargo build --bin flotilla
for n in 1 2; do
  RUST_LOG="${RUST_LOG:-info}" NO_COLOR=1 setsid target/debug/flotilla node-sim \
    --kubeconfig "$STATE/cluster$n.kubeconfig" --node-name "flotilla-sim-$n" --ready-after 500ms \
    >"$STATE/logs/node-sim$n.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/node-sim$n.pid"
  log "started node-sim$n (pid $!)"
done

status=0
cargo test --workspace "$@" || status=$?
log "tests finished with status $status ($((SECONDS - start))s); logs in $STATE/logs"
exit "$status"
