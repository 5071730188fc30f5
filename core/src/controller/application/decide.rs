//! Whether an Application syncs now, and why: an operation interrupted by a restart resumes;
//! a requested operation (`spec.operation`) always runs; otherwise `syncPolicy.automated` (unless
//! `enabled: false`) syncs an
//! OutOfSync Application — unless its ApplicationSet rolls out with RollingSync (the rollout
//! requests its syncs), unless it already failed at this revision (and `allowEmpty` was not
//! set since: a sync refused for empty manifests runs once it is), and (without `selfHeal`)
//! unless it already synced this revision. With `selfHeal`, drift at the synced revision is
//! synced away after Argo CD's self-heal backoff: the wait is counted from the end of the last
//! operation (as Argo CD's `selfHealTimeoutSeconds`), and is 0 for the first self-heal, then
//! 2 s, 6 s, 18 s … (×3, at most 5 min) for each further one in a row, so that another writer
//! re-applying its change is fought ever more slowly; the count (`status.operation.sync.
//! selfHealAttemptsCount`, as Argo CD keeps it) starts again once the last operation ended more
//! than [`SELF_HEAL_COOLDOWN`] ago. Pure: the clock is an argument.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use crate::api::application::{Application, Operation};
use crate::api::application_set::{ApplicationSet, StrategyType};
use crate::sync::OperationPhase;

/// The wait before the second self-heal in a row (Argo CD's `selfHealBackoff` duration).
pub const SELF_HEAL_BACKOFF: Duration = Duration::from_secs(2);
/// How much longer each further self-heal in a row waits (Argo CD's backoff factor).
pub const SELF_HEAL_BACKOFF_FACTOR: u32 = 3;
/// The longest self-heal wait (Argo CD's backoff cap).
pub const SELF_HEAL_BACKOFF_CAP: Duration = Duration::from_secs(300);
/// How long after the last operation a new drift counts as the first again (Argo CD's
/// cooldown).
pub const SELF_HEAL_COOLDOWN: Duration = Duration::from_secs(330);

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
    /// `syncPolicy.automated.selfHeal` on an Application that drifted from the revision it
    /// synced: the `attempts`th self-heal in a row.
    SelfHeal { attempts: u32 },
}

/// What the controller does about syncing an Application now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextSync {
    /// Start (or resume) this sync.
    Now(Trigger),
    /// A self-heal is due after this wait: compare again then.
    After(Duration),
    /// No sync.
    Idle,
}

