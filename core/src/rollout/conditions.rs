//! The conditions a rollout sets on its ApplicationSet, their reasons, and merging them into the
//! existing conditions so `lastTransitionTime` only moves when a condition's status changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::api::application_set_status::{ApplicationSetCondition, ConditionStatus, ConditionType};

/// The condition types the rollout owns; [`merge_conditions`] replaces exactly these.
pub const ROLLOUT_CONDITION_TYPES: [ConditionType; 5] = [
    ConditionType::RolloutProgressing,
    ConditionType::InvalidRolloutConfig,
    ConditionType::UnselectedApplications,
    ConditionType::RolloutRolledBack,
    ConditionType::InvalidRolloutDependency,
];

/// The reason of the `UnselectedApplications` condition: some Applications match no step.
pub const REASON_NO_MATCHING_STEP: &str = "NoMatchingStep";

/// Reasons of the `RolloutProgressing` condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressReason {
    /// A step has syncs in flight or promoted now (True).
    StepProgressing,
    /// A step waits for something other than a free slot (True).
    StepWaiting,
    /// A sync window holds the step back (True: it proceeds when the window opens).
    StepWaitingForWindow,
    /// A step's `maxUpdate` is 0 (True: work is left, but it waits for a person).
    StepHeld,
    /// A step's Applications are Healthy and it bakes (True: it completes when the bake ends).
    StepBaking,
    /// A step with `approval: manual` waits for `flotilla rollout promote` (True).
    StepWaitingForApproval,
    /// A step waits for a step of another ApplicationSet (`dependsOn`; True).
    StepWaitingForApplicationSet,
    /// A step's analysis runs (True: it completes when the analysis passes).
    StepAnalysing,
    /// The rollout is paused (True).
    RolloutPaused,
    /// A step failed its bake or its analysis (False: it stays failed until a new revision reaches it).
    StepFailed,
    /// A step is stalled (False).
    RolloutStalled,
    /// A failed step was rolled back (`onFailure: rollback`; False until a new revision).
    RolloutRolledBack,
    /// Every step is complete (False; Argo CD's reason).
    ApplicationSetRolloutComplete,
    /// The strategy cannot be followed (False).
    InvalidRolloutConfig,
}

impl ProgressReason {
    /// The reason as written in the condition.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StepProgressing => "StepProgressing",
            Self::StepWaiting => "StepWaiting",
            Self::StepHeld => "StepHeld",
            Self::StepWaitingForWindow => "StepWaitingForWindow",
            Self::StepBaking => "StepBaking",
            Self::StepWaitingForApproval => "StepWaitingForApproval",
            Self::StepWaitingForApplicationSet => "StepWaitingForApplicationSet",
            Self::StepAnalysing => "StepAnalysing",
            Self::StepFailed => "StepFailed",
            Self::RolloutPaused => "RolloutPaused",
            Self::RolloutStalled => "RolloutStalled",
            Self::RolloutRolledBack => "RolloutRolledBack",
            Self::ApplicationSetRolloutComplete => "ApplicationSetRolloutComplete",
            Self::InvalidRolloutConfig => "InvalidRolloutConfig",
        }
    }

    /// `True` while work is left and can proceed, `False` when complete, stalled or invalid.
    #[must_use]
    pub fn status(self) -> ConditionStatus {
        match self {
            Self::StepProgressing
            | Self::StepWaiting
            | Self::StepWaitingForWindow
            | Self::StepHeld
            | Self::StepBaking
            | Self::StepWaitingForApproval
            | Self::StepWaitingForApplicationSet
            | Self::StepAnalysing
            | Self::RolloutPaused => ConditionStatus::True,
            Self::RolloutStalled
            | Self::RolloutRolledBack
            | Self::StepFailed
            | Self::ApplicationSetRolloutComplete
            | Self::InvalidRolloutConfig => ConditionStatus::False,
        }
    }
}

impl ProgressReason {
    /// Every value, in the order of the reference page.
    pub const ALL: [Self; 14] = [
        Self::StepProgressing,
        Self::StepWaiting,
        Self::StepWaitingForWindow,
        Self::StepHeld,
        Self::StepBaking,
        Self::StepWaitingForApproval,
        Self::StepWaitingForApplicationSet,
        Self::StepAnalysing,
        Self::RolloutPaused,
        Self::StepFailed,
        Self::RolloutStalled,
        Self::RolloutRolledBack,
        Self::ApplicationSetRolloutComplete,
        Self::InvalidRolloutConfig,
    ];

