//! The simulation's virtual clock: tokio's paused time. Every sleep of the sync executor (polls,
//! wave delays, retry backoffs) advances virtual time at once when nothing else can run, so an
//! hour of rollout takes milliseconds; [`pace`] slows it down to a chosen speed for watching. On
//! a runtime whose time is not paused the same clock simply runs in real time.

use std::convert::Infallible;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// Virtual time since the start of a simulation, and the wall-clock time it started at.
#[derive(Debug, Clone, Copy)]
pub struct VirtualClock {
    epoch: Timestamp,
    origin: Instant,
}

impl VirtualClock {
    /// A clock starting now at `epoch`. Call inside the simulation's (paused) runtime.
    #[must_use]
    pub fn start(epoch: Timestamp) -> Self {
        Self {
            epoch,
            origin: Instant::now(),
        }
    }

    /// Virtual time elapsed since the start.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.origin.elapsed()
    }

    /// The current virtual time.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        self.at(self.elapsed())
    }

    /// The time `offset` after the start.
    #[must_use]
    pub fn at(&self, offset: Duration) -> Timestamp {
        let millis = i64::try_from(offset.as_millis()).unwrap_or(i64::MAX);
        Timestamp::from_millisecond(self.epoch.as_millisecond().saturating_add(millis))
            .unwrap_or(self.epoch)
    }

    /// How long after the start `time` is (zero for earlier times).
    #[must_use]
    pub fn offset(&self, time: Timestamp) -> Duration {
        let millis = time.as_millisecond() - self.epoch.as_millisecond();
        Duration::from_millis(u64::try_from(millis).unwrap_or(0))
    }

    /// Waits `duration` of virtual time.
    pub async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// Virtual time between two pauses of [`pace`].
const PACE_TICK: Duration = Duration::from_millis(100);

/// Never returns: after every [`PACE_TICK`] of virtual time, blocks the (single) runtime thread
/// for `PACE_TICK / speed` of real time, so the simulation runs `speed` times faster than real
/// time at most.
pub async fn pace(speed: f64) -> Infallible {
    let pause = PACE_TICK.div_f64(speed.max(f64::MIN_POSITIVE));
    loop {
        tokio::time::sleep(PACE_TICK).await;
        std::thread::sleep(pause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn virtual_time_advances_without_waiting() {
        let wall = std::time::Instant::now();
        let clock = VirtualClock::start(Timestamp::UNIX_EPOCH);
        clock.sleep(Duration::from_secs(3600)).await;
        assert_eq!(clock.elapsed(), Duration::from_secs(3600));
        assert_eq!(clock.now().as_second(), 3600);
        assert_eq!(clock.offset(clock.now()), Duration::from_secs(3600));
        assert!(wall.elapsed() < Duration::from_secs(5));
    }
}
