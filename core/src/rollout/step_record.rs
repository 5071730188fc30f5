//! Each RollingSync step's own record (`status.rolloutSteps`, a Flotilla extension) and where
//! a step stands once its Applications and its record are judged: the record holds what the
//! Applications' states do not — a bake's start and end, a failure, a wait for approval and the
//! approval, the analysis — so a pass replayed from status resumes. A record belongs to one rollout of its
//! step: a new revision or spec that sends one of the step's Applications back to Waiting starts
//! the step over with a blank record. Pure.

use k8s_openapi::jiff::Timestamp;

use crate::api::application_set_status::RolloutStepStatus;

/// Where a step stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Gate {
    /// Complete: later steps may open.
    Complete,
    /// Its Applications are not all Healthy yet: the step rolls out.
    Open,
    /// All Healthy since `since`; complete once `until` has passed ([`super::bake`]).
    Baking { since: Timestamp, until: Timestamp },
    /// An Application left Healthy during the bake, or the analysis failed (the record says
    /// which and when).
    Failed,
    /// The analysis runs since `since` ([`super::analysis`]); an HTTP one tries next at `next`.
    Analysing {
        since: Timestamp,
        next: Option<Timestamp>,
    },
    /// Waits for steps of other ApplicationSets ([`super::external`]).
    WaitingForApplicationSet,
    /// `approval: manual`, waiting since `since` ([`super::approval`]).
    WaitingForApproval { since: Timestamp },
}

impl RolloutStepStatus {
    /// A record of step `step` with nothing in it.
    fn blank(step: usize) -> Self {
        Self {
            step: u64::try_from(step).unwrap_or(u64::MAX),
            ..Self::default()
        }
    }

    /// Nothing recorded: not written to status.
    pub(super) fn is_blank(&self) -> bool {
        *self == Self::blank(usize::try_from(self.step).unwrap_or(usize::MAX))
    }
}

/// Each step's record for this pass (one per step, in order): the prior one, or a blank one
/// once this pass sent one of the step's Applications back to Waiting (`sent_back`, indexed as
/// the Applications; a fresh rollout of the step bakes and asks for approval again, and a
/// failure is over).
pub(super) fn fresh_records(
    prior: &[RolloutStepStatus],
    members: &[Vec<usize>],
    sent_back: &[bool],
) -> Vec<RolloutStepStatus> {
    members
        .iter()
        .enumerate()
        .map(|(index, members)| {
            let step = index + 1;
            let kept = !members.iter().any(|&i| sent_back[i]);
            prior
                .iter()
                .find(|record| usize::try_from(record.step).is_ok_and(|s| s == step))
                .filter(|_| kept)
                .cloned()
                .unwrap_or_else(|| RolloutStepStatus::blank(step))
        })
        .collect()
}
