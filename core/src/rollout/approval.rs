//! The approval of a RollingSync step (`approval: manual`, a Flotilla extension): the step
//! syncs nothing until someone approves it — `flotilla rollout promote`, or any tool setting the
//! ApplicationSet's `flotilla.dev/promote` annotation to the step's number. The record keeps
//! since when the step waits and when it was approved, so the approval survives a restart and
//! counts for this rollout of the step only. Pure: `now` is an input.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::api::application_set_status::RolloutStepStatus;

/// What the approval gate says of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Approval {
    /// The step may proceed; `now` when this pass recorded the approval.
    Given { now: bool },
    /// It waits, since `since`.
    Waiting { since: Timestamp },
}

impl RolloutStepStatus {
    /// Moves the record's approval along. `manual`: the step has `approval: manual`;
    /// `all_complete`: nothing of it is left to sync (no approval needed); `promoted`: the
    /// annotation names this step.
    pub(super) fn approval(
        &mut self,
        manual: bool,
        all_complete: bool,
        promoted: bool,
        now: Timestamp,
    ) -> Approval {
        if !manual || all_complete || self.approved_at.is_some() {
            return Approval::Given { now: false };
        }
        if promoted {
            self.approved_at = Some(Time(now));
            self.waiting_for_approval_since = None;
            return Approval::Given { now: true };
        }
        let since = self.waiting_for_approval_since.get_or_insert(Time(now)).0;
        Approval::Waiting { since }
    }
}
