//! The writes of a plan: created and updated Applications server-side applied, a bounded
//! number at once; the ones no longer generated go by [`super::removal`].

use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};

use super::FIELD_MANAGER;
use super::bounded_writes;
use super::context::AppSetContext;
use super::error::AppSetError;
use flotilla_core::api::Application;
use flotilla_core::controller::appset::plan::Plan;

/// Server-side applies created and updated Applications, a bounded number at once
/// ([`bounded_writes`]).
pub(super) async fn apply(ctx: &AppSetContext, plan: &Plan) -> Result<(), AppSetError> {
    let api: Api<Application> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let (api, params) = (&api, &params);
    // Futures built in a loop, not by a closure (see the sync engine's writes).
    let mut applies = Vec::with_capacity(plan.create.len() + plan.update.len());
    for application in plan.create.iter().chain(&plan.update) {
        applies.push(async move {
            let name = application.name_any();
            api.patch(&name, params, &Patch::Apply(application))
                .await
                .map(drop)
                .map_err(|error| AppSetError::Apply {
                    application: name,
                    error: error.into(),
                })
        });
    }
    bounded_writes::all(applies).await
}

/// Deletes the Applications `names` (background propagation: each Application's own finalizer
/// deletes its resources), a bounded number at once; one already gone is fine.
pub(super) async fn delete_named(
    api: &Api<Application>,
    names: &[String],
) -> Result<(), AppSetError> {
    let mut deletes = Vec::with_capacity(names.len());
    for name in names {
        deletes.push(async move {
            match api.delete(name, &DeleteParams::background()).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
                Err(error) => Err(AppSetError::Delete {
                    application: name.clone(),
                    error: error.into(),
                }),
            }
        });
    }
    bounded_writes::all(deletes).await
}
