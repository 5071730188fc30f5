//! The hook types of the operation records (`hookType`), each with the sync phase it runs in.
//! Reading them from annotations is the sync engine's (`flotilla::sync::parse_hook_types`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::sync_phase::SyncPhase;

/// One value of the hook annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HookType {
    /// Runs in [`SyncPhase::PreSync`].
    PreSync,
    /// Runs in [`SyncPhase::Sync`].
    Sync,
    /// Runs in [`SyncPhase::PostSync`].
    PostSync,
    /// Runs in [`SyncPhase::SyncFail`].
    SyncFail,
    /// Runs in [`SyncPhase::PreDelete`].
    PreDelete,
    /// Runs in [`SyncPhase::PostDelete`].
    PostDelete,
    /// Never applied.
    Skip,
}

impl HookType {
    /// The phase the hook runs in; None for Skip.
    #[must_use]
    pub fn phase(self) -> Option<SyncPhase> {
        match self {
            Self::PreSync => Some(SyncPhase::PreSync),
            Self::Sync => Some(SyncPhase::Sync),
            Self::PostSync => Some(SyncPhase::PostSync),
            Self::SyncFail => Some(SyncPhase::SyncFail),
            Self::PreDelete => Some(SyncPhase::PreDelete),
            Self::PostDelete => Some(SyncPhase::PostDelete),
            Self::Skip => None,
        }
    }

    /// The hook type that runs in a phase.
    #[must_use]
    pub fn of_phase(phase: SyncPhase) -> Self {
        match phase {
            SyncPhase::PreSync => Self::PreSync,
            SyncPhase::Sync => Self::Sync,
            SyncPhase::PostSync => Self::PostSync,
            SyncPhase::SyncFail => Self::SyncFail,
            SyncPhase::PreDelete => Self::PreDelete,
            SyncPhase::PostDelete => Self::PostDelete,
        }
    }
}

impl fmt::Display for HookType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
