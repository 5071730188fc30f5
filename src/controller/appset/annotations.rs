//! Request annotations removed once carried out (`flotilla.dev/refresh`, `flotilla.dev/promote`).

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};

use super::REFRESH_ANNOTATION;
use super::context::AppSetContext;
use super::error::ReconcileError;
use flotilla_core::api::ApplicationSet;

/// Removes the refresh annotation once a regeneration has run.
pub(super) async fn clear_refresh(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
) -> Result<(), ReconcileError> {
    if !appset.annotations().contains_key(REFRESH_ANNOTATION) {
        return Ok(());
    }
    clear_annotation(ctx, appset, REFRESH_ANNOTATION).await
}

/// Removes the annotation `key` of `appset` (a request it has carried out).
pub(super) async fn clear_annotation(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    key: &'static str,
) -> Result<(), ReconcileError> {
    let api: Api<ApplicationSet> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let patch = serde_json::json!({"metadata": {"annotations": {key: null}}});
    api.patch(
        &appset.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await
    .map(drop)
    .map_err(|error| ReconcileError::Refresh {
        appset: appset.name_any(),
        annotation: key,
        error: error.into(),
    })
}
