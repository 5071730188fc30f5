//! When `flotilla app wait` is done: a pure check of an Application's status against what the
//! caller waits for (health, sync, no operation, as `argocd app wait`'s flags say), with the
//! reason to print while it is not.

use flotilla_core::api::application::Application;
use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::health::HealthStatus;
use flotilla_core::sync::OperationPhase;

/// `app wait`'s conditions, as `argocd app wait`'s flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one bool per argocd flag, read once into WaitFor"
)]
pub struct WaitFlags {
    /// Wait for health Healthy.
    #[arg(long)]
    pub health: bool,
    /// Wait for sync Synced.
    #[arg(long)]
    pub sync: bool,
    /// Wait until no sync is requested or running.
    #[arg(long)]
    pub operation: bool,
    /// Wait for health Suspended (with --health or --degraded: any of them).
    #[arg(long)]
    pub suspended: bool,
    /// Wait for health Degraded (with --health or --suspended: any of them).
    #[arg(long)]
    pub degraded: bool,
}

/// What to wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitFor {
    /// The health statuses any of which will do; empty when health is not waited for.
    pub health: Vec<HealthStatus>,
    /// `status.sync.status` is `Synced`.
    pub sync: bool,
    /// No sync requested or running. A requested or running sync holds every wait anyway, so a
    /// wait right after `app sync` does not pass on the status from before the sync.
    pub operation: bool,
}

impl WaitFor {
    /// Health (Healthy), sync and operation when no flag is given (as `argocd app wait` does).
    #[must_use]
    pub fn from_flags(flags: WaitFlags) -> Self {
        if flags == WaitFlags::default() {
            return Self {
                health: vec![HealthStatus::Healthy],
                sync: true,
                operation: true,
            };
        }
        let health = [
            (flags.health, HealthStatus::Healthy),
            (flags.suspended, HealthStatus::Suspended),
            (flags.degraded, HealthStatus::Degraded),
        ]
        .into_iter()
        .filter_map(|(given, status)| given.then_some(status))
        .collect();
        Self {
            health,
            sync: flags.sync,
            operation: flags.operation,
        }
    }
}

/// The outcome of one look at the Application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitState {
    /// Everything waited for holds (and no sync is requested or running).
    Done,
    /// Not yet; the reason says what is missing.
    Waiting(String),
}

