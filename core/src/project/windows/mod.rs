//! Sync windows: when the Applications of a project may sync. Cron schedules (cron.rs), one
//! validated window and when it is active (window.rs), Argo CD's allow/deny/manualSync
//! semantics and the next opening (verdict.rs), and how a wait is told (block.rs). Pure: the
//! controller, `flotilla simulate` and `flotilla windows` pass the instant.

pub mod block;
pub mod cron;
pub mod listing;
pub mod verdict;
pub mod window;

use jiff::Timestamp;

pub use block::{WindowBlock, wall_clock};
pub use listing::{SyncVerdict, WindowListing, WindowRow, listing};
pub use verdict::{AppWindows, ProjectWindows, SyncKind};
pub use window::{AppTarget, Window, WindowError};

use super::Projects;
use crate::api::Application;

/// Why a sync of `kind` of `app` cannot happen at `now` under its project's windows; `None`
/// when it can (a missing project has no windows: the project check refuses it elsewhere).
///
/// # Errors
/// A window of the project cannot be used.
pub fn sync_block(
    projects: &Projects,
    app: &Application,
    kind: SyncKind,
    now: Timestamp,
) -> Result<Option<WindowBlock>, WindowError> {
    let Ok(project) = projects.get(&app.spec.project) else {
        return Ok(None);
    };
    let windows = ProjectWindows::parse(&app.spec.project, &project.sync_windows)?;
    Ok(windows.applying_to(&AppTarget::of(app)).block(kind, now))
}

/// [`sync_block`], with a window that cannot be used blocking every sync until the project is
/// fixed (the block names the window and the error).
#[must_use]
pub fn sync_block_or_invalid(
    projects: &Projects,
    app: &Application,
    kind: SyncKind,
    now: Timestamp,
) -> Option<WindowBlock> {
    sync_block(projects, app, kind, now).unwrap_or_else(|error| {
        Some(WindowBlock {
            window: format!("syncWindows[{}] of project {}", error.index, error.project),
            summary: format!(
                "invalid {} {:?}: {}",
                error.field, error.value, error.problem
            ),
            opens_at: None,
            opens: "once the project is fixed".to_owned(),
        })
    })
}
