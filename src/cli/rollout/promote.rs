//! `flotilla rollout promote APPSET [--step N|NAME]`: approves a RollingSync step with
//! `approval: manual` by setting the ApplicationSet's `flotilla.dev/promote` annotation to its
//! number (`kubectl annotate appset NAME flotilla.dev/promote=N` does the same). Without
//! `--step`, the step that waits for approval now, as the ApplicationSet's status says; a later
//! step may be approved in advance. The controller records the approval in
//! `status.rolloutSteps` and removes the annotation ([`crate::actions::rollout::promote`]).

use anyhow::Context;
use flotilla_core::api::ApplicationSet;
use kube::Api;

use super::AppSetArgs;
use crate::actions::rollout::promote as approve;

/// Arguments of `flotilla rollout promote`.
#[derive(Debug, clap::Args)]
pub struct PromoteArgs {
    #[command(flatten)]
    pub target: AppSetArgs,
    /// The step to approve: its number (1-based) or its `name`; default: the step waiting for
    /// approval now.
    #[arg(long)]
    pub step: Option<String>,
}

/// Approves the step; returns what was done, for people.
///
/// # Errors
/// The ApplicationSet does not exist or does not use RollingSync, `--step` names no step, no
/// step waits for approval (without `--step`), or the patch fails.
pub async fn promote(args: &PromoteArgs) -> anyhow::Result<String> {
    let target = &args.target;
    let (client, namespace) = target.connect().await?;
    let api = Api::namespaced(client, &namespace);
    let step = match &args.step {
        Some(step) => Some(step_number(&api, &target.appset, step).await?),
        None => None,
    };
    Ok(approve(&api, &target.appset, step).await?)
}

/// The number of the step `step` names: a number as it is, a name looked up in the
/// ApplicationSet's steps.
///
/// # Errors
/// The ApplicationSet cannot be read, or no step has that name.
async fn step_number(api: &Api<ApplicationSet>, appset: &str, step: &str) -> anyhow::Result<usize> {
    if let Ok(number) = step.trim().parse::<usize>() {
        return Ok(number);
    }
    let read = api
        .get(appset)
        .await
        .with_context(|| format!("reading ApplicationSet {appset}"))?;
    let steps = read
        .spec
        .strategy
        .and_then(|s| s.rolling_sync)
        .map(|r| r.steps)
        .unwrap_or_default();
    steps
        .iter()
        .position(|s| s.name.as_deref() == Some(step.trim()))
        .map(|index| index + 1)
        .with_context(|| {
            format!("--step {step:?}: no step of ApplicationSet {appset} has this name")
        })
}
