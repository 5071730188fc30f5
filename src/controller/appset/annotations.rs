//! Request annotations removed once carried out (`flotilla.dev/refresh`, `flotilla.dev/promote`).

use super::ARGO_CD_REFRESH_ANNOTATION;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};

use super::context::AppSetContext;
use super::error::AppSetError;
use flotilla_core::api::ApplicationSet;
use flotilla_core::api::REFRESH_ANNOTATION;

/// Removes the refresh annotations once a regeneration has run.
pub(super) async fn clear_refresh(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
) -> Result<(), AppSetError> {
    for key in [REFRESH_ANNOTATION, ARGO_CD_REFRESH_ANNOTATION] {
        if appset.annotations().contains_key(key) {
            clear_annotation(ctx, appset, key).await?;
        }
    }
    Ok(())
}

/// Removes the annotation `key` of `appset` (a request it has carried out).
pub(super) async fn clear_annotation(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    key: &'static str,
) -> Result<(), AppSetError> {
    let api: Api<ApplicationSet> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let patch = serde_json::json!({"metadata": {"annotations": {key: null}}});
    api.patch(
        &appset.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await
    .map(drop)
    .map_err(|error| AppSetError::Refresh {
        appset: appset.name_any(),
        annotation: key,
        error: error.into(),
    })
}
