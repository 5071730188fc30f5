//! The live timeline of an ApplicationSet's rollout: each Application's current or last
//! operation (from its status) as the simulator's report, drawn by the renderer of `flotilla
//! simulate --timeline`. Time 0 is the earliest start among those operations; a running one
//! ends at `now`.

use k8s_openapi::jiff::Timestamp;

use crate::simulate::report::{AppReport, Ending, Report, critical_path, segments, step_times};
use flotilla_core::api::Application;
use flotilla_core::rollout::RolloutDecision;
use flotilla_core::sync::OperationPhase;

/// The report of the rollout `decision` describes, from `applications`' operations; `None`
/// before any of them started.
#[must_use]
pub fn live_report(
    strategy: &str,
    decision: &RolloutDecision,
    applications: &[Application],
    now: Timestamp,
) -> Option<Report> {
    let operation = |app: &Application| app.status.as_ref()?.operation_state.clone();
    let origin = applications
        .iter()
        .filter_map(|app| operation(app)?.started_at.map(|t| t.0))
        .min()?;
    // Milliseconds to seconds: exact for any span a rollout takes.
    let offset =
        |time: Timestamp| (time.as_millisecond() - origin.as_millisecond()).max(0) as f64 / 1000.0;
    let step_of = |name: &str| {
        decision
            .steps
            .iter()
            .find(|(_, names)| names.iter().any(|n| n == name))
            .map(|(step, _)| *step)
    };
    let mut reports: Vec<AppReport> = applications
        .iter()
        .map(|app| {
            let name = app.metadata.name.clone().unwrap_or_default();
            let operation = operation(app);
            let end = operation
                .as_ref()
                .and_then(|op| op.finished_at.as_ref())
                .map(|t| offset(t.0));
            let running_until = end.or_else(|| operation.as_ref().map(|_| offset(now)));
            let destination = &app.spec.destination;
            AppReport {
                step: step_of(&name),
                name,
                destination: destination
                    .name
                    .clone()
                    .or_else(|| destination.server.clone())
                    .unwrap_or_default(),
                result: operation
                    .as_ref()
                    .map_or("NotSynced".to_owned(), |op| format!("{:?}", op.phase)),
                start: operation
                    .as_ref()
                    .and_then(|op| op.started_at.as_ref())
                    .map(|t| offset(t.0)),
                end,
                healthy: None,
                message: operation
                    .as_ref()
                    .map(|op| op.message.clone())
                    .unwrap_or_default(),
                rollback: None,
                segments: operation
                    .map(|op| segments(&op.resources, running_until, &offset))
                    .unwrap_or_default(),
            }
        })
        .collect();
    reports.sort_by(|a, b| {
        (a.step.is_none(), a.step, &a.name).cmp(&(b.step.is_none(), b.step, &b.name))
    });
    let steps = step_times(Some(decision), &reports);
    let failed = |result: &str| {
        [OperationPhase::Failed, OperationPhase::Terminated]
            .iter()
            .any(|phase| result == format!("{phase:?}"))
    };
    // Live, a rollout that neither failed nor completed has work left.
    let ending = if reports.iter().any(|a| failed(&a.result)) {
        Ending::Failed
    } else if reports.iter().all(|a| a.result == "Succeeded") {
        Ending::Complete
    } else {
        Ending::InProgress
    };
    Some(Report {
        strategy: strategy.to_owned(),
        ending,
        total_seconds: offset(now),
        critical_path: critical_path(&steps, &reports),
        blocked: Vec::new(),
        step_waits: Vec::new(),
        condition: None,
        steps,
        applications: reports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::rollout_view::current_rollout;
    use crate::web::test_fixtures::{APPSET, snapshot};

    #[test]
    fn a_running_operation_is_drawn_by_phase_and_wave_up_to_now() {
        let snapshot = snapshot();
        let appset = snapshot
            .appset(APPSET)
            .expect("the fixture's ApplicationSet");
        let applications: Vec<Application> = snapshot.generated_by(APPSET).cloned().collect();
        let (_, decision) =
            current_rollout(appset, &applications, snapshot.now, &snapshot.projects)
                .expect("a RollingSync");
        let report = live_report("RollingSync", &decision, &applications, snapshot.now)
            .expect("an operation started");
        assert_eq!(report.ending, Ending::InProgress);
        // Started at 00:00:00, now is 00:01:00.
        assert!((report.total_seconds - 60.0).abs() < f64::EPSILON);
        let staging = report
            .applications
            .iter()
            .find(|app| app.name == "shop-staging")
            .expect("the staging Application");
        assert_eq!(staging.step, Some(2));
        assert_eq!(staging.result, "Running");
        let labels: Vec<&str> = staging.segments.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["PreSync wave -1", "wave 0"]);
    }
}
