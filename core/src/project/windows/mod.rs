//! Sync windows: when the Applications of a project may sync. Cron schedules (cron.rs), one
//! validated window and when it is active (window.rs), Argo CD's allow/deny/manualSync
//! semantics and the next opening (verdict.rs), and how a wait is told (block.rs). Pure: the
//! controller, `flotilla simulate` and `flotilla windows` pass the instant.

pub mod block;
pub mod cron;
pub mod listing;
pub mod verdict;
pub mod window;

use std::collections::HashMap;

use jiff::Timestamp;

pub use block::{WindowBlock, wall_clock};
pub use listing::{SyncVerdict, WindowListing, WindowRow, listing};
pub use verdict::{AppWindows, ProjectWindows, SyncKind};
pub use window::{AppTarget, Window, WindowError};

use super::Projects;
use crate::api::Application;

/// Why a sync of `kind` of `app` cannot happen at `now` under its project's windows; `None`
/// when it can (a missing project has no windows: the project check refuses it elsewhere). A
/// window that cannot be used blocks every sync until the project is fixed (the block names the
/// window and the error).
#[must_use]
pub fn sync_block_or_invalid(
    projects: &Projects,
    app: &Application,
    kind: SyncKind,
    now: Timestamp,
) -> Option<WindowBlock> {
    Judge::new(projects, kind, now).block_or_invalid(app)
}

/// [`sync_block_or_invalid`] for many Applications at one instant: those of a project to which
/// the same windows apply share one verdict (a fleet's Applications mostly do), so a rollout
/// pass over thousands of Applications searches for the next opening a handful of times.
pub struct Judge<'a> {
    projects: &'a Projects,
    kind: SyncKind,
    now: Timestamp,
    /// Verdicts by project and the indices of the windows that apply.
    verdicts: HashMap<(String, Vec<usize>), Option<WindowBlock>>,
}

impl<'a> Judge<'a> {
    /// Judges syncs of `kind` at `now` under `projects`.
    #[must_use]
    pub fn new(projects: &'a Projects, kind: SyncKind, now: Timestamp) -> Self {
        Self {
            projects,
            kind,
            now,
            verdicts: HashMap::new(),
        }
    }

    /// What [`sync_block_or_invalid`] says of `app`.
    pub fn block_or_invalid(&mut self, app: &Application) -> Option<WindowBlock> {
        let name = &app.spec.project;
        let project = self.projects.get(name).ok()?;
        let windows = match self.projects.memos().windows(name, &project.sync_windows) {
            Ok(windows) => windows,
            Err(error) => return Some(invalid(&error)),
        };
        let applying = windows.applying_to(&AppTarget::of(app));
        let key = (
            name.clone(),
            applying.windows().iter().map(|w| w.index).collect(),
        );
        let (kind, now) = (self.kind, self.now);
        self.verdicts
            .entry(key)
            .or_insert_with(|| applying.block(kind, now))
            .clone()
    }
}

/// The block of a project whose window `error` cannot be used.
fn invalid(error: &WindowError) -> WindowBlock {
    WindowBlock {
        window: format!("syncWindows[{}] of project {}", error.index, error.project),
        summary: format!(
            "invalid {} {:?}: {}",
            error.field, error.value, error.problem
        ),
        opens_at: None,
        opens: "once the project is fixed".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::app_project::AppProjectSpec;

    fn app(name: &str, project: &str, namespace: &str) -> Application {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"project": project, "source": {"repoURL": "r"},
                     "destination": {"namespace": namespace}}
        }))
        .unwrap()
    }

    #[test]
    fn a_judge_shares_verdicts_only_where_the_same_windows_apply() {
        let project = |windows| -> AppProjectSpec {
            serde_json::from_value(json!({ "syncWindows": windows })).unwrap()
        };
        let projects = Projects::new([
            (
                "prod".to_owned(),
                project(json!([
                    {"kind": "deny", "schedule": "0 16 * * 5", "duration": "64h",
                     "namespaces": ["production"], "description": "freeze"},
                    {"kind": "allow", "schedule": "0 8 * * 1-5", "duration": "10h",
                     "applications": ["db"], "description": "office hours"}
                ])),
            ),
            (
                "broken".to_owned(),
                project(json!([{"kind": "deny", "schedule": "0 25 * * *", "duration": "1h"}])),
            ),
        ]);
        let apps = [
            app("web", "prod", "production"),
            app("api", "prod", "production"),
            app("db", "prod", "staging"),
            app("tools", "prod", "staging"),
            app("lost", "missing", "production"),
            app("odd", "broken", "production"),
        ];
        // A Saturday: the freeze blocks web and api; db waits for office hours; tools is free.
        let now: Timestamp = "2026-12-05T12:00:00Z".parse().unwrap();
        let mut judge = Judge::new(&projects, SyncKind::Automated, now);
        let verdicts: Vec<_> = apps.iter().map(|a| judge.block_or_invalid(a)).collect();
        let each: Vec<_> = apps
            .iter()
            .map(|a| sync_block_or_invalid(&projects, a, SyncKind::Automated, now))
            .collect();
        assert_eq!(verdicts, each);
        let window = |i: usize| verdicts[i].as_ref().map(|b| b.window.as_str());
        assert_eq!(window(0), Some("freeze"));
        assert_eq!(window(1), Some("freeze"));
        assert_eq!(window(2), Some("office hours"));
        assert_eq!(window(3), None);
        assert_eq!(window(4), None, "a missing project is refused elsewhere");
        assert_eq!(window(5), Some("syncWindows[0] of project broken"));
    }
}
