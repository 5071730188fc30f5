//! The events of the triggers, read from what the controllers record in status: a step started
//! (an Application of the step left Waiting for the revision rolled out), completed (all of its
//! Applications Healthy at it), waiting for approval (`status.rolloutSteps`), the rollout
//! stalled (`RolloutProgressing=False`, `RolloutStalled`) or rolled back
//! (`status.rolloutRollback`), a sync failed (the operation's phase), an Application Degraded.
//! Each has a key naming it once and for all — the step and revision, the start of the wait, the
//! stall's transition time, the rollback's start, the operation, the revision Degraded at — so
//! that the same event seen again (another watch event,
//! a restart) is recognised; and the variables its message template is rendered with. State, not
//! transitions: whatever happened while no controller was watching is still seen. Pure.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde_json::{Value, json};

use super::trigger::Trigger;
use crate::api::application_set_status::{
    ApplicationSetApplicationStatus, ConditionStatus, ConditionType, RolloutApplicationState,
};
use crate::api::{Application, ApplicationSet};
use crate::health::HealthStatus;
use crate::sync::OperationPhase;

/// One event.
#[derive(Clone, Debug, PartialEq)]
pub struct Occurrence {
    pub trigger: Trigger,
    /// Its identity: equal for the same event however often it is seen.
    pub key: String,
    /// When it happened, when status says (a transition time).
    pub at: Option<Timestamp>,
    /// The variables of its message template.
    pub vars: serde_json::Map<String, Value>,
}

/// The reason of `RolloutProgressing` when the rollout stalled.
const STALLED: &str = "RolloutStalled";

/// The events an ApplicationSet's RollingSync status shows now.
#[must_use]
pub fn of_application_set(appset: &ApplicationSet) -> Vec<Occurrence> {
    let Some(status) = &appset.status else {
        return Vec::new();
    };
    let name = appset.metadata.name.clone().unwrap_or_default();
    let namespace = appset.metadata.namespace.clone().unwrap_or_default();
    let mut steps: BTreeMap<u32, Vec<_>> = BTreeMap::new();
    for entry in &status.application_status {
        if let Ok(step) = entry.step.parse::<u32>() {
            steps.entry(step).or_default().push(entry);
        }
    }
    let count = steps.len();
    let mut found = Vec::new();
    let mut current = None;
    for (step, entries) in &steps {
        let moving: Vec<_> = entries
            .iter()
            .filter(|e| {
                e.status != RolloutApplicationState::Waiting && !e.target_revisions.is_empty()
            })
            .collect();
        let revisions: BTreeSet<String> = moving
            .iter()
            .map(|e| e.target_revisions.join(","))
            .collect();
        let Some(revision) = revisions.into_iter().next() else {
            current.get_or_insert(*step);
            continue;
        };
        let applications: Vec<&str> = entries.iter().map(|e| e.application.as_str()).collect();
        let vars = |trigger: Trigger| {
            let mut vars = base_vars(trigger, "ApplicationSet", &namespace, &name);
            vars.insert("step".into(), json!(step.to_string()));
            vars.insert("steps".into(), json!(count.to_string()));
            vars.insert("revision".into(), json!(revision));
            vars.insert("applications".into(), json!(applications));
            vars
        };
        let key = |trigger: Trigger| format!("{}/step-{step}/{revision}", trigger.as_str());
        found.push(Occurrence {
            trigger: Trigger::StepStarted,
            key: key(Trigger::StepStarted),
            at: latest(moving.iter().map(|e| **e)),
            vars: vars(Trigger::StepStarted),
        });
        let healthy = entries.iter().all(|e| {
            e.status == RolloutApplicationState::Healthy && e.target_revisions.join(",") == revision
        });
        if healthy {
            found.push(Occurrence {
                trigger: Trigger::StepCompleted,
                key: key(Trigger::StepCompleted),
                at: latest(entries.iter().copied()),
                vars: vars(Trigger::StepCompleted),
            });
        } else {
            current.get_or_insert(*step);
        }
    }
    let stalled = status.conditions.iter().find(|c| {
        c.type_ == ConditionType::RolloutProgressing
            && c.status == ConditionStatus::False
            && c.reason == STALLED
    });
    for record in &status.rollout_steps {
        let Some(since) = record.waiting_for_approval_since.as_ref().map(|t| t.0) else {
            continue;
        };
        let trigger = Trigger::StepWaitingForApproval;
        let mut vars = base_vars(trigger, "ApplicationSet", &namespace, &name);
        vars.insert("step".into(), json!(record.step.to_string()));
        vars.insert("steps".into(), json!(count.to_string()));
        vars.insert("since".into(), json!(since.to_string()));
        found.push(Occurrence {
            trigger,
            key: format!("{}/step-{}/{since}", trigger.as_str(), record.step),
            at: Some(since),
            vars,
        });
    }
    if let Some(rollback) = &status.rollout_rollback {
        let trigger = Trigger::RolledBack;
        let started = rollback.started_at.0;
        let mut vars = base_vars(trigger, "ApplicationSet", &namespace, &name);
        vars.insert("step".into(), json!(rollback.failed_step.to_string()));
        vars.insert("steps".into(), json!(count.to_string()));
        vars.insert("message".into(), json!(rollback.failure));
        let applications: Vec<&str> = rollback
            .applications
            .iter()
            .map(|app| app.application.as_str())
            .collect();
        vars.insert("applications".into(), json!(applications));
        found.push(Occurrence {
            trigger,
            key: format!("{}/{started}", trigger.as_str()),
            at: Some(started),
            vars,
        });
    }
    if let Some(condition) = stalled {
        let at = condition.last_transition_time.as_ref().map(|t| t.0);
        let mut vars = base_vars(Trigger::StepStalled, "ApplicationSet", &namespace, &name);
        vars.insert(
            "step".into(),
            json!(current.map(|s| s.to_string()).unwrap_or_default()),
        );
        vars.insert("steps".into(), json!(count.to_string()));
        vars.insert("message".into(), json!(condition.message));
        found.push(Occurrence {
            trigger: Trigger::StepStalled,
            key: format!(
                "{}/{}",
                Trigger::StepStalled.as_str(),
                at.map_or_else(|| condition.message.clone(), |t| t.to_string())
            ),
            at,
            vars,
        });
    }
    found
}

