//! How often an ApplicationSet is regenerated without an event: git generators re-resolve their
//! revision every `requeueAfterSeconds` (the controller's `--git-poll` when unset), plugin
//! generators ask their service again (default 30 min) and clusterDecisionResource generators
//! read their resources again (default 3 min), pullRequest and scmProvider generators ask
//! their provider again (default 30 min), as in Argo CD; list and clusters generators react to watch
//! events only. A provider that answered "rate limited" is asked again once the limit is over. A rollout in progress is passed again every few seconds, unless it
//! only waits for a sync window or a bake: then it sleeps until the window opens or the bake
//! ends.

use std::time::Duration;

use flotilla_generators::scm_api::rate_limit::RetryAfter;
use flotilla_generators::spec::{GeneratorSpec, NestedGeneratorSpec};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::api::application_set_status::RolloutApplicationState;
use crate::rollout::{RolloutDecision, RolloutInput, StepState};

/// How often a plugin generator without `requeueAfterSeconds` is asked again.
pub const PLUGIN_POLL: Duration = Duration::from_secs(30 * 60);
/// How often a clusterDecisionResource generator without `requeueAfterSeconds` is read again.
pub const DECISION_POLL: Duration = Duration::from_secs(3 * 60);

/// How often a pullRequest or scmProvider generator without `requeueAfterSeconds` asks its
/// provider again.
pub const SCM_POLL: Duration = Duration::from_secs(30 * 60);

/// The longest wait for a provider's rate limit to end (a reset time further away is read as
/// a clock out of step, and the provider asked again after this).
pub const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60 * 60);

/// When to generate again after a provider answered that it is rate limited: one second after
/// the limit is over (`now` in seconds since the Unix epoch), at least one second and at most
/// [`MAX_RATE_LIMIT_WAIT`] from now.
#[must_use]
pub fn rate_limit_requeue(retry: RetryAfter, now: u64) -> Duration {
    (retry.delay(now) + Duration::from_secs(1)).min(MAX_RATE_LIMIT_WAIT)
}

/// How long a rollout that waits for a window opening beyond the search horizon sleeps.
pub const WINDOW_RECHECK: Duration = Duration::from_secs(60 * 60);

/// How long a rollout that only waits for steps of watched ApplicationSets sleeps (each change
/// of theirs wakes it sooner).
pub const APPLICATION_SET_RECHECK: Duration = Duration::from_secs(60 * 60);

/// When to pass a rollout in progress again: after `every`, or — when no sync is in flight —
/// when a step's bake is over or one second after the sync window it waits for opens (a change
/// of an Application during the bake is a watch event of its own), or after
/// [`APPLICATION_SET_RECHECK`] when it only waits for steps of other ApplicationSets that are
/// all watched (their changes are watch events).
#[must_use]
pub fn rollout_requeue(
    input: &RolloutInput,
    decision: &RolloutDecision,
    every: Duration,
) -> Duration {
    let waits_for_window = decision
        .step_reports
        .iter()
        .any(|report| report.state == StepState::WindowClosed);
    let syncing = decision
        .application_status
        .iter()
        .any(|entry| entry.status == RolloutApplicationState::Progressing);
    if syncing {
        return every;
    }
    if let Some(wake) = decision.wake_at {
        return until(input.now, wake);
    }
    if waits_only_for_watched_application_sets(input, decision) {
        return APPLICATION_SET_RECHECK;
    }
    if !waits_for_window {
        return every;
    }
    input.next_window_opening().map_or(WINDOW_RECHECK, |opens| {
        until(input.now, opens) + Duration::from_secs(1)
    })
}

/// Whether every step not complete waits for another ApplicationSet's step (or for an earlier
/// step that does), and every ApplicationSet read is watched.
fn waits_only_for_watched_application_sets(
    input: &RolloutInput,
    decision: &RolloutDecision,
) -> bool {
    let reports = &decision.step_reports;
    reports
        .iter()
        .any(|report| report.state == StepState::WaitingForApplicationSet)
        && reports.iter().all(|report| {
            matches!(
                report.state,
                StepState::Complete | StepState::Closed | StepState::WaitingForApplicationSet
            )
        })
        && input.external.iter().all(|read| read.watched)
}

/// The time from `now` to `then` (zero when it has passed).
fn until(now: Timestamp, then: Timestamp) -> Duration {
    Duration::try_from(then.duration_since(now)).unwrap_or(Duration::ZERO)
}

