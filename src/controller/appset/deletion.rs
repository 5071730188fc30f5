//! A deleted ApplicationSet's Applications: with `strategy.deletionOrder: Reverse` they are
//! deleted step by step in reverse RollingSync step order ([`reverse_deletion_step`] decides
//! from the owned Applications listed now), the ApplicationSet held by its finalizer meanwhile;
//! otherwise (and once the last step is gone) the finalizer goes and garbage collection takes
//! what is left, as before. The finalizer is added while a live ApplicationSet asks for the
//! reverse order ([`ensure_finalizer`]), as Argo CD's controller adds its own. While the
//! Applications go step by step, `status.deletion` says which step is being deleted and what
//! is left ([`deletion_progress`]).

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::apply::delete_named;
use super::observe::observe;
use super::{AppSetContext, AppSetError};
use flotilla_core::api::application_set_status::DeletionProgress;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::ownership::RESOURCES_FINALIZER;
use flotilla_core::controller::event_reason::EventReason;
use flotilla_core::rollout::RolloutConfig;
use flotilla_core::rollout::reverse_deletion::{
    OwnedApplication, ReverseDeletionStep, deletes_in_reverse, deletion_progress,
    reverse_deletion_step,
};

/// Finalizers on an ApplicationSet that hold it until its Applications are deleted: Flotilla's,
/// and Argo CD's (which Argo CD's ApplicationSets may carry), both removed by the controller.
pub const APPSET_FINALIZERS: [&str; 2] = [
    RESOURCES_FINALIZER,
    "resources-finalizer.argocd.argoproj.io",
];

/// How soon a deletion in progress is looked at again when no Application changes meanwhile
/// (each Application's change or disappearance reconciles the ApplicationSet at once).
const DELETION_POLL: Duration = Duration::from_secs(5);

/// Adds [`RESOURCES_FINALIZER`] to a live ApplicationSet that asks for the reverse deletion
/// order and holds none of [`APPSET_FINALIZERS`].
///
/// # Errors
/// The write failed (a conflict included: the next reconcile reads it again).
pub async fn ensure_finalizer(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
) -> Result<(), AppSetError> {
    let held = held(appset);
    if held || !deletes_in_reverse(appset.spec.strategy.as_ref()) {
        return Ok(());
    }
    let mut finalizers = appset.finalizers().to_vec();
    finalizers.push(RESOURCES_FINALIZER.to_owned());
    // Without its resourceVersion: status writes move it often, and nobody else adds this one.
    write_finalizers(ctx, appset, &finalizers, None).await
}

/// One step of a deleted ApplicationSet's deletion.
///
/// # Errors
/// Listing or deleting its Applications, or removing its finalizer, failed.
pub async fn delete_applications(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
) -> Result<Action, AppSetError> {
    let held = held(appset);
    if !held {
        // Garbage collection removes the owned Applications; regenerating them would race it.
        return Ok(Action::await_change());
    }
    let Some(config) = reverse_order(ctx, appset).await else {
        return release(ctx, appset).await;
    };
    let owned = observe(ctx, appset).await?;
    let listed: Vec<OwnedApplication<'_>> = owned
        .iter()
        .map(|app| OwnedApplication {
            name: app.metadata.name.as_deref().unwrap_or_default(),
            labels: app.metadata.labels.as_ref().unwrap_or(&EMPTY),
            deleting: app.metadata.deletion_timestamp.is_some(),
        })
        .collect();
    let step = match reverse_deletion_step(&config, &listed) {
        Ok(step) => {
            let progress = deletion_progress(&config, &listed).ok().flatten();
            record_progress(ctx, appset, progress).await?;
            step
        }
        Err(error) => {
            let note = format!(
                "deletionOrder Reverse cannot order the Applications ({error}); deleting every Application at once"
            );
            warn(ctx, appset, note).await;
            return release(ctx, appset).await;
        }
    };
    match step {
        ReverseDeletionStep::Done => release(ctx, appset).await,
        ReverseDeletionStep::Wait { .. } => Ok(Action::requeue(DELETION_POLL)),
        ReverseDeletionStep::Delete {
            group,
            applications,
        } => {
            let note = format!(
                "deleting {} in reverse order: {}",
                group.describe(&config),
                applications.join(", ")
            );
            announce_step(ctx, appset, note).await;
            let api: Api<Application> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
            delete_named(&api, &applications).await?;
            Ok(Action::requeue(DELETION_POLL))
        }
    }
}

