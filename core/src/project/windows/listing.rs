//! What the sync windows mean for some Applications at an instant: each window that applies
//! (active or not, and when that changes) and whether automated and manual syncs may happen —
//! what `flotilla windows` prints and the web view shows. Pure.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;

use super::block::SEARCH_HORIZON_DAYS;
use super::{AppTarget, SyncKind, WindowError, wall_clock};
use crate::api::Application;
use crate::project::Projects;
use crate::table::Table;

/// The windows of some Applications and what they mean for syncs.
#[derive(Debug, serde::Serialize)]
pub struct WindowListing {
    /// One entry per window that applies to an Application.
    pub windows: Vec<WindowRow>,
    /// One entry per Application: whether syncs may happen.
    pub applications: Vec<SyncVerdict>,
}

/// A window that applies to an Application.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowRow {
    pub application: String,
    pub project: String,
    pub window: String,
    /// `allow` or `deny`.
    pub kind: String,
    /// Schedule, duration and time zone.
    pub schedule: String,
    pub active: bool,
    /// When it next starts or ends.
    pub next_change: String,
    pub manual_sync: bool,
    pub description: String,
}

/// Whether an Application's automated and manual syncs may happen now.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncVerdict {
    pub application: String,
    /// `allowed` or `waits for …`; empty when there is a `problem`.
    pub automated: String,
    pub manual: String,
    /// Why it cannot be told (its project does not exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The windows of each of `applications` at `now`: each window that applies (with whether it
/// is active and when that changes), then per Application whether automated and manual syncs
/// may happen.
///
/// # Errors
/// A window of a project cannot be used.
pub fn listing(
    applications: &[Application],
    projects: &Projects,
    now: Timestamp,
) -> Result<WindowListing, WindowError> {
    let horizon = now
        .checked_add(SignedDuration::from_hours(SEARCH_HORIZON_DAYS * 24))
        .unwrap_or(Timestamp::MAX);
    let mut listed = WindowListing {
        windows: Vec::new(),
        applications: Vec::new(),
    };
    let mut sorted: Vec<&Application> = applications.iter().collect();
    sorted.sort_by_key(|app| app.name_any());
    for app in sorted {
        let name = app.name_any();
        let project_name = &app.spec.project;
        let Ok(project) = projects.get(project_name) else {
            listed.applications.push(SyncVerdict {
                application: name,
                automated: String::new(),
                manual: String::new(),
                problem: Some(format!("project {project_name:?} does not exist")),
            });
            continue;
        };
        let windows = projects
            .memos()
            .windows(project_name, &project.sync_windows)?;
        let applying = windows.applying_to(&AppTarget::of(app));
        for window in applying.windows() {
            let active = window.active_at(now);
            let next_change = window.next_change(now, horizon).map_or_else(
                || format!("not within {SEARCH_HORIZON_DAYS} days"),
                |t| {
                    let verb = if active { "ends" } else { "starts" };
                    format!("{verb} {}", wall_clock(t, window.zone(), now))
                },
            );
            listed.windows.push(WindowRow {
                application: name.clone(),
                project: project_name.clone(),
                window: window.name(),
                kind: format!("{:?}", window.spec.kind).to_lowercase(),
                schedule: format!(
                    "{} for {}, {}",
                    window.spec.schedule,
                    window.spec.duration,
                    window.zone_name()
                ),
                active,
                next_change,
                manual_sync: window.spec.manual_sync,
                description: window.spec.description.clone(),
            });
        }
        let verdict = |kind| {
            applying.block(kind, now).map_or_else(
                || "allowed".to_owned(),
                |block| format!("waits for {}", block.text()),
            )
        };
        listed.applications.push(SyncVerdict {
            application: name,
            automated: verdict(SyncKind::Automated),
            manual: verdict(SyncKind::Manual),
            problem: None,
        });
    }
    Ok(listed)
}

impl WindowListing {
    /// One row per window, then one line per Application.
    #[must_use]
    pub fn table(&self, wide: bool) -> String {
        let mut headers = vec![
            "APPLICATION",
            "PROJECT",
            "WINDOW",
            "KIND",
            "SCHEDULE",
            "ACTIVE",
            "NEXT CHANGE",
        ];
        if wide {
            headers.extend(["MANUAL SYNC", "DESCRIPTION"]);
        }
        let yes = |b: bool| if b { "yes" } else { "no" }.to_owned();
        let mut rows = Table::new(&headers);
        for w in &self.windows {
            let mut row = vec![
                w.application.clone(),
                w.project.clone(),
                w.window.clone(),
                w.kind.clone(),
                w.schedule.clone(),
                yes(w.active),
                w.next_change.clone(),
            ];
            if wide {
                row.extend([yes(w.manual_sync), w.description.clone()]);
            }
            rows.row(row);
        }
        let mut text = rows.render() + "\n";
        for v in &self.applications {
            if let Some(problem) = &v.problem {
                text.push_str(&format!("{}: {problem}\n", v.application));
            } else {
                text.push_str(&format!(
                    "{}: automated syncs {}; manual syncs {}\n",
                    v.application, v.automated, v.manual
                ));
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::AppProjectSpec;

    #[test]
    fn lists_each_window_and_what_it_means_for_syncs() {
        let app = |name: &str| -> Application {
            serde_json::from_value(json!({
                "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
                "metadata": {"name": name},
                "spec": {"project": "prod", "source": {"repoURL": "r"},
                         "destination": {"namespace": "production"}}
            }))
            .unwrap()
        };
        let spec: AppProjectSpec = serde_json::from_value(json!({"syncWindows": [
            {"kind": "deny", "schedule": "0 16 * * 5", "duration": "64h", "timeZone": "Europe/Berlin",
             "namespaces": ["production"], "manualSync": true, "description": "prod freeze"},
            {"kind": "allow", "schedule": "0 8 * * 1-5", "duration": "10h", "applications": ["web"]}
        ]}))
        .unwrap();
        let projects = Projects::new([("prod".to_owned(), spec)]);
        let now: Timestamp = "2026-12-05T12:00:00Z".parse().unwrap();
        let text = listing(&[app("web"), app("db")], &projects, now)
            .unwrap()
            .table(false);
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        assert!(lines[0].starts_with("APPLICATION"), "{text}");
        assert!(lines[1].starts_with("db "), "{text}");
        assert!(
            lines[1].ends_with("yes     ends Mon 08:00 Europe/Berlin"),
            "{text}"
        );
        assert!(lines[3].contains("allow 0 8 * * 1-5"), "{text}");
        assert!(lines[3].ends_with("no      starts Mon 08:00 UTC"), "{text}");
        assert_eq!(
            lines[5],
            "db: automated syncs waits for window 'prod freeze' (deny 0 16 * * 5 for 64h, Europe/Berlin) — opens Mon 08:00 Europe/Berlin; manual syncs allowed"
        );
        // The freeze ends at 07:00Z, but web's allow window opens only at 08:00Z (09:00 Berlin).
        assert_eq!(
            lines[6],
            "web: automated syncs waits for window 'prod freeze' (deny 0 16 * * 5 for 64h, Europe/Berlin) — opens Mon 09:00 Europe/Berlin; manual syncs allowed"
        );
    }
}
