//! Argo CD's sync-window semantics for the windows that apply to one Application: an active
//! deny window blocks every sync (deny wins), except manual syncs when every active deny window
//! sets `manualSync`; once any allow window applies, syncs happen only while one is active,
//! except manual syncs when an allow window sets `manualSync`. And when a blocked sync could
//! happen next. Pure: the instant is an argument.

use jiff::{SignedDuration, Timestamp};

use super::block::{SEARCH_HORIZON_DAYS, WindowBlock, wall_clock};
use super::window::{AppTarget, Window, WindowError};
use crate::api::sync_window::{SyncWindow, WindowKind};

/// Who starts a sync: windows treat manual syncs differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    /// `syncPolicy.automated`, and the syncs a rollout requests.
    Automated,
    /// A sync a person asked for (`spec.operation` not initiated automatically).
    Manual,
}

/// The validated windows of one project.
#[derive(Debug, Clone, Default)]
pub struct ProjectWindows {
    windows: Vec<Window>,
}

impl ProjectWindows {
    /// Validates the windows of project `project` (kept by
    /// [`crate::project::ProjectMemos::windows`]: every reconcile asks, and each window compiles
    /// a regex per glob).
    ///
    /// # Errors
    /// The first window that cannot be used, named by project, index and field.
    pub fn validate(project: &str, windows: &[SyncWindow]) -> Result<Self, WindowError> {
        let windows = windows
            .iter()
            .enumerate()
            .map(|(index, spec)| Window::parse(project, index, spec))
            .collect::<Result<_, _>>()?;
        Ok(Self { windows })
    }

    /// The windows that apply to `target`, in the project's order.
    #[must_use]
    pub fn applying_to(&self, target: &AppTarget<'_>) -> AppWindows<'_> {
        AppWindows {
            windows: self
                .windows
                .iter()
                .filter(|w| w.applies_to(target))
                .collect(),
        }
    }
}

/// The windows that apply to one Application.
#[derive(Debug, Clone)]
pub struct AppWindows<'a> {
    windows: Vec<&'a Window>,
}

impl<'a> AppWindows<'a> {
    /// `windows`, already known to apply to the Application.
    #[must_use]
    pub fn of(windows: &'a [Window]) -> Self {
        Self {
            windows: windows.iter().collect(),
        }
    }

    /// The windows, in the project's order.
    #[must_use]
    pub fn windows(&self) -> &[&'a Window] {
        &self.windows
    }

