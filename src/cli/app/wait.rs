//! When `flotilla app wait` is done: a pure check of an Application's status against what the
//! caller waits for (health, sync, or both), with the reason to print while it is not.

use flotilla_core::api::application::Application;
use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::health::HealthStatus;
use flotilla_core::sync::OperationPhase;

/// What to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitFor {
    /// `status.health.status` is `Healthy`.
    pub health: bool,
    /// `status.sync.status` is `Synced`.
    pub sync: bool,
}

impl WaitFor {
    /// Health and sync when neither flag is given (as `argocd app wait` does).
    #[must_use]
    pub fn from_flags(health: bool, sync: bool) -> Self {
        if health || sync {
            Self { health, sync }
        } else {
            Self {
                health: true,
                sync: true,
            }
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
pub fn wait_state(app: &Application, want: WaitFor) -> WaitState {
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
    if want.health {
        match &status.health {
            Some(h) if h.status == HealthStatus::Healthy => {}
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

    const BOTH: WaitFor = WaitFor {
        health: true,
        sync: true,
    };

    #[test]
    fn no_flags_mean_health_and_sync() {
        assert_eq!(WaitFor::from_flags(false, false), BOTH);
        let health_only = WaitFor::from_flags(true, false);
        assert!(health_only.health && !health_only.sync);
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
            (
                "OutOfSync",
                "Healthy",
                "",
                WaitFor::from_flags(true, false),
                WaitState::Done,
            ),
            (
                "Synced",
                "Progressing",
                "1/3 pods ready",
                BOTH,
                WaitState::Waiting("health is Progressing: 1/3 pods ready".into()),
            ),
            (
                "Synced",
                "Degraded",
                "",
                WaitFor::from_flags(false, true),
                WaitState::Done,
            ),
        ];
        for (sync, health, message, want, expected) in cases {
            assert_eq!(
                wait_state(&app(sync, health, message), want),
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
            wait_state(&requested, BOTH),
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
            wait_state(&running, BOTH),
            WaitState::Waiting("sync web-1 is running".into())
        );
    }

    #[test]
    fn no_status_waits_on_unknown() {
        let fresh = Application::new("web", ApplicationSpec::default());
        assert_eq!(
            wait_state(&fresh, BOTH),
            WaitState::Waiting("sync is Unknown; health is Unknown".into())
        );
    }
}
