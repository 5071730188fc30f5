//! Observing an Application: its project's admission, destination, source at its target revision and live objects, compared; and whether a compare can be skipped (or, while an operation runs, is due).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::Value;

use super::ControllerRun;
use super::context::ApplicationContext;
use super::error::ApplicationError;
use super::start::gate;
use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::customizations::Customizations;
use crate::repo::cache::Manifests;
use crate::source::{SourceOptions, Toolchain};
use crate::sync::application_settings::ignore_differences;
use crate::sync::execute::cluster_api::{ClusterApi, ClusterError};
use crate::sync::load_plan;
use flotilla_core::api::Application;
use flotilla_core::controller::application::compare::{Comparison, compare};
use flotilla_core::controller::application::decide::{NextSync, next_sync};
use flotilla_core::controller::application::freshness::{
    CompareInputs, compare_needed, tracked_fingerprint,
};
use flotilla_core::controller::application::instance::instance_name;
use flotilla_core::manifest::ObjectKey;
use flotilla_core::project::{ClusterIdentity, ProjectScope, Projects, admit};
use flotilla_core::sync::LiveObject;
use flotilla_core::sync::SyncPlan;

/// How many live objects are read at once while comparing.
pub(super) const READ_CONCURRENCY: usize = 8;

/// What observing an Application found.
pub(super) struct Observed {
    pub(super) cluster: Arc<KubeCluster>,
    pub(super) manifests: Manifests,
    pub(super) compared: Compared,
    /// The configured customizations the comparison used, for the sync too.
    pub(super) customizations: Customizations,
    /// The projects and the destination's identity the Application was admitted with.
    pub(super) admitted: Admitted,
}

/// A comparison of an Application with the live objects, and what it read.
pub(super) struct Compared {
    pub(super) comparison: Comparison,
    /// What the comparison read.
    pub(super) inputs: CompareInputs,
    /// The kinds (group, kind) the plan deploys.
    pub(super) kinds: Vec<(String, String)>,
}

/// What an Application's project was judged with: the projects known, both names of its
/// destination cluster and the Application's namespace.
pub(super) struct Admitted {
    pub(super) projects: Projects,
    pub(super) cluster: ClusterIdentity,
    pub(super) namespace: Option<String>,
}

impl Admitted {
    pub(super) fn scope(&self) -> ProjectScope<'_> {
        ProjectScope {
            projects: &self.projects,
            cluster: &self.cluster,
            namespace: self.namespace.as_deref(),
        }
    }
}

/// Whether comparing the Application again would find what its last compare found (Synced)
/// and it has no sync to start: its source resolves to the same commit, and neither it nor the
/// live objects it tracks were written since. Any failure to tell means it is compared.
pub(super) async fn unchanged(run: &ControllerRun, app: &Application) -> bool {
    let ctx = &run.ctx;
    let Some(last) = ctx.last_compare(&app.name_any()) else {
        return false;
    };
    let Some(tracked) = tracked_now(ctx, app, &last.kinds).await else {
        return false;
    };
    let Ok(manifests) = manifests(ctx, app, &app.spec.source.target_revision).await else {
        return false;
    };
    let now = CompareInputs {
        application_version: app.resource_version(),
        revision: manifests.revision,
        tracked,
    };
    if compare_needed(Some(&last), &now) {
        return false;
    }
    let gate = gate(run, app).await;
    next_sync(app, false, now.revision.as_deref(), gate, Timestamp::now()) == NextSync::Idle
}

/// Whether the objects an Application tracks changed since its last compare (or there was
/// none): while its operation runs, only then is it compared again. Any failure to tell means
/// it is compared (and the compare reports the failure).
pub(super) async fn changed_during_operation(run: &ControllerRun, app: &Application) -> bool {
    let ctx = &run.ctx;
    let Some(last) = ctx.last_compare(&app.name_any()) else {
        return true;
    };
    tracked_now(ctx, app, &last.kinds).await != Some(last.inputs.tracked)
}

