//! Rendering a rollout decision for people (`flotilla rollout explain`): per step its
//! Applications with rollout status, health, sync (with the object and field that keep an
//! OutOfSync one from completing) and revision, the step's budget, and what
//! happens next and why; or as JSON (`-o json`) for tools.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::decision::RolloutDecision;
use super::input::{ApplicationState, ObservedStatus, RolloutInput};
use crate::api::application_set::StrategyType;
use crate::api::application_set_status::{
    ApplicationSetApplicationStatus, ConditionStatus, SyncStatusCode,
};
use crate::table::Table;

/// The document of `explain -o json` (and `-o yaml`): the ApplicationSet name and the decision
/// (`applicationSet`, `steps`, `unselected`, `appsToSync`, `applicationStatus`,
/// `syncTriggered`, `conditions` and `stepReports`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainDocument<'a> {
    pub application_set: &'a str,
    #[serde(flatten)]
    pub decision: &'a RolloutDecision,
}

/// The decision as text, one section per step.
#[must_use]
pub fn explain_text(appset: &str, input: &RolloutInput, decision: &RolloutDecision) -> String {
    let apps: HashMap<&str, &ApplicationState> = input
        .applications
        .iter()
        .map(|app| (app.name.as_str(), app))
        .collect();
    let entry = |name: &str| {
        decision
            .application_status
            .binary_search_by(|e| e.application.as_str().cmp(name))
            .ok()
            .map(|i| &decision.application_status[i])
    };
    let mut out = format!("ApplicationSet {appset} at {}\n", input.now);
    if input.strategy.type_ != StrategyType::RollingSync {
        let _ = writeln!(
            out,
            "strategy.type is {:?}: no rollout (each Application syncs by its own syncPolicy; \
             status.applicationStatus is cleared)",
            input.strategy.type_
        );
    }
    for condition in &decision.conditions {
        let status = match condition.status {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        };
        let _ = writeln!(
            out,
            "{:?}={status} ({}): {}",
            condition.type_, condition.reason, condition.message
        );
    }
    for report in &decision.step_reports {
        let _ = writeln!(
            out,
            "\n{}: {:?} ({})\n  {}",
            report.title(),
            report.state,
            report.budget(),
            report.next
        );
        let names = decision
            .steps
            .get(&report.step)
            .map_or(&[][..], Vec::as_slice);
        out.push_str(&app_table(names, &apps, &entry));
    }
    if !decision.unselected.is_empty() {
        out.push_str("\nNo step (-1): never synced by the rollout\n");
        out.push_str(&app_table(&decision.unselected, &apps, &entry));
    }
    if !decision.sync_triggered.is_empty() {
        let _ = writeln!(out, "\nSync now: {}", decision.sync_triggered.join(", "));
    }
    out
}

/// The sync status, and when OutOfSync what differs first (`OutOfSync (Deployment shop/web:
/// /spec/replicas; 2 more)`).
fn sync(status: &ObservedStatus) -> String {
    let code = status.sync.as_str();
    match status.differences.as_slice() {
        [first, rest @ ..] if status.sync == SyncStatusCode::OutOfSync => match rest.len() {
            0 => format!("{code} ({first})"),
            more => format!("{code} ({first}; {more} more)"),
        },
        _ => code.to_string(),
    }
}

fn app_table<'a>(
    names: &[String],
    apps: &HashMap<&str, &ApplicationState>,
    entry: &impl Fn(&str) -> Option<&'a ApplicationSetApplicationStatus>,
) -> String {
    if names.is_empty() {
        return String::new();
    }
    let mut table = Table::new(&[
        "APPLICATION",
        "ROLLOUT",
        "HEALTH",
        "SYNC",
        "REVISION",
        "TARGET",
    ]);
    for name in names {
        let Some(app) = apps.get(name.as_str()) else {
            continue;
        };
        let rollout = entry(name).map_or("-", |e| e.status.as_str());
        let health = if app.exists {
            let message = &app.status.health_message;
            if message.is_empty() {
                app.status.health.as_str().to_string()
            } else {
                format!("{} ({message})", app.status.health.as_str())
            }
        } else {
            "not created".to_string()
        };
        table.row(vec![
            name.clone(),
            rollout.to_string(),
            health,
            sync(&app.status),
            app.status.revisions.join(","),
            app.target().join(","),
        ]);
    }
    table
        .render()
        .lines()
        .map(|line| format!("  {line}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_out_of_sync_application_names_what_differs() {
        let status = |sync, differences: &[&str]| ObservedStatus {
            sync,
            differences: differences.iter().map(ToString::to_string).collect(),
            ..ObservedStatus::default()
        };
        let web = "Deployment shop/web: /spec/replicas";
        let cases = [
            (status(SyncStatusCode::Synced, &[]), "Synced"),
            (status(SyncStatusCode::OutOfSync, &[]), "OutOfSync"),
            (
                status(SyncStatusCode::OutOfSync, &[web]),
                "OutOfSync (Deployment shop/web: /spec/replicas)",
            ),
            (
                status(
                    SyncStatusCode::OutOfSync,
                    &[web, "ConfigMap shop/c: missing"],
                ),
                "OutOfSync (Deployment shop/web: /spec/replicas; 1 more)",
            ),
        ];
        for (status, expected) in cases {
            assert_eq!(sync(&status), expected);
        }
    }
}
