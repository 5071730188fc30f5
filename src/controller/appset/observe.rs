//! The Applications an ApplicationSet owns: from the watch's store during a reconcile, or listed
//! from the API server (`flotilla rollout explain`, deletion).

use std::sync::Arc;

use kube::api::ListParams;
use kube::runtime::reflector::Store;
use kube::{Api, ResourceExt};

use super::context::AppSetContext;
use super::error::AppSetError;
use flotilla_core::api::{APPLICATION_SET_LABEL, Application, ApplicationSet};
use flotilla_core::controller::appset::ownership::is_owned_by;

/// The Applications `appset` owns (its label and its controller owner reference) in the
/// watch's store, shared with it rather than copied: a fleet's Applications are held once.
pub(super) fn owned_now(
    applications: &Store<Application>,
    appset: &ApplicationSet,
) -> Vec<Arc<Application>> {
    let name = appset.name_any();
    let uid = appset.uid().unwrap_or_default();
    applications
        .state()
        .into_iter()
        .filter(|app| {
            app.labels().get(APPLICATION_SET_LABEL) == Some(&name) && is_owned_by(app, &uid)
        })
        .collect()
}

/// The Applications this ApplicationSet owns now (label and controller owner reference), listed
/// from the API server.
pub(super) async fn observe(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
) -> Result<Vec<Arc<Application>>, AppSetError> {
    let name = appset.name_any();
    let api: Api<Application> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let selector = format!("{APPLICATION_SET_LABEL}={name}");
    let listed = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|error| AppSetError::Observe {
            appset: name.clone(),
            error: error.into(),
        })?;
    let uid = appset.uid().unwrap_or_default();
    Ok(listed
        .items
        .into_iter()
        .filter(|app| is_owned_by(app, &uid))
        .map(Arc::new)
        .collect())
}
