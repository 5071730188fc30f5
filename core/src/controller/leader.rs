//! Leader election through a `coordination.k8s.io/v1` Lease, decided as a pure step function of
//! what was read and a monotonic clock (no API client here; flotilla's `controller::lease_lock` does the I/O).
//!
//! The rules that keep two replicas from ever acting at once, without comparing clocks across
//! machines:
//! - the holder acts only until its *renew deadline*: the moment it sent the last write that
//!   succeeded (read, then create or replace), plus [`LeaseTiming::renew_deadline`];
//! - another replica takes over only after it has seen the same Lease record, in reads that all
//!   succeeded, for a whole [`LeaseTiming::duration`] counted on its own clock from the first of
//!   them. That first read came after the holder's last write, so the holder stopped at least
//!   `duration - renew_deadline` before (5 s with the defaults 15 s and 10 s, as client-go);
//! - a read or write that fails or times out forgets what was seen: after the API server was
//!   unreachable (or paused), the count starts again, so requests it had queued are processed
//!   before anyone else can start. A standby therefore survives transient errors and simply waits.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;

/// How long a Lease lasts, until when its holder acts, and how often replicas try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTiming {
    /// How long a standby waits, seeing the Lease unchanged, before taking it over.
    pub duration: Duration,
    /// How long the holder acts after sending the last write that renewed the Lease; shorter
    /// than `duration`.
    pub renew_deadline: Duration,
    /// How often the holder renews and a standby reads; shorter than `renew_deadline`.
    pub retry: Duration,
}

impl Default for LeaseTiming {
    /// client-go's defaults: 15 s, 10 s, 2 s.
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry: Duration::from_secs(2),
        }
    }
}

/// Lease timings that cannot keep two replicas apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the Lease timings must satisfy 0 < retry period ({retry:?}) < renew deadline \
     ({renew_deadline:?}) < lease duration ({duration:?})"
)]
pub struct LeaseTimingError {
    duration: Duration,
    renew_deadline: Duration,
    retry: Duration,
}

impl LeaseTiming {
    /// Whether a Lease record `spec`, seen unchanged since `since`, has expired at `now`: it
    /// stayed unchanged for a whole duration, ours or the one it declares, whichever is longer
    /// (judged on the reader's own clock, never by comparing clocks).
    #[must_use]
    pub fn expired(&self, spec: &LeaseSpec, since: Instant, now: Instant) -> bool {
        let declared = spec
            .lease_duration_seconds
            .and_then(|seconds| u64::try_from(seconds).ok())
            .map_or(Duration::ZERO, Duration::from_secs);
        now.duration_since(since) >= self.duration.max(declared)
    }

    /// Timings with `0 < retry < renew_deadline < duration`.
    ///
    /// # Errors
    /// Any other order.
    pub fn new(
        duration: Duration,
        renew_deadline: Duration,
        retry: Duration,
    ) -> Result<Self, LeaseTimingError> {
        if Duration::ZERO < retry && retry < renew_deadline && renew_deadline < duration {
            Ok(Self {
                duration,
                renew_deadline,
                retry,
            })
        } else {
            Err(LeaseTimingError {
                duration,
                renew_deadline,
                retry,
            })
        }
    }

    /// How long one read or write of the Lease may take: half the renew deadline, so that a
    /// call that hangs leaves time for another attempt before the deadline.
    #[must_use]
    pub fn call_timeout(&self) -> Duration {
        self.renew_deadline / 2
    }
}

/// What to do with the Lease as it was just read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseDecision {
    /// There is no Lease: create it, held by us.
    Create,
    /// It was released, or seen unchanged for a whole lease duration: take it over.
    Acquire,
    /// It names us: renew it.
    Renew,
    /// Someone else holds it.
    Wait,
}

/// One replica's view of the election between two reads: the record it has seen unchanged and
/// since when, and until when it may act.
#[derive(Clone, Debug)]
pub struct Elector {
    identity: String,
    timing: LeaseTiming,
    observed: Option<(LeaseSpec, Instant)>,
    leading_until: Option<Instant>,
}

impl Elector {
    /// A replica named `identity` that has read nothing yet and does not lead.
    #[must_use]
    pub fn new(identity: impl Into<String>, timing: LeaseTiming) -> Self {
        Self {
            identity: identity.into(),
            timing,
            observed: None,
            leading_until: None,
        }
    }

    /// This replica's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The timings it competes with.
    #[must_use]
    pub fn timing(&self) -> LeaseTiming {
        self.timing
    }

    /// Until when this replica may act (None: it does not lead).
    #[must_use]
    pub fn leading_until(&self) -> Option<Instant> {
        self.leading_until
    }

