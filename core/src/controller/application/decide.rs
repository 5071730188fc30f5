//! Whether an Application syncs now, and why: an operation interrupted by a restart resumes;
//! a requested operation (`spec.operation`) always runs; otherwise `syncPolicy.automated` syncs an
//! OutOfSync Application — unless its ApplicationSet rolls out with RollingSync (the rollout
//! requests its syncs), unless it already failed at this revision (and `allowEmpty` was not
//! set since: a sync refused for empty manifests runs once it is), and (without `selfHeal`)
//! unless it already synced this revision. Pure: the clock is an argument.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use crate::api::application::{Application, Operation};
use crate::api::application_set::{ApplicationSet, StrategyType};
use crate::sync::OperationPhase;

/// How long self-heal waits after the last sync before syncing drift away again.
pub const SELF_HEAL_DELAY: Duration = Duration::from_secs(5);

/// Who may start syncs of an Application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncGate {
    /// `syncPolicy.automated` applies.
    Automatic,
    /// Its ApplicationSet uses RollingSync: only `spec.operation` starts syncs.
    RolloutControlled,
}

/// The gate of an Application controlled by `owner` (its owning ApplicationSet, if any).
#[must_use]
pub fn sync_gate(owner: Option<&ApplicationSet>) -> SyncGate {
    let rolling = owner
        .and_then(|appset| appset.spec.strategy.as_ref())
        .is_some_and(|strategy| strategy.type_ == StrategyType::RollingSync);
    if rolling {
        SyncGate::RolloutControlled
    } else {
        SyncGate::Automatic
    }
}

/// Why a sync runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// `status.operationState` is Running: an interrupted operation continues at its revision.
    Resume { revision: Option<String> },
    /// `spec.operation` asks for a sync.
    Requested(Operation),
    /// `syncPolicy.automated` on an OutOfSync Application (which prunes when it says so).
    Automated,
}

/// Whether `requested` (still in `spec.operation`) is the request that started `running`
/// (`status.operation` of the operation being resumed): the controller stopped after storing
/// the operation and before removing the request, which is then consumed, not run a second
/// time. Same initiator and sync options, and a commit the request names is the one running
/// (an empty revision, a branch or a tag resolved to it).
#[must_use]
pub fn request_started(requested: &Operation, running: &Operation) -> bool {
    let revision = &requested.sync.revision;
    let names_a_commit = revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit());
    requested.initiated_by == running.initiated_by
        && requested.sync.sync_options == running.sync.sync_options
        && (!names_a_commit || *revision == running.sync.revision)
}