/// The polling generator kinds, by their field name, with their default interval.
fn defaults(git_default: Duration) -> [(&'static str, Duration); 5] {
    [
        ("git", git_default),
        ("plugin", PLUGIN_POLL),
        ("clusterDecisionResource", DECISION_POLL),
        ("pullRequest", SCM_POLL),
        ("scmProvider", SCM_POLL),
    ]
}

/// The shortest poll interval of the polling generators in `generators` (nested in `matrix` and
/// `merge` too), or `None` when there is none. `git_default` is the git generators' default.
#[must_use]
pub fn poll_interval(generators: &[GeneratorSpec], git_default: Duration) -> Option<Duration> {
    let mut intervals = Vec::new();
    for generator in generators {
        // The typed spec as JSON: one walk covers every polling kind and the raw nested ones.
        let Ok(value) = serde_json::to_value(generator) else {
            continue;
        };
        intervals.extend(own_intervals(&value, git_default));
        let nested = generator.matrix.iter().flat_map(|m| &m.generators);
        let nested = nested.chain(generator.merge.iter().flat_map(|m| &m.generators));
        for child in nested {
            intervals.extend(nested_intervals(child, git_default));
        }
    }
    intervals.into_iter().min()
}

/// The poll interval of `generator` (one generator entry as JSON), if it is of a polling kind.
fn own_intervals(generator: &Value, git_default: Duration) -> Vec<Duration> {
    defaults(git_default)
        .into_iter()
        .filter_map(|(kind, default)| {
            let spec = generator.get(kind)?;
            Some(
                spec.get("requeueAfterSeconds")
                    .and_then(Value::as_u64)
                    .map_or(default, Duration::from_secs),
            )
        })
        .collect()
}

/// The intervals of a child of `matrix`/`merge`, including the children of a nested
/// `matrix`/`merge` (kept as raw JSON).
fn nested_intervals(child: &NestedGeneratorSpec, git_default: Duration) -> Vec<Duration> {
    let Ok(value) = serde_json::to_value(child) else {
        return Vec::new();
    };
    let mut found = own_intervals(&value, git_default);
    let raw_children = [&child.matrix, &child.merge]
        .into_iter()
        .flatten()
        .filter_map(|raw| raw.get("generators")?.as_array())
        .flatten();
    for grandchild in raw_children {
        found.extend(own_intervals(grandchild, git_default));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generators(json: Value) -> Vec<GeneratorSpec> {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_shortest_polling_interval_or_none() {
        let default = Duration::from_secs(180);
        let git = |extra: Value| {
            let mut g = serde_json::json!({"repoURL": "file:///r", "directories": [{"path": "*"}]});
            g.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            g
        };
        let cases = [
            (serde_json::json!([{"list": {"elements": []}}]), None),
            (
                serde_json::json!([{"git": git(serde_json::json!({}))}]),
                Some(180),
            ),
            (
                serde_json::json!([
                    {"git": git(serde_json::json!({"requeueAfterSeconds": 600}))},
                    {"matrix": {"generators": [
                        {"list": {"elements": []}},
                        {"git": git(serde_json::json!({"requeueAfterSeconds": 30}))}
                    ]}}
                ]),
                Some(30),
            ),
            (
                serde_json::json!([{"merge": {"mergeKeys": ["a"], "generators": [
                    {"list": {"elements": []}},
                    {"matrix": {"generators": [
                        {"git": git(serde_json::json!({"requeueAfterSeconds": 5}))},
                        {"list": {"elements": []}}
                    ]}}
                ]}}]),
                Some(5),
            ),
            (
                serde_json::json!([{"plugin": {"configMapRef": {"name": "p"}}}]),
                Some(1800),
            ),
            (
                serde_json::json!([
                    {"plugin": {"configMapRef": {"name": "p"}, "requeueAfterSeconds": 60}},
                    {"matrix": {"generators": [
                        {"list": {"elements": []}},
                        {"clusterDecisionResource": {"configMapRef": "c", "name": "d"}}
                    ]}}
                ]),
                Some(60),
            ),
            (
                serde_json::json!([{"merge": {"mergeKeys": ["a"], "generators": [
                    {"list": {"elements": []}},
                    {"matrix": {"generators": [
                        {"clusterDecisionResource": {"configMapRef": "c", "name": "d", "requeueAfterSeconds": 7}},
                        {"list": {"elements": []}}
                    ]}}
                ]}}]),
                Some(7),
            ),
            (
                serde_json::json!([{"pullRequest": {"github": {"owner": "o", "repo": "r"}}}]),
                Some(1800),
            ),
            (
                serde_json::json!([
                    {"pullRequest": {"github": {"owner": "o", "repo": "r"}, "requeueAfterSeconds": 900}},
                    {"matrix": {"generators": [
                        {"list": {"elements": []}},
                        {"pullRequest": {"gitea": {"owner": "o", "repo": "r", "api": "https://g"}, "requeueAfterSeconds": 20}}
                    ]}}
                ]),
                Some(20),
            ),
            (
                serde_json::json!([{"scmProvider": {"github": {"organization": "o"}}}]),
                Some(1800),
            ),
            (
                serde_json::json!([
                    {"scmProvider": {"gitlab": {"group": "g"}, "requeueAfterSeconds": 600}},
                    {"merge": {"mergeKeys": ["a"], "generators": [
                        {"list": {"elements": []}},
                        {"scmProvider": {"gitea": {"owner": "o", "api": "https://g"}, "requeueAfterSeconds": 45}}
                    ]}}
                ]),
                Some(45),
            ),
        ];
        for (index, (spec, expected)) in cases.into_iter().enumerate() {
            assert_eq!(
                poll_interval(&generators(spec), default),
                expected.map(Duration::from_secs),
                "case {index}"
            );
        }
    }

    #[test]
    fn a_rate_limited_provider_is_asked_again_once_its_limit_is_over() {
        let now = 1_700_000_000;
        assert_eq!(
            rate_limit_requeue(RetryAfter::ResetAt(now + 120), now),
            Duration::from_secs(121)
        );
        assert_eq!(
            rate_limit_requeue(RetryAfter::ResetAt(now - 5), now),
            Duration::from_secs(1)
        );
        assert_eq!(
            rate_limit_requeue(RetryAfter::Seconds(30), now),
            Duration::from_secs(31)
        );
        assert_eq!(
            rate_limit_requeue(RetryAfter::ResetAt(now + 86_400), now),
            MAX_RATE_LIMIT_WAIT
        );
    }

    #[test]
    fn a_baking_step_sleeps_until_the_bake_ends() {
        let input: RolloutInput = serde_json::from_value(serde_json::json!({
            "now": "2026-12-04T15:30:00Z",
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": [
                {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}],
                 "bakeTime": "10m"}
            ]}},
            "applications": [{
                "name": "web", "labels": {"tier": "web"}, "targetRevisions": ["r1"],
                "status": {"health": "Healthy", "sync": "Synced", "revisions": ["r1"]}
            }],
            "priorApplicationStatus": [{"application": "web", "status": "Healthy", "step": "1",
                "targetRevisions": ["r1"]}],
            "priorStepStatus": [{"step": 1, "bakeStartedAt": "2026-12-04T15:25:00Z"}]
        }))
        .unwrap();
        let decision = crate::rollout::advance(&input);
        assert_eq!(
            rollout_requeue(&input, &decision, Duration::from_secs(5)),
            Duration::from_secs(5 * 60 + 1)
        );
    }

    #[test]
    fn a_rollout_waiting_only_for_a_window_sleeps_until_it_opens() {
        let input = |blocked: serde_json::Value| -> RolloutInput {
            serde_json::from_value(serde_json::json!({
                "now": "2026-12-04T15:30:00Z",
                "strategy": {"type": "RollingSync", "rollingSync": {"steps": [
                    {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}
                ]}},
                "applications": [{
                    "name": "web", "labels": {"tier": "web"},
                    "status": {"health": "Healthy", "sync": "OutOfSync"},
                    "syncBlockedBy": blocked
                }]
            }))
            .unwrap()
        };
        let every = Duration::from_secs(5);
        let cases = [
            (serde_json::Value::Null, every),
            (
                serde_json::json!({"window": "freeze", "summary": "deny", "opensAt": "2026-12-07T07:00:00Z", "opens": "Mon 08:00 Europe/Berlin"}),
                Duration::from_secs(2 * 86_400 + 15 * 3600 + 30 * 60 + 1),
            ),
            (
                serde_json::json!({"window": "freeze", "summary": "deny"}),
                WINDOW_RECHECK,
            ),
        ];
        for (blocked, expected) in cases {
            let input = input(blocked.clone());
            let decision = crate::rollout::advance(&input);
            assert_eq!(
                rollout_requeue(&input, &decision, every),
                expected,
                "{blocked}"
            );
        }
    }

    #[test]
    fn a_rollout_waiting_only_for_watched_application_sets_sleeps_until_they_change() {
        let input = |watched: bool| -> RolloutInput {
            serde_json::from_value(serde_json::json!({
                "now": "2026-12-04T15:30:00Z",
                "namespace": "team",
                "applicationSet": "services",
                "strategy": {"type": "RollingSync", "rollingSync": {"steps": [
                    {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["api"]}],
                     "dependsOn": [{"applicationSet": "platform", "step": "1"}]}
                ]}},
                "applications": [{
                    "name": "api", "labels": {"tier": "api"}, "targetRevisions": ["r2"],
                    "status": {"health": "Healthy", "sync": "OutOfSync", "revisions": ["r1"]}
                }],
                "external": [{
                    "namespace": "infra", "name": "platform", "watched": watched,
                    "found": "found",
                    "strategy": {"type": "RollingSync", "rollingSync": {"steps": [
                        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]}
                    ]}},
                    "applicationStatus": [{"application": "db", "status": "Progressing",
                        "step": "1", "targetRevisions": ["r2"]}]
                }]
            }))
            .unwrap()
        };
        let every = Duration::from_secs(5);
        for (watched, expected) in [(true, APPLICATION_SET_RECHECK), (false, every)] {
            let input = input(watched);
            let decision = crate::rollout::advance(&input);
            assert_eq!(
                decision.step_reports[0].state,
                StepState::WaitingForApplicationSet,
                "{decision:?}"
            );
            assert_eq!(
                rollout_requeue(&input, &decision, every),
                expected,
                "{watched}"
            );
        }
    }
}