/// The [`tracked_fingerprint`] of the objects the Application tracks now (`kinds`: those its
/// plan deploys), or None when they cannot be read.
async fn tracked_now(
    ctx: &ApplicationContext,
    app: &Application,
    kinds: &[(String, String)],
) -> Option<u64> {
    let cluster = destination(ctx, app).await.ok()?;
    let tracked = cluster.tracked_by(&instance_name(app), kinds).await.ok()?;
    Some(tracked_fingerprint(&tracked))
}

/// The Application's project admits it (see [`admit`]): it exists and permits the
/// repository and the destination.
pub(super) async fn admit_application(
    ctx: &ApplicationContext,
    app: &Application,
) -> Result<Admitted, ApplicationError> {
    let projects = ctx
        .projects
        .current()
        .await
        .map_err(|error| ApplicationError::Projects {
            app: app.name_any(),
            error,
        })?;
    let cluster = ctx
        .clusters
        .identity(&app.spec.destination)
        .await
        .map_err(|error| ApplicationError::Destination {
            app: app.name_any(),
            error,
        })?;
    let admitted = Admitted {
        projects,
        cluster,
        namespace: app.namespace(),
    };
    admit(&app.spec, admitted.scope()).map_err(|refusal| ApplicationError::Project {
        app: app.name_any(),
        refusal,
    })?;
    Ok(admitted)
}

/// Resolves the destination, reads the source at its target revision and the live objects, and
/// compares them.
pub(super) async fn observe(
    ctx: &ApplicationContext,
    app: &Application,
    customizations: Customizations,
    admitted: Admitted,
) -> Result<Observed, ApplicationError> {
    let name = app.name_any();
    let cluster = destination(ctx, app).await?;
    let manifests = manifests(ctx, app, &app.spec.source.target_revision).await?;
    let source = SourceOptions::of_application(app, manifests.revision.clone(), &manifests.sources)
        .for_cluster(&cluster.capabilities());
    let plan = plan_off_workers(
        ctx.repos.toolchain(),
        &name,
        manifests.root.clone(),
        source,
        app.spec.destination.namespace.clone(),
        "compare".to_owned(),
    )
    .await?;
    let compared = compare_live(
        app,
        &cluster,
        &plan,
        manifests.revision.as_deref(),
        &customizations,
    )
    .await?;
    Ok(Observed {
        cluster,
        manifests,
        compared,
        customizations,
        admitted,
    })
}

/// The plan of Application `name` from its manifests at `root` generated by `toolchain` with
/// `options` for
/// the destination `namespace`, under `operation_id`; generated off the async workers (helm or
/// kustomize may run).
///
/// # Errors
/// The generating task failed, or the manifests do not load.
pub(super) async fn plan_off_workers(
    toolchain: &Arc<Toolchain>,
    name: &str,
    root: PathBuf,
    options: SourceOptions,
    namespace: Option<String>,
    operation_id: String,
) -> Result<SyncPlan, ApplicationError> {
    let toolchain = Arc::clone(toolchain);
    tokio::task::spawn_blocking(move || {
        load_plan(
            &toolchain,
            &root,
            &options,
            namespace.as_deref(),
            &operation_id,
        )
    })
    .await
    .map_err(|error| ApplicationError::SourceTask {
        app: name.to_owned(),
        error,
    })?
    .map_err(|error| ApplicationError::Plan {
        app: name.to_owned(),
        error,
    })
}

