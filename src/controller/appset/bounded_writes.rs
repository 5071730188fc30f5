//! Writes to the API server run concurrently, a bounded number at once: the ApplicationSet
//! controller's applies and deletes of Applications and the rollout's sync requests, so a
//! reconcile that writes thousands of Applications is not one round trip after another.

use futures::{Future, StreamExt};

/// How many writes of one reconcile are in flight at once.
pub const WRITE_CONCURRENCY: usize = 24;

/// Runs `writes`, [`WRITE_CONCURRENCY`] at once, until all have ended.
///
/// # Errors
/// The first failure in the order of `writes` (every write has ended by then).
pub async fn all<E>(writes: Vec<impl Future<Output = Result<(), E>>>) -> Result<(), E> {
    let results: Vec<Result<(), E>> = futures::stream::iter(writes)
        .buffered(WRITE_CONCURRENCY)
        .collect()
        .await;
    results.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn runs_a_bounded_number_at_once_and_returns_the_first_failure() {
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let (running, most) = (&running, &most);
        let mut writes = Vec::new();
        for i in 0..100 {
            writes.push(async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                if i % 40 == 39 { Err(i) } else { Ok(()) }
            });
        }
        assert_eq!(all(writes).await, Err(39));
        assert_eq!(most.load(Ordering::SeqCst), WRITE_CONCURRENCY);
    }
}
