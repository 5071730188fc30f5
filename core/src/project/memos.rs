//! The parse outcomes kept for projects: each glob of their lists by its text, each project's
//! sync windows by project and windows. Held by whoever holds the projects for longer than one
//! decision (the controller's watch of the AppProjects, a command's run) and passed in with
//! [`super::Projects`], so that a reconcile judges without parsing again.

use std::sync::Arc;

use super::pattern::{Pattern, PatternError};
use super::windows::{ProjectWindows, WindowError};
use crate::api::sync_window::SyncWindow;
use crate::memo::Memo;

/// At most this many globs are kept.
const PATTERNS: usize = 4096;

/// At most this many projects' windows are kept.
const WINDOWS: usize = 1024;

/// Parsed globs and windows.
#[derive(Debug)]
pub struct ProjectMemos {
    patterns: Memo<String, Result<Arc<Pattern>, PatternError>>,
    windows: Memo<(String, Vec<SyncWindow>), Result<Arc<ProjectWindows>, WindowError>>,
}

impl Default for ProjectMemos {
    fn default() -> Self {
        Self {
            patterns: Memo::new(PATTERNS),
            windows: Memo::new(WINDOWS),
        }
    }
}

impl PartialEq for ProjectMemos {
    /// Always: memos hold only what the projects' own texts parse to, so they never make two
    /// sets of projects differ.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ProjectMemos {}

impl ProjectMemos {
    /// The entry `text` parsed ([`Pattern::compile`]), kept.
    ///
    /// # Errors
    /// Not a glob, or `!*`.
    pub fn pattern(&self, text: &str) -> Result<Arc<Pattern>, PatternError> {
        self.patterns
            .get_or_parse(text, || Pattern::compile(text).map(Arc::new))
    }

    /// The windows of project `project` validated ([`ProjectWindows::validate`]), kept.
    ///
    /// # Errors
    /// The first window that cannot be used, named by project, index and field.
    pub fn windows(
        &self,
        project: &str,
        windows: &[SyncWindow],
    ) -> Result<Arc<ProjectWindows>, WindowError> {
        self.windows
            .get_or_parse(&(project.to_owned(), windows.to_vec()), || {
                ProjectWindows::validate(project, windows).map(Arc::new)
            })
    }
}