    /// A read that completed at `now` found the Lease's spec `spec` (None: no Lease).
    pub fn read(&mut self, spec: Option<&LeaseSpec>, now: Instant) -> LeaseDecision {
        let Some(spec) = spec else {
            return LeaseDecision::Create;
        };
        match spec.holder_identity.as_deref() {
            Some(holder) if holder == self.identity => LeaseDecision::Renew,
            None | Some("") => LeaseDecision::Acquire,
            Some(_) => {
                self.leading_until = None;
                let since = match &self.observed {
                    Some((seen, since)) if seen == spec => *since,
                    _ => {
                        self.observed = Some((spec.clone(), now));
                        now
                    }
                };
                if self.timing.expired(spec, since, now) {
                    LeaseDecision::Acquire
                } else {
                    LeaseDecision::Wait
                }
            }
        }
    }

    /// Our write (create, take over or renew), part of an attempt that started at `started`,
    /// succeeded: we may act until `started` plus the renew deadline.
    pub fn written(&mut self, started: Instant) {
        self.observed = None;
        self.leading_until = Some(started + self.timing.renew_deadline);
    }

    /// Another replica wrote the Lease between our read and our write: stop acting at once.
    pub fn lost_race(&mut self) {
        self.observed = None;
        self.leading_until = None;
    }

    /// A read or write failed or timed out: forget what was seen (the count towards taking
    /// over starts again). A holder keeps acting until its renew deadline.
    pub fn failed(&mut self) {
        self.observed = None;
    }
}

/// The spec after `decision` (not [`LeaseDecision::Wait`]) by `identity` with `timing`, at
/// wall-clock time `now` (recorded for people reading the Lease; no decision compares it).
#[must_use]
pub fn held_spec(
    old: Option<&LeaseSpec>,
    decision: LeaseDecision,
    identity: &str,
    timing: LeaseTiming,
    now: Timestamp,
) -> LeaseSpec {
    let old = old.cloned().unwrap_or_default();
    let taken = decision != LeaseDecision::Renew;
    LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(whole_seconds_above(timing.duration)),
        acquire_time: if taken {
            Some(MicroTime(now))
        } else {
            old.acquire_time.clone()
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: match decision {
            LeaseDecision::Acquire => Some(old.lease_transitions.unwrap_or_default() + 1),
            LeaseDecision::Create => Some(0),
            LeaseDecision::Renew | LeaseDecision::Wait => old.lease_transitions,
        },
        ..old
    }
}

