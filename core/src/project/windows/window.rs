//! One sync window, validated: its cron schedule in its time zone, its duration and the globs
//! naming what it applies to; when it is active, when it starts and ends. A window is active at
//! `t` when some start `s` has `s <= t < s + duration`. Pure.

use std::time::Duration;

use globset::{Glob, GlobMatcher};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use super::cron::{CronError, CronSchedule};
use crate::api::Application;
use crate::api::sync_window::{SyncWindow, WindowKind};
use flotilla_generators::duration::{DurationError, parse_duration};

/// How many starts [`Window::starts_between`] lists at most (a window every minute for a month
/// is about 44,000).
const MAX_STARTS: usize = 100_000;

/// A window of a project that cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("project {project}: syncWindows[{index}].{field} {value:?}: {problem}")]
pub struct WindowError {
    pub project: String,
    pub index: usize,
    pub field: String,
    pub value: String,
    pub problem: Box<FieldProblem>,
}

/// What is wrong with one field of a window.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FieldProblem {
    #[error(transparent)]
    Schedule(#[from] CronError),
    #[error(transparent)]
    Duration(#[from] DurationError),
    #[error("the duration must be longer than 0")]
    ZeroDuration,
    #[error("the duration is too long: {0}")]
    TooLong(#[source] jiff::Error),
    #[error("unknown time zone: {0}")]
    TimeZone(#[source] jiff::Error),
    #[error(transparent)]
    Glob(#[from] globset::Error),
}

/// Where an Application deploys, as windows match it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppTarget<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub server: &'a str,
    pub cluster: &'a str,
}

impl<'a> AppTarget<'a> {
    /// The name and destination of `app`.
    #[must_use]
    pub fn of(app: &'a Application) -> Self {
        let destination = &app.spec.destination;
        Self {
            name: app.metadata.name.as_deref().unwrap_or_default(),
            namespace: destination.namespace.as_deref().unwrap_or_default(),
            server: destination.server.as_deref().unwrap_or_default(),
            cluster: destination.name.as_deref().unwrap_or_default(),
        }
    }
}

/// A validated window.
#[derive(Debug, Clone)]
pub struct Window {
    /// Its index in `spec.syncWindows`.
    pub index: usize,
    pub spec: SyncWindow,
    schedule: CronSchedule,
    duration: SignedDuration,
    zone: TimeZone,
    applications: Vec<GlobMatcher>,
    namespaces: Vec<GlobMatcher>,
    clusters: Vec<GlobMatcher>,
}

impl Window {
    /// Validates window `index` of project `project`.
    ///
    /// # Errors
    /// An invalid schedule, duration, time zone or glob, naming the project, the window and the
    /// field.
    pub fn parse(project: &str, index: usize, spec: &SyncWindow) -> Result<Self, WindowError> {
        let error = |field: &str, value: &str, problem: FieldProblem| WindowError {
            project: project.to_owned(),
            index,
            field: field.to_owned(),
            value: value.to_owned(),
            problem: Box::new(problem),
        };
        let schedule = CronSchedule::parse(&spec.schedule)
            .map_err(|e| error("schedule", &spec.schedule, e.into()))?;
        let duration = parse_duration(&spec.duration)
            .map_err(|e| error("duration", &spec.duration, e.into()))?;
        if duration == Duration::ZERO {
            return Err(error(
                "duration",
                &spec.duration,
                FieldProblem::ZeroDuration,
            ));
        }
        let duration = SignedDuration::try_from(duration)
            .map_err(|e| error("duration", &spec.duration, FieldProblem::TooLong(e)))?;
        let zone = if spec.time_zone.is_empty() {
            TimeZone::UTC
        } else {
            TimeZone::get(&spec.time_zone)
                .map_err(|e| error("timeZone", &spec.time_zone, FieldProblem::TimeZone(e)))?
        };
        let globs = |field: &str, patterns: &[String]| {
            patterns
                .iter()
                .enumerate()
                .map(|(i, pattern)| {
                    Glob::new(pattern)
                        .map(|glob| glob.compile_matcher())
                        .map_err(|e| error(&format!("{field}[{i}]"), pattern, e.into()))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Self {
            index,
            applications: globs("applications", &spec.applications)?,
            namespaces: globs("namespaces", &spec.namespaces)?,
            clusters: globs("clusters", &spec.clusters)?,
            spec: spec.clone(),
            schedule,
            duration,
            zone,
        })
    }

    /// The window's name: its description, else its kind and schedule (`deny 0 16 * * 5`).
    #[must_use]
    pub fn name(&self) -> String {
        if self.spec.description.is_empty() {
            format!("{} {}", self.kind_word(), self.spec.schedule)
        } else {
            self.spec.description.clone()
        }
    }

    /// `deny 0 16 * * 5 for 64h, Europe/Berlin`.
    #[must_use]
    pub fn summary(&self) -> String {
        format!(
            "{} {} for {}, {}",
            self.kind_word(),
            self.spec.schedule,
            self.spec.duration,
            self.zone_name()
        )
    }

    fn kind_word(&self) -> &'static str {
        match self.spec.kind {
            WindowKind::Allow => "allow",
            WindowKind::Deny => "deny",
        }
    }

    /// The IANA name of the window's time zone (`UTC` by default).
    #[must_use]
    pub fn zone_name(&self) -> &str {
        self.zone.iana_name().unwrap_or("UTC")
    }

    /// The window's time zone.
    #[must_use]
    pub fn zone(&self) -> &TimeZone {
        &self.zone
    }

    /// Whether the window applies to `target`: any non-empty list matching (`andOperator`:
    /// every non-empty list), as Argo CD matches windows; a cluster matches by server URL or
    /// name.
    #[must_use]
    pub fn applies_to(&self, target: &AppTarget<'_>) -> bool {
        let any = |globs: &[GlobMatcher], values: &[&str]| {
            globs
                .iter()
                .any(|glob| values.iter().any(|v| glob.is_match(v)))
        };
        let lists = [
            (&self.applications, vec![target.name]),
            (&self.namespaces, vec![target.namespace]),
            (&self.clusters, vec![target.server, target.cluster]),
        ];
        let mut given = lists.iter().filter(|(globs, _)| !globs.is_empty());
        if self.spec.and_operator {
            given.all(|(globs, values)| any(globs, values))
        } else {
            given.any(|(globs, values)| any(globs, values))
        }
    }

    /// The first start strictly after `t`, within five years.
    #[must_use]
    pub fn next_start_after(&self, t: Timestamp) -> Option<Timestamp> {
        let mut civil = self.zone.to_datetime(t);
        // A wall-clock time repeated when clocks go back resolves to its first instant, which
        // may lie before `t`: look further then.
        for _ in 0..4 {
            civil = self.schedule.next_after(civil)?;
            let start = self
                .zone
                .to_ambiguous_zoned(civil)
                .compatible()
                .ok()?
                .timestamp();
            if start > t {
                return Some(start);
            }
        }
        None
    }

    /// Whether the window is active at `t`.
    #[must_use]
    pub fn active_at(&self, t: Timestamp) -> bool {
        self.since(t)
            .and_then(|earliest| self.next_start_after(earliest))
            .is_some_and(|start| start <= t)
    }

    /// `t - duration`: starts after it are active at `t`.
    fn since(&self, t: Timestamp) -> Option<Timestamp> {
        t.checked_sub(self.duration).ok()
    }

    /// The starts `s` with `from < s <= to`.
    #[must_use]
    pub fn starts_between(&self, from: Timestamp, to: Timestamp) -> Vec<Timestamp> {
        let mut starts = Vec::new();
        let mut cursor = from;
        while let Some(start) = self.next_start_after(cursor).filter(|s| *s <= to) {
            if starts.len() == MAX_STARTS {
                break;
            }
            starts.push(start);
            cursor = start;
        }
        starts
    }

    /// The instants in `(from, to]` at which the window becomes active or inactive (or
    /// starts again while active).
    #[must_use]
    pub fn boundaries(&self, from: Timestamp, to: Timestamp) -> Vec<Timestamp> {
        let Some(earliest) = self.since(from) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for start in self.starts_between(earliest, to) {
            if start > from {
                found.push(start);
            }
            if let Ok(end) = start.checked_add(self.duration)
                && end > from
                && end <= to
            {
                found.push(end);
            }
        }
        found
    }

    /// When the window next changes after `t`: the end of the activity around `t` (counting
    /// starts that extend it), or its next start; `None` beyond `horizon`.
    #[must_use]
    pub fn next_change(&self, t: Timestamp, horizon: Timestamp) -> Option<Timestamp> {
        let active = self.active_at(t);
        self.boundaries(t, horizon)
            .into_iter()
            .filter(|b| self.active_at(*b) != active)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(kind: WindowKind, schedule: &str, duration: &str, zone: &str) -> Window {
        let spec = SyncWindow {
            kind,
            schedule: schedule.to_owned(),
            duration: duration.to_owned(),
            time_zone: zone.to_owned(),
            ..SyncWindow::default()
        };
        Window::parse("p", 0, &spec).unwrap()
    }

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn active_from_each_start_for_its_duration() {
        // Friday 16:00 Berlin (15:00Z in winter) for 64h: until Monday 08:00 Berlin.
        let freeze = window(WindowKind::Deny, "0 16 * * 5", "64h", "Europe/Berlin");
        let cases = [
            ("2026-12-04T14:59:59Z", false),
            ("2026-12-04T15:00:00Z", true),
            ("2026-12-06T12:00:00Z", true),
            ("2026-12-07T06:59:59Z", true),
            ("2026-12-07T07:00:00Z", false),
            ("2026-12-09T12:00:00Z", false),
        ];
        for (at, active) in cases {
            assert_eq!(freeze.active_at(ts(at)), active, "{at}");
        }
        assert_eq!(freeze.name(), "deny 0 16 * * 5");
        assert_eq!(freeze.summary(), "deny 0 16 * * 5 for 64h, Europe/Berlin");
        let horizon = ts("2027-01-01T00:00:00Z");
        assert_eq!(
            freeze.next_change(ts("2026-12-05T00:00:00Z"), horizon),
            Some(ts("2026-12-07T07:00:00Z"))
        );
        assert_eq!(
            freeze.next_change(ts("2026-12-08T00:00:00Z"), horizon),
            Some(ts("2026-12-11T15:00:00Z"))
        );
    }

    #[test]
    fn overlapping_starts_extend_the_activity() {
        let daily = window(WindowKind::Allow, "0 0 * * *", "25h", "");
        let horizon = ts("2027-01-01T00:00:00Z");
        assert!(daily.active_at(ts("2026-12-04T23:30:00Z")));
        assert_eq!(daily.next_change(ts("2026-12-04T12:00:00Z"), horizon), None);
        let hourly = window(WindowKind::Allow, "0 * * * *", "30m", "UTC");
        assert_eq!(
            hourly.next_change(ts("2026-12-04T12:10:00Z"), horizon),
            Some(ts("2026-12-04T12:30:00Z"))
        );
        assert_eq!(
            hourly.boundaries(ts("2026-12-04T12:10:00Z"), ts("2026-12-04T13:45:00Z")),
            [
                ts("2026-12-04T12:30:00Z"),
                ts("2026-12-04T13:00:00Z"),
                ts("2026-12-04T13:30:00Z")
            ]
        );
    }

    #[test]
    fn starts_follow_the_wall_clock_across_daylight_saving_changes() {
        let morning = window(WindowKind::Allow, "0 8 * * *", "1h", "Europe/Berlin");
        // CET (UTC+1) until 2027-03-28, CEST (UTC+2) after.
        assert_eq!(
            morning.next_start_after(ts("2027-03-27T12:00:00Z")),
            Some(ts("2027-03-28T06:00:00Z"))
        );
        assert_eq!(
            morning.next_start_after(ts("2027-03-26T12:00:00Z")),
            Some(ts("2027-03-27T07:00:00Z"))
        );
        // 02:30 does not exist on 2027-03-28 (clocks jump 02:00 → 03:00): it starts at 03:30.
        let gap = window(WindowKind::Deny, "30 2 * * *", "1h", "Europe/Berlin");
        assert_eq!(
            gap.next_start_after(ts("2027-03-27T12:00:00Z")),
            Some(ts("2027-03-28T01:30:00Z"))
        );
        // 02:30 happens twice on 2027-10-31: the window starts once, at the first.
        let starts = gap.starts_between(ts("2027-10-30T12:00:00Z"), ts("2027-10-31T12:00:00Z"));
        assert_eq!(starts, [ts("2027-10-31T00:30:00Z")]);
    }

    #[test]
    fn which_applications_a_window_applies_to() {
        let spec = |apps: &[&str], namespaces: &[&str], clusters: &[&str], and: bool| SyncWindow {
            schedule: "* * * * *".to_owned(),
            duration: "1h".to_owned(),
            applications: apps.iter().map(|s| (*s).to_owned()).collect(),
            namespaces: namespaces.iter().map(|s| (*s).to_owned()).collect(),
            clusters: clusters.iter().map(|s| (*s).to_owned()).collect(),
            and_operator: and,
            ..SyncWindow::default()
        };
        let target = AppTarget {
            name: "platform-backend",
            namespace: "production",
            server: "https://prod.example.com",
            cluster: "prod-eu",
        };
        let cases = [
            (spec(&["platform-*"], &[], &[], false), true),
            (spec(&["other"], &[], &[], false), false),
            (spec(&["other"], &["prod*"], &[], false), true),
            (spec(&["other"], &["prod*"], &[], true), false),
            (spec(&["platform-*"], &["prod*"], &["prod-eu"], true), true),
            (spec(&[], &[], &["https://prod.*"], false), true),
            (spec(&[], &[], &["prod-*"], false), true),
            (spec(&[], &[], &[], false), false),
            (spec(&[], &[], &[], true), true),
        ];
        for (index, (spec, applies)) in cases.into_iter().enumerate() {
            let window = Window::parse("p", 0, &spec).unwrap();
            assert_eq!(window.applies_to(&target), applies, "case {index}");
        }
    }

    #[test]
    fn invalid_fields_are_named() {
        let base = SyncWindow {
            schedule: "0 16 * * 5".to_owned(),
            duration: "1h".to_owned(),
            ..SyncWindow::default()
        };
        let cases = [
            (
                SyncWindow {
                    schedule: "0 16 * *".to_owned(),
                    ..base.clone()
                },
                r#"project prod: syncWindows[2].schedule "0 16 * *": expected 5 fields (minute hour day-of-month month day-of-week), found 4"#,
            ),
            (
                SyncWindow {
                    duration: "0s".to_owned(),
                    ..base.clone()
                },
                r#"project prod: syncWindows[2].duration "0s": the duration must be longer than 0"#,
            ),
            (
                SyncWindow {
                    time_zone: "Mars/Olympus".to_owned(),
                    ..base.clone()
                },
                r#"project prod: syncWindows[2].timeZone "Mars/Olympus": unknown time zone"#,
            ),
            (
                SyncWindow {
                    namespaces: vec!["ok".to_owned(), "[".to_owned()],
                    ..base.clone()
                },
                r#"project prod: syncWindows[2].namespaces[1] "[": "#,
            ),
        ];
        for (spec, message) in cases {
            let error = Window::parse("prod", 2, &spec).unwrap_err().to_string();
            assert!(error.starts_with(message), "{error}");
        }
        let bad_duration = SyncWindow {
            duration: "1 hour".to_owned(),
            ..base
        };
        let error = Window::parse("prod", 0, &bad_duration)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(r#"project prod: syncWindows[0].duration "1 hour": "#),
            "{error}"
        );
    }
}
