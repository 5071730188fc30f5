//! The pushes whose Applications are still to be annotated: a webhook is answered once its
//! ApplicationSets are, and one task annotates the Applications of each push in turn, as Argo
//! CD answers first and refreshes from a queue (a git host waits 10 s; a push moving 2,000
//! Applications takes longer to announce at the client's request rate). At most [`CAPACITY`]
//! pushes wait; a webhook finding the queue full is refused with 503 (the git host redelivers
//! it, or the next poll sees the commit). What waits is lost if the process stops: the polls
//! find it.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::refresh::{ApplicationRefresh, Refresher};
use crate::controller::runtime::metrics::Metrics;

/// Pushes waiting at most.
pub const CAPACITY: usize = 64;

/// Where pushes leave their Applications to annotate.
pub struct RefreshQueue(mpsc::Sender<ApplicationRefresh>);

/// A place held in the queue.
pub struct Place<'a>(mpsc::Permit<'a, ApplicationRefresh>);

impl RefreshQueue {
    /// Starts the task annotating what is queued with `refresher`, counting each write in
    /// `metrics`; it ends when the queue is dropped.
    #[must_use]
    pub fn start(refresher: Refresher, metrics: Arc<Metrics>) -> Self {
        let (sender, mut queued) = mpsc::channel::<ApplicationRefresh>(CAPACITY);
        tokio::spawn(async move {
            while let Some(refresh) = queued.recv().await {
                let failed = refresher.refresh_applications(&refresh).await;
                for error in &failed {
                    tracing::warn!("webhook refresh: {error}");
                }
                metrics.webhook_refreshes("annotated", refresh.len() - failed.len());
                metrics.webhook_refreshes("failed", failed.len());
            }
        });
        Self(sender)
    }

    /// A place for one push, if the queue is not full.
    #[must_use]
    pub fn reserve(&self) -> Option<Place<'_>> {
        self.0.try_reserve().ok().map(Place)
    }
}

impl Place<'_> {
    /// Queues `refresh`.
    pub fn send(self, refresh: ApplicationRefresh) {
        self.0.send(refresh);
    }
}