    /// What it means, as the reference page says it.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::StepProgressing => "True: a step has syncs in flight or promoted now.",
            Self::StepWaiting => "True: a step waits for something other than a free slot.",
            Self::StepWaitingForWindow => {
                "True: a sync window holds the step back; it proceeds when the window opens."
            }
            Self::StepHeld => {
                "True: a step's `maxUpdate` is 0; work is left, but it waits for a person."
            }
            Self::StepBaking => {
                "True: a step's Applications are Healthy and it bakes; it completes when the bake ends."
            }
            Self::StepWaitingForApproval => {
                "True: a step with `approval: manual` waits for `flotilla rollout promote`."
            }
            Self::StepAnalysing => {
                "True: a step's analysis runs; the step completes when it passes."
            }
            Self::StepWaitingForApplicationSet => {
                "True: a step waits for a step of another ApplicationSet (`dependsOn`); the message says which and what that one waits for."
            }
            Self::RolloutPaused => "True: the rollout is paused (`spec.strategy.paused`).",
            Self::StepFailed => {
                "False: a step failed its bake or its analysis, or an Application of it is Degraded or failed its sync; it stays failed until a new revision reaches it."
            }
            Self::RolloutStalled => "False: a step is stalled (its progress deadline passed).",
            Self::RolloutRolledBack => {
                "False: a failed step was rolled back (`onFailure: rollback`) until a new revision."
            }
            Self::ApplicationSetRolloutComplete => {
                "False: every step is complete (Argo CD's reason)."
            }
            Self::InvalidRolloutConfig => "False: the strategy cannot be followed.",
        }
    }
}

/// Reasons of the `RolloutRolledBack` condition (`onFailure: rollback`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RollbackReason {
    /// The failed step's Applications are being synced back.
    RollingBack,
    /// Every Application to roll back is back on its last Healthy revision.
    RolledBack,
}

impl RollbackReason {
    /// Every value, in the order of the reference page.
    pub const ALL: [Self; 2] = [Self::RollingBack, Self::RolledBack];

    /// The value as written in status.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RollingBack => "RollingBack",
            Self::RolledBack => "RolledBack",
        }
    }

    /// What it means, as the reference page says it.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::RollingBack => {
                "True: the failed step's Applications (and with `rollbackCompletedSteps` the earlier steps') are being synced back."
            }
            Self::RolledBack => {
                "True: every Application to roll back is back on its last Healthy revision."
            }
        }
    }
}

/// The `RolloutProgressing` condition.
#[must_use]
pub fn progressing(
    reason: ProgressReason,
    message: String,
    now: Timestamp,
) -> ApplicationSetCondition {
    ApplicationSetCondition {
        type_: ConditionType::RolloutProgressing,
        status: reason.status(),
        reason: reason.as_str().to_string(),
        message,
        last_transition_time: Some(Time(now)),
    }
}

/// A condition of `type_` that holds (`True`).
#[must_use]
pub fn holds(
    type_: ConditionType,
    reason: &str,
    message: String,
    now: Timestamp,
) -> ApplicationSetCondition {
    ApplicationSetCondition {
        type_,
        status: ConditionStatus::True,
        reason: reason.to_string(),
        message,
        last_transition_time: Some(Time(now)),
    }
}

/// Merges a pass's rollout conditions into `existing`: conditions of the rollout's types are
/// replaced by `rollout` (a type it does not emit is removed), keeping the existing
/// `lastTransitionTime` when the status did not change; other types are kept. Sorted by type.
#[must_use]
pub fn merge_conditions(
    existing: &[ApplicationSetCondition],
    rollout: &[ApplicationSetCondition],
) -> Vec<ApplicationSetCondition> {
    let mut merged: Vec<ApplicationSetCondition> = existing
        .iter()
        .filter(|c| !ROLLOUT_CONDITION_TYPES.contains(&c.type_))
        .cloned()
        .collect();
    for condition in rollout {
        let mut condition = condition.clone();
        if let Some(previous) = existing
            .iter()
            .find(|c| c.type_ == condition.type_ && c.status == condition.status)
        {
            condition
                .last_transition_time
                .clone_from(&previous.last_transition_time);
        }
        merged.push(condition);
    }
    merged.sort_by_key(|c| c.type_);
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn merge_keeps_transition_time_only_when_status_is_unchanged() {
        let other = holds(
            ConditionType::ResourcesUpToDate,
            "UpToDate",
            "ok".into(),
            at(1),
        );
        let old_progress = progressing(ProgressReason::StepProgressing, "step 1".into(), at(10));
        let old_unselected = holds(
            ConditionType::UnselectedApplications,
            "NoMatchingStep",
            "x".into(),
            at(10),
        );
        let existing = vec![other.clone(), old_progress, old_unselected];

        let still = progressing(ProgressReason::StepWaiting, "step 2".into(), at(50));
        let merged = merge_conditions(&existing, std::slice::from_ref(&still));
        assert_eq!(
            merged,
            vec![
                other.clone(),
                ApplicationSetCondition {
                    last_transition_time: Some(Time(at(10))),
                    ..still
                },
            ],
            "same status keeps the time; an unemitted rollout type is removed; others stay"
        );

        let done = progressing(
            ProgressReason::ApplicationSetRolloutComplete,
            "done".into(),
            at(60),
        );
        let merged = merge_conditions(&existing, std::slice::from_ref(&done));
        assert_eq!(merged, vec![other, done], "a new status takes the new time");
    }
}
