#!/usr/bin/env bash
#! Regenerates the web view's screenshots in docs/src/images/web-view/ with headless Chromium on
#! the test control plane (tests/controlplane/start.sh must have started it): the Fleet page, an
#! ApplicationSet's pipeline during a bake, an Application page, its resource tree, an object's
#! panel and a step graph (tests/web_view_pipeline.rs writes them there directly), then the
#! Pause action (tests/web_view_actions.rs) and a step blocked by a failing migration
#! (tests/rollout_e2e.rs), copied from the target directory. Installs Chromium and chromedriver
#! first (tests/browser/install.sh).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
images="$root/docs/src/images/web-view"
log() { printf '[screenshots] %s\n' "$*" >&2; }

bash "$root/tests/browser/install.sh"
cd "$root"
mkdir -p "$images"
log "pipeline, fleet, application, resource tree, object panel, graph"
FLOTILLA_SCREENSHOTS="$images" nice cargo test -p flotilla --features controlplane \
  --test web_view_pipeline
log "the Pause action and a blocked step"
nice cargo test -p flotilla --features controlplane --test web_view_actions -- \
  a_viewer_whose_token_may_patch_pauses_and_resumes_the_rollout
nice cargo test -p flotilla --features controlplane --test rollout_e2e -- \
  a_failing_migration_shows_the_blocked_step_and_the_hooks_message
target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
cp "$target/web-view/action-paused.png" "$images/actions.png"
cp "$target/web-view/blocked-step.png" "$images/blocked-step.png"
log "written to $images"
