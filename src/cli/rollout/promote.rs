//! `flotilla rollout promote APPSET [--step N]`: approves a RollingSync step with
//! `approval: manual` by setting the ApplicationSet's `flotilla.dev/promote` annotation to its
//! number (`kubectl annotate appset NAME flotilla.dev/promote=N` does the same). Without
//! `--step`, the step that waits for approval now, as the ApplicationSet's status says; a later
//! step may be approved in advance. The controller records the approval in
//! `status.rolloutSteps` and removes the annotation.

use anyhow::Context as _;
use kube::Api;
use kube::api::{Patch, PatchParams};

use super::AppSetArgs;
use crate::api::ApplicationSet;
use crate::api::application_set::PROMOTE_ANNOTATION;
use crate::cluster::api_error::ApiError;
use crate::controller::appset::rollout_input::rolling_sync;

/// Arguments of `flotilla rollout promote`.
#[derive(Debug, clap::Args)]
pub struct PromoteArgs {
    #[command(flatten)]
    pub target: AppSetArgs,
    /// The step to approve (1-based); default: the step waiting for approval now.
    #[arg(long)]
    pub step: Option<usize>,
}

/// Approves the step; returns what was done, for people.
///
/// # Errors
/// The ApplicationSet does not exist or does not use RollingSync, `--step` names no step, no
/// step waits for approval (without `--step`), or the patch fails.
pub async fn promote(args: &PromoteArgs) -> anyhow::Result<String> {
    let target = &args.target;
    let (client, namespace) = target.connect().await?;
    let appset = target.get(&client, &namespace).await?;
    let name = &target.appset;
    let strategy = rolling_sync(&appset)
        .with_context(|| format!("ApplicationSet {namespace}/{name} does not use RollingSync"))?;
    let steps = strategy.rolling_sync.as_ref().map_or(0, |r| r.steps.len());
    let step = match args.step {
        Some(step) if (1..=steps).contains(&step) => step,
        Some(step) => anyhow::bail!(
            "--step {step}: ApplicationSet {namespace}/{name} has {steps} step(s), numbered from 1"
        ),
        None => waiting_step(&appset).with_context(|| {
            format!(
                "no step of ApplicationSet {namespace}/{name} waits for approval (give --step N to approve one in advance)"
            )
        })?,
    };
    let patch =
        serde_json::json!({"metadata": {"annotations": {PROMOTE_ANNOTATION: step.to_string()}}});
    Api::<ApplicationSet>::namespaced(client, &namespace)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(ApiError::from)
        .with_context(|| format!("patching ApplicationSet {namespace}/{name}"))?;
    Ok(format!(
        "step {step} of {namespace}/{name} approved; the controller promotes it at its next pass"
    ))
}

/// The step that waits for approval in the ApplicationSet's status.
fn waiting_step(appset: &ApplicationSet) -> Option<usize> {
    appset
        .status
        .as_ref()?
        .rollout_steps
        .iter()
        .find(|record| record.waiting_for_approval_since.is_some() && record.approved_at.is_none())
        .and_then(|record| usize::try_from(record.step).ok())
}