/// Whether `app` satisfies `want`. A requested or running operation counts as not yet, so a
/// wait right after `app sync` does not pass on the status from before the sync.
#[must_use]
pub fn wait_state(app: &Application, want: &WaitFor) -> WaitState {
    let status = app.status.clone().unwrap_or_default();
    let mut missing = Vec::new();
    if app.spec.operation.is_some() {
        missing.push("a sync is requested".to_string());
    }
    if let Some(operation) = &status.operation_state
        && operation.phase == OperationPhase::Running
    {
        missing.push(format!("sync {} is running", operation.operation_id));
    }
    if want.sync {
        let sync = status.sync.as_ref().map(|s| s.status).unwrap_or_default();
        if sync != SyncStatusCode::Synced {
            missing.push(format!("sync is {}", sync.as_str()));
        }
    }
    if !want.health.is_empty() {
        match &status.health {
            Some(h) if want.health.contains(&h.status) => {}
            Some(h) if h.message.is_empty() => missing.push(format!("health is {}", h.status)),
            Some(h) => missing.push(format!("health is {}: {}", h.status, h.message)),
            None => missing.push("health is Unknown".to_string()),
        }
    }
    if missing.is_empty() {
        WaitState::Done
    } else {
        WaitState::Waiting(missing.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_core::api::application::{
        ApplicationSpec, ApplicationStatus, HealthReport, Operation, SyncStatus,
    };
    use flotilla_core::sync::OperationState;

    fn app(sync: &str, health: &str, message: &str) -> Application {
        let mut app = Application::new("web", ApplicationSpec::default());
        app.status = Some(ApplicationStatus {
            sync: Some(SyncStatus {
                status: sync.parse().expect("a sync status"),
                revision: "abc".into(),
                revisions: Vec::new(),
            }),
            health: Some(HealthReport {
                status: health.parse().expect("a health status"),
                message: message.into(),
            }),
            ..ApplicationStatus::default()
        });
        app
    }

    const BOTH: WaitFlags = WaitFlags {
        health: true,
        sync: true,
        operation: false,
        suspended: false,
        degraded: false,
    };
    const HEALTH: WaitFlags = WaitFlags {
        sync: false,
        ..BOTH
    };
    const SYNC: WaitFlags = WaitFlags {
        health: false,
        ..BOTH
    };

    #[test]
    fn no_flags_mean_health_sync_and_operation() {
        let all = WaitFor::from_flags(WaitFlags::default());
        assert_eq!(all.health, [HealthStatus::Healthy]);
        assert!(all.sync && all.operation);
        let health_only = WaitFor::from_flags(HEALTH);
        assert!(!health_only.sync && !health_only.operation);
        let suspended_or_degraded = WaitFor::from_flags(WaitFlags {
            suspended: true,
            degraded: true,
            ..WaitFlags::default()
        });
        assert_eq!(
            suspended_or_degraded.health,
            [HealthStatus::Suspended, HealthStatus::Degraded]
        );
    }

    #[test]
    fn suspended_or_degraded_will_do_when_asked() {
        let degraded = app("Synced", "Degraded", "crash loop");
        let either = WaitFor::from_flags(WaitFlags {
            health: true,
            degraded: true,
            ..WaitFlags::default()
        });
        assert_eq!(wait_state(&degraded, &either), WaitState::Done);
        assert_eq!(
            wait_state(&degraded, &WaitFor::from_flags(HEALTH)),
            WaitState::Waiting("health is Degraded: crash loop".into())
        );
    }

    #[test]
    fn decides_from_health_and_sync() {
        let cases = [
            ("Synced", "Healthy", "", BOTH, WaitState::Done),
            (
                "OutOfSync",
                "Healthy",
                "",
                BOTH,
                WaitState::Waiting("sync is OutOfSync".into()),
            ),
            ("OutOfSync", "Healthy", "", HEALTH, WaitState::Done),
            (
                "Synced",
                "Progressing",
                "1/3 pods ready",
                BOTH,
                WaitState::Waiting("health is Progressing: 1/3 pods ready".into()),
            ),
            ("Synced", "Degraded", "", SYNC, WaitState::Done),
        ];
        for (sync, health, message, want, expected) in cases {
            assert_eq!(
                wait_state(&app(sync, health, message), &WaitFor::from_flags(want)),
                expected,
                "{sync}/{health}"
            );
        }
    }

    #[test]
    fn a_requested_or_running_sync_is_not_done() {
        let mut requested = app("Synced", "Healthy", "");
        requested.spec.operation = Some(Operation::default());
        assert_eq!(
            wait_state(&requested, &WaitFor::from_flags(BOTH)),
            WaitState::Waiting("a sync is requested".into())
        );
        let mut running = app("Synced", "Healthy", "");
        running.status.as_mut().unwrap().operation_state = Some(OperationState {
            phase: OperationPhase::Running,
            message: String::new(),
            revision: None,
            revisions: Vec::new(),
            operation_id: "web-1".into(),
            failure: None,
            started_at: None,
            finished_at: None,
            resources: Vec::new(),
        });
        assert_eq!(
            wait_state(&running, &WaitFor::from_flags(BOTH)),
            WaitState::Waiting("sync web-1 is running".into())
        );
    }

    #[test]
    fn no_status_waits_on_unknown() {
        let fresh = Application::new("web", ApplicationSpec::default());
        assert_eq!(
            wait_state(&fresh, &WaitFor::from_flags(BOTH)),
            WaitState::Waiting("sync is Unknown; health is Unknown".into())
        );
    }
}