/// Writes `progress` as `status.deletion` when it changed (an ApplicationSet already gone is
/// fine).
///
/// # Errors
/// The write failed.
async fn record_progress(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    progress: Option<DeletionProgress>,
) -> Result<(), AppSetError> {
    if appset.status.as_ref().and_then(|s| s.deletion.as_ref()) == progress.as_ref() {
        return Ok(());
    }
    // Every field written: a merge patch would keep a field the new progress leaves out.
    let patch = json!({"status": {"deletion": progress.map(|p| json!({
        "steps": p.steps, "current": p.current, "remaining": p.remaining
    }))}});
    merge_patch(ctx, appset, Some("status"), patch)
        .await
        .map_err(|error| AppSetError::Status {
            appset: appset.name_any(),
            error: error.into(),
        })
}

/// Merge-patches `appset` (its `subresource`, if any); an ApplicationSet already gone is fine.
async fn merge_patch(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    subresource: Option<&str>,
    patch: serde_json::Value,
) -> Result<(), kube::Error> {
    let api: Api<ApplicationSet> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let (name, params, patch) = (
        appset.name_any(),
        PatchParams::default(),
        Patch::Merge(patch),
    );
    let sent = match subresource {
        Some(subresource) => {
            api.patch_subresource(subresource, &name, &params, &patch)
                .await
        }
        None => api.patch(&name, &params, &patch).await,
    };
    match sent {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Whether one of [`APPSET_FINALIZERS`] holds `appset`.
fn held(appset: &ApplicationSet) -> bool {
    appset
        .finalizers()
        .iter()
        .any(|f| APPSET_FINALIZERS.contains(&f.as_str()))
}

/// No labels.
pub(super) static EMPTY: std::collections::BTreeMap<String, String> =
    std::collections::BTreeMap::new();

/// The steps a reverse-order deletion of `appset` follows, `None` when its Applications go all
/// at once (the default, or a strategy that cannot be followed any more: said by a Warning).
async fn reverse_order(ctx: &AppSetContext, appset: &ApplicationSet) -> Option<RolloutConfig> {
    let strategy = appset.spec.strategy.as_ref()?;
    if !deletes_in_reverse(Some(strategy)) {
        return None;
    }
    match RolloutConfig::from_strategy(strategy) {
        Ok(config) => Some(config),
        Err(error) => {
            let note = format!(
                "deletionOrder Reverse cannot be followed ({error}); deleting every Application at once"
            );
            warn(ctx, appset, note).await;
            None
        }
    }
}

/// The `DeletionStepStarted` Event on `appset` saying which step goes now, and the log line.
pub(super) async fn announce_step(ctx: &AppSetContext, appset: &ApplicationSet, note: String) {
    tracing::info!(appset = %appset.name_any(), "{note}");
    ctx.events
        .publish(
            &appset.object_ref(&()),
            EventReason::DeletionStepStarted,
            note,
        )
        .await;
}

/// A Warning Event on `appset`, and the log line.
pub(super) async fn warn(ctx: &AppSetContext, appset: &ApplicationSet, note: String) {
    tracing::warn!(appset = %appset.name_any(), "{note}");
    ctx.events
        .publish(&appset.object_ref(&()), EventReason::DeletionError, note)
        .await;
}

/// Removes [`APPSET_FINALIZERS`] from a deleted ApplicationSet: the API server then deletes it,
/// and garbage collection whatever Applications are left.
async fn release(ctx: &AppSetContext, appset: &ApplicationSet) -> Result<Action, AppSetError> {
    let kept: Vec<String> = appset
        .finalizers()
        .iter()
        .filter(|f| !APPSET_FINALIZERS.contains(&f.as_str()))
        .cloned()
        .collect();
    write_finalizers(ctx, appset, &kept, appset.resource_version()).await?;
    tracing::info!(appset = %appset.name_any(), "Applications deleted; finalizer removed");
    Ok(Action::await_change())
}

/// Writes `finalizers` on `appset` (guarded by `resource_version` when given: the write fails
/// on a change since); an ApplicationSet already gone is fine.
async fn write_finalizers(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    finalizers: &[String],
    resource_version: Option<String>,
) -> Result<(), AppSetError> {
    let patch = match resource_version {
        Some(version) => {
            json!({"metadata": {"resourceVersion": version, "finalizers": finalizers}})
        }
        None => json!({"metadata": {"finalizers": finalizers}}),
    };
    merge_patch(ctx, appset, None, patch)
        .await
        .map_err(|error| AppSetError::Finalizer {
            appset: appset.name_any(),
            error: error.into(),
        })
}