/// The latest transition time of `entries`.
fn latest<'a>(
    entries: impl Iterator<Item = &'a ApplicationSetApplicationStatus>,
) -> Option<Timestamp> {
    entries
        .filter_map(|e| e.last_transition_time.as_ref().map(|t| t.0))
        .max()
}

/// The events an Application's status shows now.
#[must_use]
pub fn of_application(app: &Application) -> Vec<Occurrence> {
    let Some(status) = &app.status else {
        return Vec::new();
    };
    let name = app.metadata.name.clone().unwrap_or_default();
    let namespace = app.metadata.namespace.clone().unwrap_or_default();
    let revision = status
        .sync
        .as_ref()
        .map(|s| s.revision.clone())
        .unwrap_or_default();
    let mut found = Vec::new();
    if let Some(operation) = &status.operation_state
        && matches!(
            operation.phase,
            OperationPhase::Failed | OperationPhase::Error
        )
    {
        let started = operation.started_at.as_ref().map(|t| t.0.to_string());
        let mut vars = base_vars(Trigger::SyncFailed, "Application", &namespace, &name);
        vars.insert(
            "revision".into(),
            json!(operation.revision.clone().unwrap_or_default()),
        );
        vars.insert("message".into(), json!(operation.message));
        vars.insert("phase".into(), json!(format!("{:?}", operation.phase)));
        found.push(Occurrence {
            trigger: Trigger::SyncFailed,
            key: format!(
                "{}/{}",
                Trigger::SyncFailed.as_str(),
                started.unwrap_or_else(|| operation.operation_id.clone())
            ),
            at: operation.finished_at.as_ref().map(|t| t.0),
            vars,
        });
    }
    if let Some(health) = &status.health
        && health.status == HealthStatus::Degraded
    {
        let mut vars = base_vars(Trigger::HealthDegraded, "Application", &namespace, &name);
        vars.insert("revision".into(), json!(revision));
        vars.insert("message".into(), json!(health.message));
        found.push(Occurrence {
            trigger: Trigger::HealthDegraded,
            key: format!("{}/{revision}", Trigger::HealthDegraded.as_str()),
            at: None,
            vars,
        });
    }
    found
}

/// The variables every event has.
fn base_vars(
    trigger: Trigger,
    kind: &str,
    namespace: &str,
    name: &str,
) -> serde_json::Map<String, Value> {
    let mut vars = serde_json::Map::new();
    vars.insert("trigger".into(), json!(trigger.as_str()));
    vars.insert("kind".into(), json!(kind));
    vars.insert("namespace".into(), json!(namespace));
    vars.insert("name".into(), json!(name));
    let named = if kind == "Application" {
        "application"
    } else {
        "applicationSet"
    };
    vars.insert(named.into(), json!(name));
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn appset(status: Value) -> ApplicationSet {
        serde_json::from_value(json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "ApplicationSet",
            "metadata": {"name": "stack", "namespace": "fleet"},
            "spec": {"generators": [], "template": {"metadata": {"name": "x"}, "spec": {
                "project": "p", "source": {"repoURL": "r"}, "destination": {}}}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_step_waiting_for_approval_and_a_rollback_are_events_named_by_when_they_began() {
        let set = appset(json!({
            "rolloutSteps": [
                {"step": 1, "approvedAt": "2026-12-03T10:00:00Z"},
                {"step": 2, "waitingForApprovalSince": "2026-12-03T10:05:00Z"}
            ],
            "rolloutRollback": {
                "failedStep": 2,
                "failure": "backend Degraded",
                "startedAt": "2026-12-03T10:09:00Z",
                "applications": [
                    {"application": "backend", "step": 2, "revisions": ["abc"]},
                    {"application": "database", "step": 1, "revisions": ["abc"]}
                ]
            }
        }));
        let found = of_application_set(&set);
        let keys: Vec<&str> = found.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "on-step-waiting-for-approval/step-2/2026-12-03T10:05:00Z",
                "on-rolled-back/2026-12-03T10:09:00Z"
            ]
        );
        let waiting = &found[0];
        assert_eq!(waiting.trigger, Trigger::StepWaitingForApproval);
        assert_eq!(waiting.vars["step"], json!("2"));
        assert_eq!(waiting.vars["applicationSet"], json!("stack"));
        let rolled_back = &found[1];
        assert_eq!(rolled_back.trigger, Trigger::RolledBack);
        assert_eq!(rolled_back.vars["message"], json!("backend Degraded"));
        assert_eq!(
            rolled_back.vars["applications"],
            json!(["backend", "database"])
        );
        assert_eq!(
            rolled_back.at,
            Some("2026-12-03T10:09:00Z".parse().unwrap())
        );
        // Approved, the wait is over: no event; the one already seen keeps its key.
        let approved =
            appset(json!({"rolloutSteps": [{"step": 2, "approvedAt": "2026-12-03T10:06:00Z"}]}));
        assert!(of_application_set(&approved).is_empty());
    }
}
