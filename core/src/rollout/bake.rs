//! The bake of a RollingSync step (`bakeTime`, a Flotilla extension): once every Application of
//! the step is Healthy on its target revisions, the step waits `bakeTime` before it counts as
//! complete, and an Application leaving Healthy meanwhile fails it. Each step's record
//! (`status.rolloutSteps`) says when its bake started and ended or why it failed, so a pass
//! replayed from status — a restarted controller — resumes the bake instead of starting over.
//! Pure: `now` is an input.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::step_record::Gate;
use crate::api::application_set_status::RolloutStepStatus;
use flotilla_generators::duration::format_duration;

impl RolloutStepStatus {
    /// When the bake of `bake_time` this record holds ends: `None` before it started and once it
    /// is over (baked, or failed).
    #[must_use]
    pub fn bake_ends_at(&self, bake_time: Duration) -> Option<Timestamp> {
        if self.baked_at.is_some() || self.failed_at.is_some() {
            return None;
        }
        Some(bake_end(self.bake_started_at.as_ref()?.0, bake_time))
    }

    /// Moves the record along and says where the step stands. `bake_time` is the step's
    /// (`None` for a step without one, or without Applications); `all_complete` whether every
    /// Application of the step is Healthy on its target revisions now; `incomplete` describes
    /// those that are not, for a failure.
    pub(super) fn judge(
        &mut self,
        bake_time: Option<Duration>,
        all_complete: bool,
        now: Timestamp,
        incomplete: impl FnOnce() -> String,
    ) -> Gate {
        if self.failed_at.is_some() {
            return Gate::Failed;
        }
        let Some(bake_time) = bake_time.filter(|_| self.baked_at.is_none()) else {
            return if all_complete {
                Gate::Complete
            } else {
                Gate::Open
            };
        };
        match (all_complete, self.bake_started_at.as_ref().map(|t| t.0)) {
            (false, None) => Gate::Open,
            (false, Some(since)) => {
                self.failure = format!(
                    "{} left Healthy during the {} bake started at {since}",
                    incomplete(),
                    format_duration(bake_time)
                );
                self.failed_at = Some(Time(now));
                Gate::Failed
            }
            (true, since) => {
                let since = since.unwrap_or(now);
                self.bake_started_at = Some(Time(since));
                let until = bake_end(since, bake_time);
                // Times are whole seconds, truncated: strictly after `until`, the Applications
                // were Healthy for the whole bake however the seconds were cut.
                if now > until {
                    self.baked_at = Some(Time(now));
                    Gate::Complete
                } else {
                    Gate::Baking { since, until }
                }
            }
        }
    }
}

/// The end of a bake of `bake_time` started at `since`.
fn bake_end(since: Timestamp, bake_time: Duration) -> Timestamp {
    since.checked_add(bake_time).unwrap_or(Timestamp::MAX)
}