/// The sync to run now, if any, for `app` whose comparison found it OutOfSync or not at
/// `revision`.
#[must_use]
pub fn next_sync(
    app: &Application,
    out_of_sync: bool,
    revision: Option<&str>,
    gate: SyncGate,
    now: Timestamp,
) -> Option<Trigger> {
    let last = app.status.as_ref().and_then(|s| s.operation_state.as_ref());
    if let Some(last) = last.filter(|l| l.phase == OperationPhase::Running) {
        return Some(Trigger::Resume {
            revision: last.revision.clone(),
        });
    }
    if let Some(operation) = &app.spec.operation {
        return Some(Trigger::Requested(operation.clone()));
    }
    let automated = app.spec.sync_policy.as_ref()?.automated.as_ref()?;
    if gate == SyncGate::RolloutControlled || !out_of_sync {
        return None;
    }
    if let Some(last) = last.filter(|l| l.revision.as_deref() == revision) {
        let recent = last.finished_at.as_ref().is_some_and(|finished| {
            now.duration_since(finished.0)
                .unsigned_abs()
                .lt(&SELF_HEAL_DELAY)
        });
        let allowed_empty_since = automated.allow_empty
            && !app
                .status
                .as_ref()
                .and_then(|s| s.operation.as_ref())
                .is_some_and(|operation| operation.sync.allow_empty);
        let skip = match last.phase {
            OperationPhase::Failed | OperationPhase::Error => !allowed_empty_since,
            OperationPhase::Terminating | OperationPhase::Terminated => true,
            OperationPhase::Succeeded => !automated.self_heal || recent,
            OperationPhase::Running => false,
        };
        if skip {
            return None;
        }
    }
    Some(Trigger::Automated)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    use super::*;
    use crate::sync::OperationState;

    fn app(
        automated: Option<serde_json::Value>,
        operation: bool,
        last: Option<(OperationPhase, &str, i64)>,
    ) -> Application {
        let mut value = json!({
            "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application", "metadata": {"name": "a"},
            "spec": {"project": "default", "source": {"repoURL": "file:///r"}, "destination": {}}
        });
        if let Some(automated) = automated {
            value["spec"]["syncPolicy"] = json!({"automated": automated});
        }
        if operation {
            value["spec"]["operation"] =
                json!({"sync": {"revision": "def"}, "initiatedBy": {"username": "rollout/stack"}});
        }
        if let Some((phase, revision, finished)) = last {
            let state = OperationState {
                phase,
                message: String::new(),
                revision: Some(revision.into()),
                revisions: Vec::new(),
                operation_id: "op".into(),
                failure: None,
                started_at: None,
                finished_at: Some(Time(Timestamp::from_second(finished).unwrap())),
                resources: Vec::new(),
            };
            value["status"] = json!({"operationState": state});
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn decisions() {
        use OperationPhase::*;
        let now = Timestamp::from_second(1000).unwrap();
        let auto = || Some(json!({"prune": true}));
        let heal = || Some(json!({"selfHeal": true}));
        let automated = Some(Trigger::Automated);
        let healed = Some(Trigger::Automated);
        let requested =
            |a: &Application| Some(Trigger::Requested(a.spec.operation.clone().unwrap()));
        let cases: Vec<(&str, Application, bool, SyncGate, Option<Trigger>)> = vec![
            (
                "manual, out of sync",
                app(None, false, None),
                true,
                SyncGate::Automatic,
                None,
            ),
            (
                "automated, out of sync",
                app(auto(), false, None),
                true,
                SyncGate::Automatic,
                automated.clone(),
            ),
            (
                "automated, synced",
                app(auto(), false, None),
                false,
                SyncGate::Automatic,
                None,
            ),
            (
                "rollout controlled",
                app(auto(), false, None),
                true,
                SyncGate::RolloutControlled,
                None,
            ),
            (
                "new revision",
                app(auto(), false, Some((Succeeded, "old", 990))),
                true,
                SyncGate::Automatic,
                automated.clone(),
            ),
            (
                "drift without selfHeal",
                app(auto(), false, Some((Succeeded, "abc", 100))),
                true,
                SyncGate::Automatic,
                None,
            ),
            (
                "drift with selfHeal",
                app(heal(), false, Some((Succeeded, "abc", 100))),
                true,
                SyncGate::Automatic,
                healed,
            ),
            (
                "selfHeal waits",
                app(heal(), false, Some((Succeeded, "abc", 998))),
                true,
                SyncGate::Automatic,
                None,
            ),
            (
                "failed at this revision",
                app(heal(), false, Some((Failed, "abc", 100))),
                true,
                SyncGate::Automatic,
                None,
            ),
            (
                "failed at this revision, allowEmpty set since",
                app(
                    Some(json!({"prune": true, "allowEmpty": true})),
                    false,
                    Some((Failed, "abc", 100)),
                ),
                true,
                SyncGate::Automatic,
                automated.clone(),
            ),
            (
                "interrupted",
                app(None, true, Some((Running, "old", 100))),
                false,
                SyncGate::RolloutControlled,
                Some(Trigger::Resume {
                    revision: Some("old".into()),
                }),
            ),
        ];
        for (name, application, out_of_sync, gate, expected) in cases {
            assert_eq!(
                next_sync(&application, out_of_sync, Some("abc"), gate, now),
                expected,
                "{name}"
            );
        }
        for gate in [SyncGate::Automatic, SyncGate::RolloutControlled] {
            let asked = app(None, true, Some((Succeeded, "abc", 999)));
            assert_eq!(
                next_sync(&asked, false, Some("abc"), gate, now),
                requested(&asked),
                "{gate:?}"
            );
        }
    }

    #[test]
    fn rolling_sync_owners_control_syncs() {
        let appset = |strategy: serde_json::Value| -> ApplicationSet {
            serde_json::from_value(json!({
                "apiVersion": "flotilla.dev/v1alpha1", "kind": "ApplicationSet", "metadata": {"name": "s"},
                "spec": {"generators": [], "template": {"metadata": {"name": "x"},
                         "spec": {"project": "p", "source": {"repoURL": "r"}, "destination": {}}},
                         "strategy": strategy}
            }))
            .unwrap()
        };
        assert_eq!(sync_gate(None), SyncGate::Automatic);
        assert_eq!(
            sync_gate(Some(&appset(json!({"type": "AllAtOnce"})))),
            SyncGate::Automatic
        );
        assert_eq!(
            sync_gate(Some(&appset(
                json!({"type": "RollingSync", "rollingSync": {"steps": []}})
            ))),
            SyncGate::RolloutControlled
        );
    }

    #[test]
    fn a_request_left_behind_by_a_stop_is_recognised_as_the_running_operation() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let operation = |user: &str, revision: &str, options: &[&str]| Operation {
            sync: crate::api::application::SyncOperation {
                revision: revision.to_owned(),
                sync_options: options.iter().map(|o| (*o).to_owned()).collect(),
                ..Default::default()
            },
            initiated_by: crate::api::application::InitiatedBy {
                username: user.to_owned(),
                automated: false,
            },
        };
        let running = operation("rollout/stack", sha, &[]);
        let cases = [
            (operation("rollout/stack", sha, &[]), true),
            (operation("rollout/stack", "", &[]), true),
            (operation("rollout/stack", "main", &[]), true),
            (
                operation(
                    "rollout/stack",
                    "fedcba9876543210fedcba9876543210fedcba98",
                    &[],
                ),
                false,
            ),
            (operation("alice", sha, &[]), false),
            (operation("rollout/stack", sha, &["Replace=true"]), false),
        ];
        for (requested, started) in cases {
            assert_eq!(
                request_started(&requested, &running),
                started,
                "{requested:?}"
            );
        }
    }
}
