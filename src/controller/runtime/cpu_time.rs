//! The CPU time one piece of async work spends on the process's own threads: its polls, and the
//! closures it hands to [`spawn_blocking`], each measured with the thread's CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID`). Time spent waiting (on the API server, a `git` child process, a
//! generator's HTTP call) is not counted, nor is what other tasks do meanwhile.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::JoinError;

tokio::task_local! {
    /// The nanoseconds counted so far by the [`measured`] call this task runs in.
    static SPENT: Arc<AtomicU64>;
}

/// Runs `work` and returns its output with the CPU time it spent: its own polls, and the
/// closures it ran through [`spawn_blocking`].
pub async fn measured<F: Future>(work: F) -> (F::Output, Duration) {
    let spent = Arc::new(AtomicU64::new(0));
    let mut work = std::pin::pin!(SPENT.scope(Arc::clone(&spent), work));
    let output = std::future::poll_fn(|cx| {
        let before = thread_cpu_time();
        let poll = work.as_mut().poll(cx);
        count(&spent, thread_cpu_time().saturating_sub(before));
        poll
    })
    .await;
    (output, Duration::from_nanos(spent.load(Ordering::Relaxed)))
}

/// [`tokio::task::spawn_blocking`], with the closure's CPU time counted by the [`measured`] call
/// the caller runs in, if any.
///
/// # Errors
/// The closure panicked or the runtime shut down before it ran.
pub async fn spawn_blocking<F, R>(work: F) -> Result<R, JoinError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let spent = SPENT.try_with(Arc::clone).ok();
    tokio::task::spawn_blocking(move || {
        let before = thread_cpu_time();
        let output = work();
        if let Some(spent) = spent {
            count(&spent, thread_cpu_time().saturating_sub(before));
        }
        output
    })
    .await
}

/// Adds `time` to `spent`.
fn count(spent: &AtomicU64, time: Duration) {
    let nanos = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
    spent.fetch_add(nanos, Ordering::Relaxed);
}

/// The CPU time the calling thread has consumed (zero if the clock cannot be read).
#[must_use]
pub fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is a constant the kernel knows.
    #[expect(
        unsafe_code,
        reason = "a thread's CPU time is only read through clock_gettime(2)"
    )]
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut now) };
    if status != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spins the calling thread until it has consumed `time` of CPU.
    fn spin(time: Duration) {
        let start = thread_cpu_time();
        while thread_cpu_time().saturating_sub(start) < time {
            std::hint::spin_loop();
        }
    }

    #[tokio::test]
    async fn counts_polls_and_blocking_closures_but_not_waits() {
        let ms = Duration::from_millis;
        let ((), spent) = measured(async move {
            spin(ms(30));
            tokio::time::sleep(ms(400)).await;
            spawn_blocking(move || spin(ms(40))).await.unwrap();
            tokio::time::sleep(ms(400)).await;
        })
        .await;
        assert!(spent >= ms(70), "both spins counted: {spent:?}");
        assert!(spent < ms(400), "the waits not counted: {spent:?}");
    }

    #[tokio::test]
    async fn another_task_awaited_is_not_counted() {
        let spin_time = Duration::from_millis(50);
        let ((), spent) = measured(async move {
            tokio::spawn(async move { spin(spin_time) }).await.unwrap();
        })
        .await;
        assert!(spent < spin_time, "{spent:?}");
    }
}