/// `duration` in whole seconds, rounded up (a Lease records seconds).
fn whole_seconds_above(duration: Duration) -> i32 {
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    i32::try_from(seconds).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> LeaseTiming {
        LeaseTiming::default()
    }

    fn held_by(holder: Option<&str>, renewed_at: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_string),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(Timestamp::from_second(renewed_at).unwrap())),
            ..LeaseSpec::default()
        }
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn timings_must_leave_a_gap_between_the_deadline_and_the_lease() {
        let cases = [
            ((15, 10, 2), true),
            ((15, 15, 2), false),
            ((10, 15, 2), false),
            ((15, 10, 10), false),
            ((15, 10, 0), false),
        ];
        for ((duration, deadline, retry), valid) in cases {
            assert_eq!(
                LeaseTiming::new(secs(duration), secs(deadline), secs(retry)).is_ok(),
                valid,
                "{duration} {deadline} {retry}"
            );
        }
        assert_eq!(
            LeaseTiming::new(secs(15), secs(10), secs(2)),
            Ok(LeaseTiming::default())
        );
        assert_eq!(LeaseTiming::default().call_timeout(), secs(5));
    }

    /// A step of a scenario: what happened at second `at` and what the replica decides.
    enum Step {
        Read(Option<LeaseSpec>, LeaseDecision),
        Written,
        LostRace,
        Failed,
    }

    /// Runs `steps` (second, step) on a fresh elector named "me" and checks, after each, until
    /// when it leads (in seconds from the start).
    fn run(steps: Vec<(u64, Step, Option<u64>)>) {
        let start = Instant::now();
        let mut elector = Elector::new("me", timing());
        for (index, (at, step, leading)) in steps.into_iter().enumerate() {
            let now = start + secs(at);
            match step {
                Step::Read(spec, expected) => {
                    assert_eq!(elector.read(spec.as_ref(), now), expected, "step {index}");
                }
                Step::Written => elector.written(now),
                Step::LostRace => elector.lost_race(),
                Step::Failed => elector.failed(),
            }
            assert_eq!(
                elector.leading_until(),
                leading.map(|s| start + secs(s)),
                "step {index}: leading until"
            );
        }
    }

    #[test]
    fn decisions_on_a_single_read() {
        use LeaseDecision::*;
        let cases = [
            (None, Create),
            (Some(held_by(Some("me"), 100)), Renew),
            (Some(held_by(Some("other"), 100)), Wait),
            // An old renew time alone proves nothing: the clocks of two machines differ.
            (Some(held_by(Some("other"), 1)), Wait),
            (Some(held_by(None, 100)), Acquire),
            (Some(held_by(Some(""), 100)), Acquire),
        ];
        for (index, (spec, expected)) in cases.into_iter().enumerate() {
            let mut elector = Elector::new("me", timing());
            assert_eq!(
                elector.read(spec.as_ref(), Instant::now()),
                expected,
                "case {index}"
            );
        }
    }

    #[test]
    fn a_standby_takes_over_after_seeing_the_same_record_for_a_lease_duration() {
        let other = || Some(held_by(Some("other"), 100));
        run(vec![
            (0, Step::Read(other(), LeaseDecision::Wait), None),
            (14, Step::Read(other(), LeaseDecision::Wait), None),
            (15, Step::Read(other(), LeaseDecision::Acquire), None),
            (15, Step::Written, Some(25)),
        ]);
    }

    #[test]
    fn a_renewed_record_restarts_the_count() {
        run(vec![
            (
                0,
                Step::Read(Some(held_by(Some("other"), 100)), LeaseDecision::Wait),
                None,
            ),
            (
                10,
                Step::Read(Some(held_by(Some("other"), 110)), LeaseDecision::Wait),
                None,
            ),
            (
                24,
                Step::Read(Some(held_by(Some("other"), 110)), LeaseDecision::Wait),
                None,
            ),
            (
                25,
                Step::Read(Some(held_by(Some("other"), 110)), LeaseDecision::Acquire),
                None,
            ),
        ]);
    }

    #[test]
    fn a_failed_call_restarts_the_count_so_a_paused_server_drains_first() {
        let other = || Some(held_by(Some("other"), 100));
        run(vec![
            (0, Step::Read(other(), LeaseDecision::Wait), None),
            // The API server stops answering for 30 s; the standby keeps trying.
            (5, Step::Failed, None),
            (30, Step::Failed, None),
            // It answers again: the record is the same, but a full duration must pass.
            (31, Step::Read(other(), LeaseDecision::Wait), None),
            (45, Step::Read(other(), LeaseDecision::Wait), None),
            (46, Step::Read(other(), LeaseDecision::Acquire), None),
        ]);
    }

    #[test]
    fn a_longer_declared_duration_is_respected() {
        let mut long = held_by(Some("other"), 100);
        long.lease_duration_seconds = Some(60);
        run(vec![
            (0, Step::Read(Some(long.clone()), LeaseDecision::Wait), None),
            (
                59,
                Step::Read(Some(long.clone()), LeaseDecision::Wait),
                None,
            ),
            (60, Step::Read(Some(long), LeaseDecision::Acquire), None),
        ]);
    }

    #[test]
    fn the_holder_acts_until_its_renew_deadline_and_stops_before_anyone_can_take_over() {
        let mine = || Some(held_by(Some("me"), 100));
        run(vec![
            (0, Step::Read(None, LeaseDecision::Create), None),
            (0, Step::Written, Some(10)),
            (2, Step::Read(mine(), LeaseDecision::Renew), Some(10)),
            (2, Step::Written, Some(12)),
            // Renewals fail from here on: the deadline stays where the last success put it,
            // 3 s before a standby that read the renewed record at second 2 could take over.
            (4, Step::Failed, Some(12)),
            (9, Step::Failed, Some(12)),
            // The API server answers again and the Lease still names us: renew.
            (20, Step::Read(mine(), LeaseDecision::Renew), Some(12)),
            (20, Step::Written, Some(30)),
        ]);
    }

    #[test]
    fn the_holder_stops_at_once_when_it_sees_another_holder_or_loses_a_race() {
        run(vec![
            (0, Step::Read(None, LeaseDecision::Create), None),
            (0, Step::Written, Some(10)),
            (
                2,
                Step::Read(Some(held_by(Some("other"), 100)), LeaseDecision::Wait),
                None,
            ),
            (
                4,
                Step::Read(Some(held_by(Some("me"), 100)), LeaseDecision::Renew),
                None,
            ),
            (4, Step::Written, Some(14)),
            (6, Step::LostRace, None),
        ]);
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_keeps_the_acquire_time() {
        let at = |s| Timestamp::from_second(s).unwrap();
        let mut old = held_by(Some("other"), 80);
        old.lease_transitions = Some(2);
        let taken = held_spec(Some(&old), LeaseDecision::Acquire, "me", timing(), at(105));
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.lease_transitions, Some(3));
        assert_eq!(taken.lease_duration_seconds, Some(15));
        assert_eq!(taken.acquire_time, Some(MicroTime(at(105))));
        let renewed = held_spec(Some(&taken), LeaseDecision::Renew, "me", timing(), at(110));
        assert_eq!(renewed.acquire_time, Some(MicroTime(at(105))));
        assert_eq!(renewed.renew_time, Some(MicroTime(at(110))));
        assert_eq!(renewed.lease_transitions, Some(3));
        let created = held_spec(None, LeaseDecision::Create, "me", timing(), at(1));
        assert_eq!(created.lease_transitions, Some(0));
        let short = LeaseTiming::new(
            Duration::from_millis(2500),
            Duration::from_secs(2),
            Duration::from_millis(500),
        )
        .unwrap();
        let rounded_up = held_spec(None, LeaseDecision::Create, "me", short, at(1));
        assert_eq!(rounded_up.lease_duration_seconds, Some(3));
    }
}
