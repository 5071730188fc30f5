//! The operation store of a simulated Application: its operation state kept in memory.

use std::sync::Mutex;

use crate::sync::OperationState;
use crate::sync::execute::{OperationStore, StoreError};

/// One Application's operation, in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<Option<OperationState>>,
}

impl OperationStore for MemoryStore {
    async fn load(&self) -> Result<Option<OperationState>, StoreError> {
        Ok(self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone())
    }

    async fn save(&self, state: &OperationState) -> Result<(), StoreError> {
        *self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(state.clone());
        Ok(())
    }
}
