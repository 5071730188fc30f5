//! Sync phases, in the order an operation runs them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A phase of a sync operation. The derived order is the execution order; PreDelete and
/// PostDelete run only when the Application is deleted, never in a sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SyncPhase {
    /// Before anything is applied (migrations). A failure aborts the sync.
    PreSync,
    /// The ordinary apply, wave by wave.
    Sync,
    /// After every Sync object is Healthy (smoke tests).
    PostSync,
    /// Only when the operation failed.
    SyncFail,
    /// When the Application is deleted, before its resources are.
    PreDelete,
    /// After the Application is deleted.
    PostDelete,
}

impl SyncPhase {
    /// Every phase, in order.
    pub const ALL: [Self; 6] = [
        Self::PreSync,
        Self::Sync,
        Self::PostSync,
        Self::SyncFail,
        Self::PreDelete,
        Self::PostDelete,
    ];
}

impl fmt::Display for SyncPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A phase name that is not one of [`SyncPhase::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sync phase {0:?}")]
pub struct UnknownPhase(pub String);

impl FromStr for SyncPhase {
    type Err = UnknownPhase;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|phase| phase.to_string() == text)
            .ok_or_else(|| UnknownPhase(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_orders() {
        for phase in SyncPhase::ALL {
            assert_eq!(phase.to_string().parse(), Ok(phase));
        }
        assert!(SyncPhase::ALL.is_sorted());
        assert_eq!(
            "presync".parse::<SyncPhase>(),
            Err(UnknownPhase("presync".into()))
        );
    }
}
