//! Generate, render, validate and plan: the Applications an ApplicationSet makes now
//! ([`Planned`]), all or nothing, and the writes that make them so.

use std::sync::Arc;

use kube::ResourceExt;

use super::FIELD_MANAGER;
use super::context::AppSetContext;
use super::error::AppSetError;
use crate::cluster::generator_inputs::live_inventory::read_inventory;
use crate::cluster::generator_inputs::namespace_objects::KubeNamespaceObjects;
use crate::controller::http_clients::plugin_client::{HttpPlugins, PLUGIN_TIMEOUT};
use crate::controller::http_clients::scm_client::{HttpScm, SCM_TIMEOUT};
use crate::controller::runtime::cpu_time;
use crate::render::admission::{RefusedApplication, admitted};
use crate::render::{Sources, render_application_set};
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::ownership::{
    APPLICATION_CONTROLLER_PRUNES, owned, owner_reference, resources_finalizer,
};
use flotilla_core::controller::appset::plan::{KeptFields, Plan, ignored_fields, plan};
use flotilla_generators::generator::NamespaceSources;

/// The generated Applications (rendered, admitted by their projects and owned) and the writes
/// that make them so.
pub struct Planned {
    pub desired: Vec<Application>,
    pub plan: Plan,
    /// Generated Applications their projects refuse: neither written nor deleted.
    pub refused: Vec<RefusedApplication>,
}

/// Generates and renders the Applications (all or nothing), checks them and decides the writes.
pub(super) async fn generate_render_validate_plan(
    ctx: &AppSetContext,
    appset: &Arc<ApplicationSet>,
    existing: &[Arc<Application>],
) -> Result<Planned, AppSetError> {
    let name = appset.name_any();
    let inventory = read_inventory(&ctx.client, &ctx.control_namespace).await?;
    let projects = ctx.projects.current().await?;
    let clusters = inventory.registrations().to_vec();
    let repos = Arc::clone(&ctx.repos);
    let rendering = Arc::clone(appset);
    let runtime = tokio::runtime::Handle::current();
    let objects = KubeNamespaceObjects::new(
        ctx.client.clone(),
        ctx.control_namespace.clone(),
        runtime.clone(),
        Arc::clone(&ctx.decision_watches),
    );
    let plugins = HttpPlugins::new(runtime.clone(), PLUGIN_TIMEOUT);
    let scm = HttpScm::new(runtime, SCM_TIMEOUT);
    let appset_name = name.clone();
    // Git generators run the `git` CLI, plugin and clusterDecisionResource generators block on
    // API and HTTP calls: keep them off the async workers.
    let rendered = cpu_time::spawn_blocking(move || {
        let sources = Sources {
            clusters: &inventory,
            git: &*repos,
            namespace: NamespaceSources {
                appset: &appset_name,
                objects: &objects,
                plugins: &plugins,
                scm: &scm,
            },
        };
        render_application_set(&rendering, sources)
    })
    .await
    .map_err(|error| AppSetError::RenderTask {
        appset: name.clone(),
        error,
    })??;
    let owner = owner_reference(appset).ok_or(AppSetError::Plan {
        appset: name.clone(),
    })?;
    let policy = appset.spec.sync_policy.clone().unwrap_or_default();
    let finalizer = resources_finalizer(
        policy.preserve_resources_on_deletion,
        APPLICATION_CONTROLLER_PRUNES,
    );
    let (rendered, refused) = admitted(rendered, &projects, &clusters);
    let desired: Vec<Application> = rendered
        .into_iter()
        .map(|app| owned(app, &owner, finalizer))
        .collect();
    // A refused Application that exists stays as it is (its own controller refuses to sync it).
    let existing: Vec<&Application> = existing
        .iter()
        .map(|app| &**app)
        .filter(|app| !refused.iter().any(|r| r.name == app.name_any()))
        .collect();
    let ignored =
        ignored_fields(&appset.spec, &ctx.jq_filters).map_err(|error| AppSetError::Spec {
            appset: name.clone(),
            error,
        })?;
    let preserved = appset.spec.preserved_fields.clone().unwrap_or_default();
    let plan = plan(
        &desired,
        &existing,
        policy.applications_sync,
        FIELD_MANAGER,
        KeptFields {
            ignored: &ignored,
            preserved: &preserved,
        },
    );
    Ok(Planned {
        desired,
        plan,
        refused,
    })
}
