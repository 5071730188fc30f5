//! Progress of a running operation, reported to a live view as it happens.

use flotilla_core::sync::{OperationPhase, Waiting};

/// Something a live view may show.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncEvent {
    /// A step is being carried out, e.g. `apply wave 0: Service shop/api, Deployment shop/api`.
    Step(String),
    /// The operation waits for live state; repeated on every poll.
    Waiting(Waiting),
    /// Resuming a stored operation that did not finish.
    Resumed {
        /// Its id.
        operation_id: String,
        /// Results recorded before the interruption.
        recorded: usize,
    },
    /// A failed attempt is retried after a pause.
    Retrying {
        /// The retry number, from 1.
        attempt: usize,
        /// The pause, e.g. `5s`.
        after: std::time::Duration,
        /// Why the attempt failed.
        reason: String,
    },
    /// The operation ended.
    Finished(OperationPhase),
}