/// Reads the live objects of `plan` (the source's objects at `revision`) and those the
/// Application tracks from `cluster`, and compares them.
pub(super) async fn compare_live(
    app: &Application,
    cluster: &KubeCluster,
    plan: &SyncPlan,
    revision: Option<&str>,
    customizations: &Customizations,
) -> Result<Compared, ApplicationError> {
    let name = app.name_any();
    let observe_error = |what: &str, error| ApplicationError::Observe {
        app: name.clone(),
        what: what.to_owned(),
        error,
    };
    // The tracked objects are read (and fingerprinted) before the objects judged: an object
    // changing between the two reads then changes the fingerprint the next reconcile sees, and
    // the Application is compared again. Read the other way round, a change landing in between
    // would be in the fingerprint but not in the judgement (a Deployment judged Progressing
    // from the older read), and the compare would never be made again.
    let kinds: Vec<(String, String)> = plan
        .tasks
        .iter()
        .map(|task| (task.key.group.clone(), task.key.kind.clone()))
        .collect();
    let tracked = tracked_objects(cluster, app, &kinds).await?;
    let inputs = CompareInputs {
        application_version: app.resource_version(),
        revision: revision.map(str::to_owned),
        tracked: tracked_fingerprint(&tracked),
    };
    let keys: Vec<ObjectKey> = plan
        .tasks
        .iter()
        .filter(|task| task.hook.is_none())
        .map(|task| task.key.clone())
        .collect();
    let mut live = BTreeMap::new();
    for chunk in keys.chunks(READ_CONCURRENCY) {
        let mut reading = Vec::with_capacity(chunk.len());
        for key in chunk {
            reading.push(cluster.get(key));
        }
        let reads = futures::future::join_all(reading).await;
        for (key, object) in chunk.iter().zip(reads) {
            match object {
                Ok(Some(object)) => {
                    live.insert(key.clone(), object);
                }
                Ok(None) => {}
                // A kind the server does not know yet (its CRD comes with the sync) is missing.
                Err(ClusterError::UnknownKind { .. }) => {}
                Err(error) => return Err(observe_error(&key.to_string(), error)),
            }
        }
    }
    let health = cluster.observing(&customizations.health).await;
    let tracked: Vec<LiveObject> = tracked
        .iter()
        .filter_map(|object| LiveObject::from_object(object, &health))
        .collect();
    let ignore =
        ignore_differences(&app.spec, &customizations.ignore_differences).map_err(|error| {
            ApplicationError::Settings {
                app: name.clone(),
                error,
            }
        })?;
    let comparison = compare(
        plan,
        &instance_name(app),
        &live,
        &tracked,
        revision,
        &health,
        &ignore,
    );
    Ok(Compared {
        comparison,
        inputs,
        kinds,
    })
}

/// The cluster the Application's destination names.
pub(super) async fn destination(
    ctx: &ApplicationContext,
    app: &Application,
) -> Result<Arc<KubeCluster>, ApplicationError> {
    ctx.clusters
        .for_destination(&app.spec.destination)
        .await
        .map_err(|error| ApplicationError::Destination {
            app: app.name_any(),
            error,
        })
}

/// The objects of the cluster that the Application tracks (`apiVersion`, `kind`, `metadata`,
/// from the cluster's shared watches); `kinds` (group, kind) are the kinds it deploys.
pub(super) async fn tracked_objects(
    cluster: &KubeCluster,
    app: &Application,
    kinds: &[(String, String)],
) -> Result<Vec<Value>, ApplicationError> {
    cluster
        .tracked_by(&instance_name(app), kinds)
        .await
        .map_err(|error| ApplicationError::Observe {
            app: app.name_any(),
            what: "the objects carrying the tracking annotation".to_owned(),
            error,
        })
}

/// The source's (or sources') manifests at `revision` (empty: each source's `targetRevision`),
/// fetched off the async workers.
pub(super) async fn manifests(
    ctx: &ApplicationContext,
    app: &Application,
    revision: &str,
) -> Result<Manifests, ApplicationError> {
    let name = app.name_any();
    let (spec, revision) = (app.spec.clone(), revision.to_owned());
    let repos = Arc::clone(&ctx.repos);
    tokio::task::spawn_blocking(move || repos.application(&spec, &revision, Some(&spec.project)))
        .await
        .map_err(|error| ApplicationError::SourceTask {
            app: name.clone(),
            error,
        })?
        .map_err(|error| ApplicationError::Source { app: name, error })
}
