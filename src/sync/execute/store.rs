//! Where a running operation's state is kept between steps, so an interrupted sync resumes from
//! its recorded results. The CLI keeps it in a ConfigMap; a controller can keep it in the
//! Application's `status.operationState`.

use std::future::Future;

use flotilla_core::sync::OperationState;

/// The stored state could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("operation state {location}: {message}")]
pub struct StoreError {
    /// Where the state lives, e.g. `ConfigMap shop/flotilla-operation-shop`.
    pub location: String,
    /// What went wrong.
    pub message: String,
}

/// Storage of one Application's current operation.
pub trait OperationStore: Sync {
    /// The stored operation, if any.
    fn load(&self) -> impl Future<Output = Result<Option<OperationState>, StoreError>> + Send;

    /// Replaces the stored operation. A store that cannot hold it yet (e.g. its namespace is
    /// created by this very sync) may skip the write; the next step writes again.
    fn save(&self, state: &OperationState) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Whether an operation without hooks may leave its state unstored before its first write
    /// to the cluster: it is stored before its first wait or at its end, so one that ends in its
    /// first step costs a single write. Only for a store whose caller compares again after a
    /// restart (nothing such an operation wrote is lost by writing it again); the default is
    /// no.
    fn defers_start(&self) -> bool {
        false
    }
}
