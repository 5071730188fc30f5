//! `flotilla rollout promote APPSET [--step N]`: approves a RollingSync step with
//! `approval: manual` by setting the ApplicationSet's `flotilla.dev/promote` annotation to its
//! number (`kubectl annotate appset NAME flotilla.dev/promote=N` does the same). Without
//! `--step`, the step that waits for approval now, as the ApplicationSet's status says; a later
//! step may be approved in advance. The controller records the approval in
//! `status.rolloutSteps` and removes the annotation ([`crate::actions::rollout::promote`]).

use kube::Api;

use super::AppSetArgs;
use crate::actions::rollout::promote as approve;

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
    Ok(approve(
        &Api::namespaced(client, &namespace),
        &target.appset,
        args.step,
    )
    .await?)
}
