//! Flotilla's rollout metrics, read from the ApplicationSets' status when scraped (the rollout
//! keeps its state there, so these are what a restarted controller resumes from): the
//! Applications of each RollingSync step by rollout state, the steps by where they stand
//! (waiting for approval, baking, analysing, complete, failed), the steps' analyses with their
//! failed attempts, and rollbacks. deploy/grafana/flotilla-rollouts.json charts them.

use std::fmt;
use std::sync::Arc;

use flotilla_core::api::ApplicationSet;
use flotilla_core::api::application_set_status::RolloutStepStatus;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::observed::encode;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApplicationLabels {
    namespace: String,
    appset: String,
    step: String,
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    namespace: String,
    appset: String,
    step: String,
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RollbackLabels {
    namespace: String,
    appset: String,
    failed_step: String,
    state: String,
}

/// Where a step stands, from its status.
fn step_state(step: &RolloutStepStatus) -> &'static str {
    match step {
        RolloutStepStatus {
            failed_at: Some(_), ..
        } => "failed",
        RolloutStepStatus {
            baked_at: Some(_), ..
        } => "complete",
        RolloutStepStatus {
            analysis: Some(analysis),
            ..
        } if analysis.passed_at.is_none() => "analysing",
        RolloutStepStatus {
            bake_started_at: Some(_),
            ..
        } => "baking",
        RolloutStepStatus {
            waiting_for_approval_since: Some(_),
            ..
        } => "waiting_for_approval",
        _ => "progressing",
    }
}

/// Writes the rollout families of `appsets`.
///
/// # Errors
/// Only when writing the text fails.
pub fn encode_rollouts(e: &mut DescriptorEncoder, appsets: &[Arc<ApplicationSet>]) -> fmt::Result {
    let applications: Family<ApplicationLabels, Gauge> = Family::default();
    let steps: Family<StepLabels, Gauge> = Family::default();
    let analyses: Family<StepLabels, Gauge> = Family::default();
    let rollbacks: Family<RollbackLabels, Gauge> = Family::default();
    for appset in appsets {
        let Some(status) = appset.status.as_ref() else {
            continue;
        };
        let namespace = appset.metadata.namespace.clone().unwrap_or_default();
        let appset_name = appset.metadata.name.clone().unwrap_or_default();
        for app in &status.application_status {
            applications
                .get_or_create(&ApplicationLabels {
                    namespace: namespace.clone(),
                    appset: appset_name.clone(),
                    step: app.step.clone(),
                    state: app.status.as_str().to_owned(),
                })
                .inc();
        }
        for step in &status.rollout_steps {
            let labels = |state: &str| StepLabels {
                namespace: namespace.clone(),
                appset: appset_name.clone(),
                step: step.step.to_string(),
                state: state.to_owned(),
            };
            steps.get_or_create(&labels(step_state(step))).set(1);
            if let Some(analysis) = &step.analysis {
                let state = if analysis.passed_at.is_some() {
                    "passed"
                } else if step.failed_at.is_some() {
                    "failed"
                } else {
                    "running"
                };
                analyses
                    .get_or_create(&labels(state))
                    .set(i64::from(analysis.failures));
            }
        }
        if let Some(rollback) = &status.rollout_rollback {
            let state = if rollback.completed_at.is_some() {
                "complete"
            } else {
                "running"
            };
            rollbacks
                .get_or_create(&RollbackLabels {
                    namespace: namespace.clone(),
                    appset: appset_name.clone(),
                    failed_step: rollback.failed_step.to_string(),
                    state: state.to_owned(),
                })
                .set(1);
        }
    }
    encode(
        e,
        (
            "flotilla_rollout_applications",
            "Applications of RollingSync steps by step and rollout state",
        ),
        &applications,
    )?;
    encode(
        e,
        (
            "flotilla_rollout_steps",
            "RollingSync steps by state (waiting_for_approval, progressing, baking, analysing, complete, failed), 1 each",
        ),
        &steps,
    )?;
    encode(
        e,
        (
            "flotilla_rollout_analyses",
            "Step analyses by state (running, passed, failed); the value is the failed attempts",
        ),
        &analyses,
    )?;
    encode(
        e,
        (
            "flotilla_rollout_rollbacks",
            "Rollbacks of failed steps by state (running, complete), 1 each",
        ),
        &rollbacks,
    )
}
