//! `onFailure: rollback` (a Flotilla extension of RollingSync): when a step fails — an
//! Application Degraded during its bake or on the target revision, or its sync failed — the
//! Applications of that step that took the new revision, and with `rollbackCompletedSteps` those
//! of earlier steps in reverse step order, are synced back, one step at a time, to the last
//! revisions each was Healthy on (the newest entry of its `status.history` at other revisions
//! than its target). The rollback is kept in `status.rolloutRollback`: which Applications, to
//! which revisions, and which are back already. An Application is back once its last operation
//! Succeeded at its rollback revisions; its rollback sync is requested only while its last
//! operation is at other revisions and none runs (a request already written is never written
//! twice: the shell skips an Application whose `spec.operation` is set), so a controller killed
//! at any moment resumes the rollback and syncs each Application back exactly once. The rollout
//! then holds: nothing of the failed revision is synced again until a new revision reaches one of
//! the rolled-back Applications, which ends the rollback and starts a fresh rollout. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::input::ApplicationState;
use crate::api::application_set_status::{RolledBackApplication, RolloutRollback};
use crate::api::operation_state::OperationPhase;

/// One rollback sync to request: `application` back to `revisions`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RollbackSync {
    pub application: String,
    pub revisions: Vec<String>,
}

/// What a pass makes of a rollback.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct RollbackPass {
    /// The syncs to request now.
    pub requests: Vec<RollbackSync>,
    /// Rollback syncs that failed, described (the rollback waits there: a person must act).
    pub failed: Vec<String>,
}

/// A rollback of the step numbered `failed_step` (1-based) for `failure`, starting `now`.
/// `steps` lists, in rollback order (the failed step first), each step's number and its
/// Applications with whether each took the new revision. Every Application of those steps is
/// recorded (its target tells a new revision); one that did not take the new revision, or has
/// no earlier one, has nothing to roll back and counts as back at once.
pub(super) fn begin(
    failed_step: usize,
    failure: String,
    steps: &[(usize, Vec<(&ApplicationState, bool)>)],
    now: Timestamp,
) -> RolloutRollback {
    let applications = steps
        .iter()
        .flat_map(|(step, apps)| {
            apps.iter().map(move |(app, took)| {
                let revisions = if *took {
                    app.previous_revisions.clone()
                } else {
                    Vec::new()
                };
                RolledBackApplication {
                    application: app.name.clone(),
                    step: *step as u64,
                    // Nothing to do (did not take the failed revision, or no earlier one): back.
                    rolled_back_at: revisions.is_empty().then_some(Time(now)),
                    revisions,
                    from_revisions: app.target().to_vec(),
                }
            })
        })
        .collect();
    RolloutRollback {
        failed_step: failed_step as u64,
        failure,
        started_at: Time(now),
        completed_at: None,
        applications,
    }
}

/// Whether a new revision reached one of the rolled-back Applications (its target is not the
/// one it was rolled back from): the rollback's hold is over.
pub(super) fn superseded<'a>(
    rollback: &RolloutRollback,
    app: impl Fn(&str) -> Option<&'a ApplicationState>,
) -> bool {
    rollback.applications.iter().any(|entry| {
        app(&entry.application).is_some_and(|app| app.target() != entry.from_revisions.as_slice())
    })
}

/// Moves `rollback` along: Applications whose last operation Succeeded at their rollback
/// revisions are back (recorded `now`); for the first step in rollback order with any not back,
/// their syncs are requested (unless one runs or failed). Completes the record once all are back.
pub(super) fn advance<'a>(
    rollback: &mut RolloutRollback,
    app: impl Fn(&str) -> Option<&'a ApplicationState>,
    now: Timestamp,
) -> RollbackPass {
    let mut pass = RollbackPass::default();
    for entry in &mut rollback.applications {
        let Some(observed) = app(&entry.application) else {
            // Gone from the ApplicationSet: nothing left to roll back.
            entry.rolled_back_at.get_or_insert(Time(now));
            continue;
        };
        let last = observed.status.operation_state.as_ref();
        let at_rollback = last.is_some_and(|op| op.revisions == entry.revisions);
        if entry.rolled_back_at.is_none()
            && at_rollback
            && last.is_some_and(|op| op.phase == OperationPhase::Succeeded)
        {
            entry.rolled_back_at = Some(Time(now));
        }
    }
    let Some(stage) = rollback
        .applications
        .iter()
        .find(|entry| entry.rolled_back_at.is_none())
        .map(|entry| entry.step)
    else {
        rollback.completed_at.get_or_insert(Time(now));
        return pass;
    };
    for entry in rollback
        .applications
        .iter()
        .filter(|entry| entry.step == stage && entry.rolled_back_at.is_none())
    {
        let last = app(&entry.application).and_then(|a| a.status.operation_state.as_ref());
        match last {
            Some(op) if op.phase.running() => {}
            Some(op) if op.revisions == entry.revisions && op.phase.failed() => {
                pass.failed.push(format!(
                    "{} rollback sync {:?}{}",
                    entry.application,
                    op.phase,
                    if op.message.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", op.message)
                    }
                ));
            }
            _ => pass.requests.push(RollbackSync {
                application: entry.application.clone(),
                revisions: entry.revisions.clone(),
            }),
        }
    }
    pass
}

/// `abc1234` for a commit, the revision itself otherwise; several joined by commas.
pub(super) fn short(revisions: &[String]) -> String {
    let shown: Vec<&str> = revisions
        .iter()
        .map(|r| {
            if r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()) {
                &r[..7]
            } else {
                r.as_str()
            }
        })
        .collect();
    shown.join(",")
}

/// What the rollout status of a rolled-back Application says.
pub(super) fn entry_message(entry: &RolledBackApplication, failed_step: u64) -> String {
    if entry.revisions.is_empty() {
        format!(
            "step {failed_step} failed; nothing to roll back here (not on the failed revision, or no earlier revision in status.history); waits for a new revision"
        )
    } else if entry.rolled_back_at.is_some() {
        format!(
            "rolled back to {} after step {failed_step} failed; waits for a new revision",
            short(&entry.revisions)
        )
    } else {
        format!(
            "rolling back to {} after step {failed_step} failed",
            short(&entry.revisions)
        )
    }
}

/// What the `RolloutRolledBack` condition says: the failed step, why, each Application with
/// something to roll back with the revisions it goes back to and from and whether it is back,
/// and the rollback syncs that `failed`.
pub(super) fn describe(rollback: &RolloutRollback, steps: usize, failed: &[String]) -> String {
    let apps: Vec<String> = rollback
        .applications
        .iter()
        .filter(|entry| !entry.revisions.is_empty())
        .map(|entry| {
            format!(
                "{} (step {}) {} {} from {}",
                entry.application,
                entry.step,
                if entry.rolled_back_at.is_some() {
                    "back on"
                } else {
                    "rolling back to"
                },
                short(&entry.revisions),
                short(&entry.from_revisions)
            )
        })
        .collect();
    let what = if apps.is_empty() {
        "no Application had an earlier revision to roll back to".to_string()
    } else {
        apps.join(", ")
    };
    let state = if rollback.completed_at.is_some() {
        "rolled back"
    } else {
        "rolling back"
    };
    let stuck = if failed.is_empty() {
        String::new()
    } else {
        format!("; stuck: {}", failed.join(", "))
    };
    format!(
        "step {} of {steps} failed ({}); {state}: {what}{stuck}; nothing of the failed revision syncs again until a new revision reaches them",
        rollback.failed_step, rollback.failure
    )
}
