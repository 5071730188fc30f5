//! An ApplicationSet's RollingSync rollout paused, resumed or promoted: the merge patches
//! `flotilla rollout pause|resume|promote` and the web view's Pause, Resume and Promote write.
//! Pausing sets `spec.strategy.paused` (the controller then promotes nothing new; syncs already
//! running finish); promoting sets the `flotilla.dev/promote` annotation to the step's number,
//! which the controller records in `status.rolloutSteps` and removes.

use kube::Api;
use serde_json::json;

use super::error::ActionError;
use super::object::{patch, read};
use flotilla_core::api::ApplicationSet;
use flotilla_core::api::application_set::PROMOTE_ANNOTATION;
use flotilla_core::controller::appset::rollout_input::rolling_sync;

/// Pauses (`paused`) or resumes the rollout of the ApplicationSet `name`; returns what was
/// done, for people (nothing is written when it already is so).
///
/// # Errors
/// The ApplicationSet cannot be read, does not use RollingSync, or cannot be patched.
pub async fn set_paused(
    api: &Api<ApplicationSet>,
    name: &str,
    paused: bool,
) -> Result<String, ActionError> {
    let appset = read(api, name).await?;
    let namespace = api.namespace().unwrap_or_default();
    let strategy = rolling_sync(&appset).ok_or_else(|| not_rolling(namespace, name))?;
    let verb = if paused { "paused" } else { "resumed" };
    if strategy.paused == paused {
        return Ok(format!("rollout of {namespace}/{name} already {verb}"));
    }
    patch(
        api,
        name,
        &json!({"spec": {"strategy": {"paused": paused}}}),
    )
    .await?;
    Ok(format!("rollout of {namespace}/{name} {verb}"))
}

/// Approves `step` (1-based) of the ApplicationSet `name`, or without one the step that waits
/// for approval now; returns what was done, for people.
///
/// # Errors
/// The ApplicationSet cannot be read or does not use RollingSync, `step` names no step, no step
/// waits for approval (without `step`), or the patch fails.
pub async fn promote(
    api: &Api<ApplicationSet>,
    name: &str,
    step: Option<usize>,
) -> Result<String, ActionError> {
    let appset = read(api, name).await?;
    let namespace = api.namespace().unwrap_or_default();
    let strategy = rolling_sync(&appset).ok_or_else(|| not_rolling(namespace, name))?;
    let steps = strategy.rolling_sync.as_ref().map_or(0, |r| r.steps.len());
    let step = match step {
        Some(step) if (1..=steps).contains(&step) => step,
        Some(step) => {
            return Err(ActionError::Refused(format!(
                "step {step}: ApplicationSet {namespace}/{name} has {steps} step(s), numbered from 1"
            )));
        }
        None => waiting_step(&appset).ok_or_else(|| {
            ActionError::Refused(format!(
                "no step of ApplicationSet {namespace}/{name} waits for approval (name a step to approve one in advance)"
            ))
        })?,
    };
    patch(
        api,
        name,
        &json!({"metadata": {"annotations": {PROMOTE_ANNOTATION: step.to_string()}}}),
    )
    .await?;
    Ok(format!(
        "step {step} of {namespace}/{name} approved; the controller promotes it at its next pass"
    ))
}

/// The step (1-based) that waits for approval in the ApplicationSet's status.
#[must_use]
pub fn waiting_step(appset: &ApplicationSet) -> Option<usize> {
    appset
        .status
        .as_ref()?
        .rollout_steps
        .iter()
        .find(|record| record.waiting_for_approval_since.is_some() && record.approved_at.is_none())
        .and_then(|record| usize::try_from(record.step).ok())
}

/// The refusal of a rollout action on an ApplicationSet without RollingSync.
fn not_rolling(namespace: &str, name: &str) -> ActionError {
    ActionError::Refused(format!(
        "ApplicationSet {namespace}/{name} does not use RollingSync"
    ))
}
