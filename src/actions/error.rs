//! Why an action was not done: the object could not be read, its state refuses the action
//! (nothing to terminate, not a RollingSync, no such step), or the write failed.

use crate::cluster::api_server::api_error::ApiError;

/// An action that was not done.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    /// The object (`Kind namespace/name`) could not be read; it does not exist, say.
    #[error("reading {object}")]
    Read {
        object: String,
        #[source]
        source: ApiError,
    },
    /// The object's state refuses the action; nothing was written.
    #[error("{0}")]
    Refused(String),
    /// The patch was refused or failed.
    #[error("patching {object}")]
    Write {
        object: String,
        #[source]
        source: ApiError,
    },
}

impl ActionError {
    /// Whether the patch carried a `resourceVersion` the object no longer has (409 Conflict:
    /// it changed since it was read).
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Write { source, .. } if source.status_code() == Some(409))
    }

    /// Whether the object acted on does not exist (the server answered 404 to reading it).
    #[must_use]
    pub fn is_missing(&self) -> bool {
        matches!(self, Self::Read { source, .. } if source.status_code() == Some(404))
    }
}
