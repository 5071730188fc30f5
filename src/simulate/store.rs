//! The operation store of a simulated Application. Nothing restarts inside a simulation, so an
//! operation is never resumed: the executor's own copy of the state is the only one needed, and
//! the store keeps nothing (copying the state after every step was a tenth of a simulation).

use crate::sync::execute::{OperationStore, StoreError};
use flotilla_core::sync::OperationState;

/// The store of an operation that starts fresh and is never resumed.
#[derive(Debug, Default)]
pub struct NeverResumedStore;

impl OperationStore for NeverResumedStore {
    async fn load(&self) -> Result<Option<OperationState>, StoreError> {
        Ok(None)
    }

    async fn save(&self, _state: &OperationState) -> Result<(), StoreError> {
        Ok(())
    }
}
