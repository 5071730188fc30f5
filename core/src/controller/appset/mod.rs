//! The pure core of the ApplicationSet controller: which Applications to write ([`diff`]), why a
//! reconcile failed ([`error_reason`]) and how its status shows the way it ended ([`outcome`]), how
//! they are marked as owned ([`ownership`]), when to regenerate ([`requeue`]), how bursts of events are paced ([`pacing`]) and which change opens the next step at once
//! ([`promotion`]) and what status
//! results ([`status`]); for RollingSync, what the
//! rollout observes ([`rollout_input`]), writes ([`rollout_status`], with the history of
//! rollouts, [`rollout_history`]), where it stores each Application's state ([`rollout_layout`]) and requests
//! ([`sync_request`]). No API client here.

pub mod error_reason;
pub mod outcome;
pub mod ownership;
pub mod pacing;
pub mod plan;
pub mod promotion;
pub mod requeue;
pub mod rollout_history;
pub mod rollout_history_events;
pub mod rollout_input;
pub mod rollout_layout;
pub mod rollout_status;
pub mod status;
pub mod sync_request;
#[cfg(any(test, feature = "test-support"))]
pub mod test_fixtures;
