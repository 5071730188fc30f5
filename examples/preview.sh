#!/usr/bin/env bash
#! The main job in one command: previews the three-tier stack's whole rollout — steps, waves,
#! hooks, timing — on the embedded simulator, no cluster needed. Installs the helm and kubectl
#! the database's chart and the backend's overlays are rendered with (tests/tools/install.sh,
#! cached outside the repository), builds Flotilla in release mode and writes the timeline to
#! three-tier.svg. Extra arguments go to `flotilla simulate` (e.g. `--fail
#! platform-database-eu-west/Job/db-migrate`, `-o wide`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TOOLS="$(bash tests/tools/install.sh)"
export FLOTILLA_HELM="${FLOTILLA_HELM:-$TOOLS/helm}" FLOTILLA_KUBECTL="${FLOTILLA_KUBECTL:-$TOOLS/kubectl}"
exec cargo run --release --quiet -- simulate examples/three-tier-stack.yaml \
  --repo https://git.example.com/acme/platform-manifests.git=examples/repos/platform-manifests \
  --timeline three-tier.svg "$@"
