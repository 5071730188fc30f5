//! Fair admission of reconciles: at most a fixed number run at once, and the ones waiting start
//! in the order they became due.
//!
//! kube-runtime's own limit (`controller::Config::concurrency`) keeps the reconciles that are due
//! while its slots are full in a hash set and starts them in hash order: under sustained load, an
//! object late in that order waits for as long as the load lasts (at 2,000 Applications and a
//! commit a minute, a sixth of them went uncompared for seven minutes). So the controllers run
//! unbounded there and wait here, in a first-come, first-served queue.

use tokio::sync::{Semaphore, SemaphorePermit, watch};

/// A first-come, first-served limit on the reconciles running at once.
pub struct Admission {
    permits: Semaphore,
}

impl Admission {
    /// A limit of `at_once` reconciles.
    #[must_use]
    pub fn new(at_once: usize) -> Self {
        Self {
            permits: Semaphore::new(at_once),
        }
    }

    /// Waits for this reconcile's turn, after every reconcile that asked before it: the permit
    /// returned holds its place until dropped. `None` when `stopping` turns true first (a stopping
    /// controller starts nothing more; the next leader reconciles what waited).
    pub async fn admit(&self, stopping: &watch::Receiver<bool>) -> Option<SemaphorePermit<'_>> {
        let mut stopping = stopping.clone();
        tokio::select! {
            biased;
            // Stopping, or its sender gone with the run: either way nothing more starts.
            _ = stopping.wait_for(|stopping| *stopping) => None,
            permit = self.permits.acquire() => permit.ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::task::Poll;

    use super::Admission;
    use tokio::sync::watch;

    #[tokio::test]
    async fn reconciles_waiting_for_a_turn_start_in_the_order_they_asked() {
        let admission = Admission::new(1);
        let (_stop, stopping) = watch::channel(false);
        let mut running = admission.admit(&stopping).await.expect("a free permit");
        // Eight ask in turn, each after the one before it is queued.
        let mut waiting: Vec<_> = (0..8)
            .map(|asked| (asked, Box::pin(admission.admit(&stopping))))
            .collect();
        for (_, turn) in &mut waiting {
            assert!(futures::poll!(turn.as_mut()).is_pending());
        }
        let mut started = Vec::new();
        while !waiting.is_empty() {
            drop(running);
            // Whichever is looked at first, the one that asked first starts.
            let mut ready = None;
            for (at, (asked, turn)) in waiting.iter_mut().enumerate().rev() {
                if let Poll::Ready(permit) = futures::poll!(turn.as_mut()) {
                    assert!(ready.is_none(), "two reconciles started on one permit");
                    ready = Some((at, *asked, permit.expect("a turn")));
                }
            }
            let (at, asked, permit) = ready.expect("a released permit started none");
            started.push(asked);
            drop(waiting.remove(at));
            running = permit;
        }
        assert_eq!(started, (0..8).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn no_more_than_the_limit_run_at_once() {
        let admission = Admission::new(3);
        let (_stop, stopping) = watch::channel(false);
        let held: Vec<_> = futures::future::join_all((0..3).map(|_| admission.admit(&stopping)))
            .await
            .into_iter()
            .map(|permit| permit.expect("a free permit"))
            .collect();
        let fourth = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            admission.admit(&stopping),
        )
        .await;
        assert!(fourth.is_err(), "a fourth reconcile started beside three");
        drop(held);
        assert!(admission.admit(&stopping).await.is_some());
    }

    #[tokio::test]
    async fn a_stopping_controller_starts_none_of_those_waiting() {
        let admission = Arc::new(Admission::new(1));
        let (stop, stopping) = watch::channel(false);
        let _held = admission.admit(&stopping).await.expect("a free permit");
        let waiting = {
            let (admission, stopping) = (Arc::clone(&admission), stopping.clone());
            tokio::spawn(async move { admission.admit(&stopping).await.is_some() })
        };
        stop.send(true).unwrap();
        assert!(
            !waiting.await.unwrap(),
            "a reconcile started after the stop"
        );
    }
}
