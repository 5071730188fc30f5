//! `flotilla rollout pause|resume APPSET`: sets `spec.strategy.paused`. While paused the
//! controller promotes nothing new; syncs already running finish.

use anyhow::Context as _;
use kube::Api;
use kube::api::{Patch, PatchParams};

use super::AppSetArgs;
use crate::api::ApplicationSet;
use crate::cluster::api_error::ApiError;
use crate::controller::appset::rollout_input::rolling_sync;

/// Pauses (`paused`) or resumes the rollout of `target`; returns what was done, for people.
///
/// # Errors
/// The ApplicationSet does not exist, does not use RollingSync, or cannot be patched.
pub async fn set_paused(target: &AppSetArgs, paused: bool) -> anyhow::Result<String> {
    let (client, namespace) = target.connect().await?;
    let appset = target.get(&client, &namespace).await?;
    let name = &target.appset;
    let strategy = rolling_sync(&appset)
        .with_context(|| format!("ApplicationSet {namespace}/{name} does not use RollingSync"))?;
    let verb = if paused { "paused" } else { "resumed" };
    if strategy.paused == paused {
        return Ok(format!("rollout of {namespace}/{name} already {verb}"));
    }
    let patch = serde_json::json!({"spec": {"strategy": {"paused": paused}}});
    Api::<ApplicationSet>::namespaced(client, &namespace)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(ApiError::from)
        .with_context(|| format!("patching ApplicationSet {namespace}/{name}"))?;
    Ok(format!("rollout of {namespace}/{name} {verb}"))
}