/// The wait before the self-heal that follows `attempts` self-heals in a row (see the module
/// documentation).
#[must_use]
pub fn self_heal_wait(attempts: u32) -> Duration {
    match attempts {
        0 => Duration::ZERO,
        n => SELF_HEAL_BACKOFF_FACTOR
            .checked_pow(n - 1)
            .and_then(|factor| SELF_HEAL_BACKOFF.checked_mul(factor))
            .map_or(SELF_HEAL_BACKOFF_CAP, |wait| {
                wait.min(SELF_HEAL_BACKOFF_CAP)
            }),
    }
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
) -> NextSync {
    let last = app.status.as_ref().and_then(|s| s.operation_state.as_ref());
    if let Some(last) = last.filter(|l| l.phase == OperationPhase::Running) {
        return NextSync::Now(Trigger::Resume {
            revision: last.revision.clone(),
        });
    }
    if let Some(operation) = &app.spec.operation {
        return NextSync::Now(Trigger::Requested(operation.clone()));
    }
    let Some(automated) = app
        .spec
        .sync_policy
        .as_ref()
        .and_then(|policy| policy.automated_enabled())
    else {
        return NextSync::Idle;
    };
    if gate == SyncGate::RolloutControlled || !out_of_sync {
        return NextSync::Idle;
    }
    let Some(last) = last.filter(|l| l.revision.as_deref() == revision) else {
        return NextSync::Now(Trigger::Automated);
    };
    let ran = app.status.as_ref().and_then(|s| s.operation.as_ref());
    match last.phase {
        OperationPhase::Failed | OperationPhase::Error => {
            let allowed_empty_since =
                automated.allow_empty && !ran.is_some_and(|operation| operation.sync.allow_empty);
            if allowed_empty_since {
                NextSync::Now(Trigger::Automated)
            } else {
                NextSync::Idle
            }
        }
        OperationPhase::Terminating | OperationPhase::Terminated => NextSync::Idle,
        OperationPhase::Running => NextSync::Now(Trigger::Automated),
        OperationPhase::Succeeded if !automated.self_heal => NextSync::Idle,
        OperationPhase::Succeeded => {
            let since = last.finished_at.as_ref().map_or(Duration::MAX, |finished| {
                Duration::try_from(now.duration_since(finished.0)).unwrap_or_default()
            });
            let in_a_row = ran.map_or(0, |operation| operation.sync.self_heal_attempts_count);
            let attempts = if since >= SELF_HEAL_COOLDOWN {
                0
            } else {
                in_a_row
            };
            match self_heal_wait(attempts).checked_sub(since) {
                Some(wait) if !wait.is_zero() => NextSync::After(wait),
                _ => NextSync::Now(Trigger::SelfHeal {
                    attempts: attempts + 1,
                }),
            }
        }
    }
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
        let automated = NextSync::Now(Trigger::Automated);
        let healed = NextSync::Now(Trigger::SelfHeal { attempts: 1 });
        let none = NextSync::Idle;
        let requested =
            |a: &Application| NextSync::Now(Trigger::Requested(a.spec.operation.clone().unwrap()));
        let cases: Vec<(&str, Application, bool, SyncGate, NextSync)> = vec![
            (
                "manual, out of sync",
                app(None, false, None),
                true,
                SyncGate::Automatic,
                none.clone(),
            ),
            (
                "automated, out of sync",
                app(auto(), false, None),
                true,
                SyncGate::Automatic,
                automated.clone(),
            ),
            (
                "automated suspended (enabled: false), out of sync",
                app(
                    Some(json!({"prune": true, "enabled": false})),
                    false,
                    Some((Succeeded, "old", 990)),
                ),
                true,
                SyncGate::Automatic,
                none.clone(),
            ),
            (
                "automated, synced",
                app(auto(), false, None),
                false,
                SyncGate::Automatic,
                none.clone(),
            ),
            (
                "rollout controlled",
                app(auto(), false, None),
                true,
                SyncGate::RolloutControlled,
                none.clone(),
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
                none.clone(),
            ),
            (
                "drift with selfHeal",
                app(heal(), false, Some((Succeeded, "abc", 100))),
                true,
                SyncGate::Automatic,
                healed.clone(),
            ),
            (
                "first selfHeal right after the sync",
                app(heal(), false, Some((Succeeded, "abc", 999))),
                true,
                SyncGate::Automatic,
                healed,
            ),
            (
                "failed at this revision",
                app(heal(), false, Some((Failed, "abc", 100))),
                true,
                SyncGate::Automatic,
                none.clone(),
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
                NextSync::Now(Trigger::Resume {
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
    fn self_heal_backs_off_for_a_drift_that_keeps_coming_back() {
        let now = Timestamp::from_second(10_000).unwrap();
        let healed_before = |attempts: u32, finished_ago: i64| {
            let mut healed = app(
                Some(json!({"selfHeal": true})),
                false,
                Some((OperationPhase::Succeeded, "abc", 10_000 - finished_ago)),
            );
            let status = healed.status.as_mut().unwrap();
            let mut operation = Operation::default();
            operation.sync.self_heal_attempts_count = attempts;
            status.operation = Some(operation);
            next_sync(&healed, true, Some("abc"), SyncGate::Automatic, now)
        };
        let heal = |attempts| NextSync::Now(Trigger::SelfHeal { attempts });
        let wait = |seconds| NextSync::After(Duration::from_secs(seconds));
        let cases = [
            ("first drift", healed_before(0, 0), heal(1)),
            ("second, 1 s after the first", healed_before(1, 1), wait(1)),
            ("second, 2 s after", healed_before(1, 2), heal(2)),
            ("third", healed_before(2, 1), wait(5)),
            ("fourth", healed_before(3, 10), wait(8)),
            ("capped", healed_before(20, 100), wait(200)),
            ("after the cooldown", healed_before(20, 330), heal(1)),
        ];
        for (case, decided, expected) in cases {
            assert_eq!(decided, expected, "{case}");
        }
        let waits: Vec<u64> = (0..8).map(|n| self_heal_wait(n).as_secs()).collect();
        assert_eq!(waits, [0, 2, 6, 18, 54, 162, 300, 300]);
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