    /// The window that keeps a sync of `kind` from happening at `t`, if any: the first active
    /// deny window that blocks it, else (when allow windows apply and none is active) the
    /// allow window that starts first.
    #[must_use]
    pub fn blocker(&self, kind: SyncKind, t: Timestamp) -> Option<&'a Window> {
        let manual = kind == SyncKind::Manual;
        let of = |wanted: WindowKind| self.windows.iter().filter(move |w| w.spec.kind == wanted);
        let mut active_denies = of(WindowKind::Deny).filter(|w| w.active_at(t)).peekable();
        if active_denies.peek().is_some() {
            return active_denies
                .find(|w| !(manual && w.spec.manual_sync))
                .copied();
        }
        let allows: Vec<&Window> = of(WindowKind::Allow).copied().collect();
        if allows.is_empty()
            || allows.iter().any(|w| w.active_at(t))
            || (manual && allows.iter().any(|w| w.spec.manual_sync))
        {
            return None;
        }
        allows
            .into_iter()
            .min_by_key(|w| w.next_start_after(t).unwrap_or(Timestamp::MAX))
    }

    /// Why a sync of `kind` cannot happen at `now`, and when it could (the first instant within
    /// [`SEARCH_HORIZON_DAYS`] at which no window blocks it); `None` when it can happen now.
    #[must_use]
    pub fn block(&self, kind: SyncKind, now: Timestamp) -> Option<WindowBlock> {
        let blocker = self.blocker(kind, now)?;
        let horizon = now
            .checked_add(SignedDuration::from_hours(SEARCH_HORIZON_DAYS * 24))
            .unwrap_or(Timestamp::MAX);
        let mut boundaries: Vec<Timestamp> = self
            .windows
            .iter()
            .flat_map(|w| w.boundaries(now, horizon))
            .collect();
        boundaries.sort();
        boundaries.dedup();
        let opens_at = boundaries
            .into_iter()
            .find(|b| self.blocker(kind, *b).is_none());
        Some(WindowBlock {
            window: blocker.name(),
            summary: blocker.summary(),
            opens_at,
            opens: opens_at
                .map(|t| wall_clock(t, blocker.zone(), now))
                .unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn window(kind: WindowKind, schedule: &str, duration: &str, manual: bool) -> SyncWindow {
        SyncWindow {
            kind,
            schedule: schedule.to_owned(),
            duration: duration.to_owned(),
            applications: vec!["*".to_owned()],
            manual_sync: manual,
            ..SyncWindow::default()
        }
    }

    const TARGET: AppTarget<'static> = AppTarget {
        name: "web",
        namespace: "prod",
        server: "https://kubernetes.default.svc",
        cluster: "in-cluster",
    };

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// Which window (by index) blocks automated and manual syncs.
    type Blockers = (Option<usize>, Option<usize>);

    /// Which window (by index) blocks automated and manual syncs at `at`.
    fn blockers(windows: &[SyncWindow], at: &str) -> Blockers {
        let parsed = ProjectWindows::validate("p", windows).unwrap();
        let applying = parsed.applying_to(&TARGET);
        let of = |kind| applying.blocker(kind, ts(at)).map(|w| w.index);
        (of(SyncKind::Automated), of(SyncKind::Manual))
    }

    #[test]
    fn a_project_s_windows_are_validated_once_until_they_change() {
        let memos = crate::project::ProjectMemos::default();
        let nightly = window(WindowKind::Deny, "0 22 * * *", "1h", false);
        let first = memos
            .windows("validated-once", std::slice::from_ref(&nightly))
            .unwrap();
        let again = memos
            .windows("validated-once", std::slice::from_ref(&nightly))
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let longer = window(WindowKind::Deny, "0 22 * * *", "2h", false);
        let changed = memos.windows("validated-once", &[longer]).unwrap();
        assert!(!Arc::ptr_eq(&first, &changed));
        let other = memos.windows("another-project", &[nightly]).unwrap();
        assert!(!Arc::ptr_eq(&first, &other), "errors name the project");
    }

    #[test]
    fn deny_wins_allow_closes_outside_and_manual_sync_lets_manual_syncs_through() {
        use WindowKind::{Allow, Deny};
        // Deny 10:00-12:00 daily; allow 08:00-18:00 daily.
        let deny = window(Deny, "0 10 * * *", "2h", false);
        let deny_manual = window(Deny, "0 10 * * *", "2h", true);
        let allow = window(Allow, "0 8 * * *", "10h", false);
        let allow_manual = window(Allow, "0 8 * * *", "10h", true);
        let cases: Vec<(Vec<SyncWindow>, &str, Blockers)> = vec![
            (vec![], "2026-12-04T11:00:00Z", (None, None)),
            (
                vec![deny.clone()],
                "2026-12-04T11:00:00Z",
                (Some(0), Some(0)),
            ),
            (vec![deny.clone()], "2026-12-04T12:00:00Z", (None, None)),
            (
                vec![deny_manual.clone()],
                "2026-12-04T11:00:00Z",
                (Some(0), None),
            ),
            // Manual syncs pass only when every active deny window allows them.
            (
                vec![deny_manual.clone(), deny.clone()],
                "2026-12-04T11:00:00Z",
                (Some(0), Some(1)),
            ),
            (vec![allow.clone()], "2026-12-04T09:00:00Z", (None, None)),
            (
                vec![allow.clone()],
                "2026-12-04T19:00:00Z",
                (Some(0), Some(0)),
            ),
            (
                vec![allow_manual.clone()],
                "2026-12-04T19:00:00Z",
                (Some(0), None),
            ),
            // Deny wins over an active allow.
            (
                vec![allow.clone(), deny.clone()],
                "2026-12-04T11:00:00Z",
                (Some(1), Some(1)),
            ),
            (
                vec![allow.clone(), deny.clone()],
                "2026-12-04T13:00:00Z",
                (None, None),
            ),
            (
                vec![allow_manual, deny_manual],
                "2026-12-04T11:00:00Z",
                (Some(1), None),
            ),
        ];
        for (index, (windows, at, expected)) in cases.into_iter().enumerate() {
            assert_eq!(blockers(&windows, at), expected, "case {index}");
        }
    }

    #[test]
    fn windows_that_do_not_apply_do_not_block() {
        let mut other = window(WindowKind::Deny, "* * * * *", "1h", false);
        other.applications = vec!["other-*".to_owned()];
        assert_eq!(blockers(&[other], "2026-12-04T11:00:00Z"), (None, None));
    }

    #[test]
    fn when_a_blocked_sync_could_happen_next() {
        let mut freeze = window(WindowKind::Deny, "0 16 * * 5", "64h", false);
        freeze.time_zone = "Europe/Berlin".to_owned();
        freeze.description = "prod freeze".to_owned();
        let mut hours = window(WindowKind::Allow, "0 8 * * 1-5", "10h", false);
        hours.time_zone = "Europe/Berlin".to_owned();
        let project = ProjectWindows::validate("p", &[freeze.clone(), hours]).unwrap();
        let applying = project.applying_to(&TARGET);
        let now = ts("2026-12-04T15:30:00Z"); // Friday 16:30 Berlin
        let block = applying.block(SyncKind::Automated, now).unwrap();
        assert_eq!(
            block.text(),
            "window 'prod freeze' (deny 0 16 * * 5 for 64h, Europe/Berlin) — opens Mon 08:00 Europe/Berlin"
        );
        assert_eq!(block.opens_at, Some(ts("2026-12-07T07:00:00Z")));
        // Monday evening: closed by the allow window until Tuesday 08:00.
        let evening = applying
            .block(SyncKind::Automated, ts("2026-12-07T18:00:00Z"))
            .unwrap();
        assert_eq!(
            evening.short(),
            "window 'allow 0 8 * * 1-5' (opens Tue 08:00 Europe/Berlin)"
        );
        assert!(
            applying
                .block(SyncKind::Automated, ts("2026-12-08T08:00:00Z"))
                .is_none()
        );
        // Across the spring change: a duration is elapsed time, so 64h from Friday 16:00 CET
        // ends on Monday at 09:00 CEST.
        let spring = ProjectWindows::validate("p", &[freeze]).unwrap();
        let block = spring
            .applying_to(&TARGET)
            .block(SyncKind::Automated, ts("2027-03-27T12:00:00Z"))
            .unwrap();
        assert_eq!(block.opens_at, Some(ts("2027-03-29T07:00:00Z")));
        assert_eq!(block.opens, "Mon 09:00 Europe/Berlin");
        // A deny window that never ends within the horizon.
        let always =
            ProjectWindows::validate("p", &[window(WindowKind::Deny, "* * * * *", "2m", false)])
                .unwrap();
        let block = always
            .applying_to(&TARGET)
            .block(SyncKind::Automated, now)
            .unwrap();
        assert_eq!(block.opens_at, None);
        assert_eq!(
            block.short(),
            "window 'deny * * * * *' (does not open within 28 days)"
        );
    }
}
