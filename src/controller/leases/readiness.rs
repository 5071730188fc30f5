//! Whether this replica is ready: it has read its Lease at least once, so it either leads or
//! stands by, and the API server answers it. A standby replica is ready too (it takes over when
//! the leader goes); `/readyz` says so.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Shared between the Lease loop, which marks it, and the HTTP endpoint, which reports it.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub fn mark_ready(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
