//! A reconcile that runs on past [`SLOW_RECONCILE`] is named in a warning (again each further
//! [`SLOW_RECONCILE`]) and counted in a gauge while it runs, so an object whose reconcile never
//! ends — and which its controller therefore never reconciles again — shows in the log and the
//! metrics instead of only as an object that stopped changing. Every reconcile is counted as
//! running while it runs (`workqueue_depth`).

use std::future::Future;
use std::time::{Duration, Instant};

use super::metrics::{Metrics, Reconciler};

/// How long a reconcile runs before it is reported, and how often it is reported after that.
pub const SLOW_RECONCILE: Duration = Duration::from_secs(60);

/// Runs `reconcile`, the reconcile of object `name` by `controller`, reporting it while it runs
/// longer than [`SLOW_RECONCILE`].
pub async fn reported_when_slow<F: Future>(
    metrics: &Metrics,
    controller: Reconciler,
    name: &str,
    reconcile: F,
) -> F::Output {
    let started = Instant::now();
    let _running = metrics.reconciling(controller);
    tokio::pin!(reconcile);
    let mut slow = None;
    let output = loop {
        tokio::select! {
            output = &mut reconcile => break output,
            () = tokio::time::sleep(SLOW_RECONCILE) => {
                tracing::warn!(?controller, object = name, running = ?started.elapsed(), "a reconcile is still running");
                slow.get_or_insert_with(|| metrics.slow_reconcile(controller));
            }
        }
    };
    if slow.is_some() {
        tracing::warn!(?controller, object = name, took = ?started.elapsed(), "a slow reconcile ended");
    }
    output
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// The value of `series` (e.g. `flotilla_slow_reconciles{controller="Application"}`), as
    /// scraped.
    fn scraped(metrics: &Metrics, series: &str) -> String {
        let text = metrics.render();
        text.lines()
            .find_map(|line| line.strip_prefix(&format!("{series} ")))
            .unwrap_or("absent")
            .to_owned()
    }

    /// The slow gauge's value for Application reconciles.
    fn slow(metrics: &Metrics) -> String {
        scraped(
            metrics,
            "flotilla_slow_reconciles{controller=\"Application\"}",
        )
    }

    /// The running gauge's value for Application reconciles.
    fn running(metrics: &Metrics) -> String {
        scraped(
            metrics,
            "workqueue_depth{name=\"app_reconciliation_queue\"}",
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconcile_running_past_the_limit_is_counted_until_it_ends() {
        let metrics = Arc::new(Metrics::default());
        let (finish, finished) = tokio::sync::oneshot::channel::<u8>();
        let reconciling = tokio::spawn({
            let metrics = Arc::clone(&metrics);
            async move {
                let reconcile = async { finished.await.expect("sent") };
                reported_when_slow(&metrics, Reconciler::Application, "web", reconcile).await
            }
        });
        assert_eq!(slow(&metrics), "0");
        tokio::time::sleep(SLOW_RECONCILE / 2).await;
        assert_eq!(slow(&metrics), "0", "not slow yet");
        assert_eq!(running(&metrics), "1", "running");
        tokio::time::sleep(SLOW_RECONCILE * 2).await;
        assert_eq!(slow(&metrics), "1", "counted once however long it runs");
        finish.send(7).expect("the reconcile waits");
        assert_eq!(reconciling.await.expect("runs"), 7);
        assert_eq!(slow(&metrics), "0");
        assert_eq!(running(&metrics), "0");
    }
}
