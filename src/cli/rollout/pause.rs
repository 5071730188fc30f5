//! `flotilla rollout pause|resume APPSET`: sets `spec.strategy.paused`
//! ([`crate::actions::rollout::set_paused`]). While paused the controller promotes nothing new;
//! syncs already running finish.

use kube::Api;

use super::AppSetArgs;
use crate::actions::rollout::set_paused as patch_paused;

/// Pauses (`paused`) or resumes the rollout of `target`; returns what was done, for people.
///
/// # Errors
/// The ApplicationSet does not exist, does not use RollingSync, or cannot be patched.
pub async fn set_paused(target: &AppSetArgs, paused: bool) -> anyhow::Result<String> {
    let (client, namespace) = target.connect().await?;
    Ok(patch_paused(&Api::namespaced(client, &namespace), &target.appset, paused).await?)
}
