//! The other ApplicationSets a RollingSync's steps wait for (`dependsOn: [{applicationSet,
//! step}]`): read for each reconcile — from the watch of the namespace's ApplicationSets when a
//! controller of this process runs there (its own namespace, or another managed one the
//! project's `sourceNamespaces` permits: [`super::watched_namespaces`]), from the API server
//! otherwise (a namespace no controller of this process manages, or `flotilla rollout explain`)
//! — and handed to the
//! pure [`flotilla_core::rollout::external`] as input; and which ApplicationSets wait for a
//! changed one, so the controller reconciles them at once. Nothing is decided here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::api::ListParams;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, ResourceExt};

use super::context::AppSetContext;
use super::rollout::RolloutError;
use crate::cluster::api_server::api_error::ApiError;
use flotilla_core::api::application_set::{ApplicationSetStep, RolloutStrategy, StepDependency};
use flotilla_core::api::{APPLICATION_SET_LABEL, Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_layout;
use flotilla_core::project::Projects;
use flotilla_core::rollout::external::{
    ExternalApplicationSet, ExternalRollout, Lookup, dependency_namespace, permitted_namespace,
};

/// The steps of other ApplicationSets the steps of `strategy` wait for.
fn dependencies(strategy: Option<&RolloutStrategy>) -> impl Iterator<Item = &ApplicationSetStep> {
    strategy
        .into_iter()
        .flat_map(|s| s.rolling_sync.iter())
        .flat_map(|r| r.steps.iter())
        .flat_map(|s| s.depends_on.iter().flatten())
        .filter_map(StepDependency::application_set)
}

/// How many ApplicationSets a rollout reads, at most, beyond those its steps name: the ones
/// they wait for in turn, followed to see a cycle back to it.
const FOLLOWED: usize = 32;

/// What the rollout of `appset` reads of the ApplicationSets its steps wait for: each one
/// named once, from the watch of its namespace when a controller of this process runs there
/// (this one's, or another managed namespace's), else from the API server; then those they
/// wait for in turn (in namespaces the project permits, up to [`FOLLOWED`]), so a cycle through
/// several ApplicationSets is seen.
///
/// # Errors
/// Reading an ApplicationSet or its Applications from the API server failed.
pub(super) async fn read_dependencies(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
    projects: &Projects,
) -> Result<Vec<ExternalApplicationSet>, RolloutError> {
    let own = appset.namespace().unwrap_or_else(|| ctx.namespace.clone());
    let project = &appset.spec.template.spec.project;
    // (namespace, name) → whether its Applications' labels are read (`matchLabels`).
    let mut named: BTreeMap<(String, String), bool> = BTreeMap::new();
    for dependency in dependencies(appset.spec.strategy.as_ref()) {
        let key = (
            dependency_namespace(dependency, &own).to_owned(),
            dependency.application_set.clone(),
        );
        *named.entry(key).or_default() |= !dependency.match_labels.is_empty();
    }
    let mut read = Vec::with_capacity(named.len());
    for ((namespace, name), labels) in named {
        let (lookup, watched) = match permitted_namespace(projects, project, &own, &namespace) {
            Err(rule) => (Lookup::NotPermitted { rule }, false),
            Ok(()) => read_one(ctx, &namespace, &name, labels).await?,
        };
        read.push(ExternalApplicationSet {
            namespace,
            name,
            lookup,
            watched,
        });
    }
    // Those they wait for in turn.
    let mut next = 0;
    let mut followed = 0;
    while next < read.len() && followed < FOLLOWED {
        let Lookup::Found(rollout) = &read[next].lookup else {
            next += 1;
            continue;
        };
        let namespace = read[next].namespace.clone();
        let further: BTreeSet<(String, String)> = dependencies(rollout.strategy.as_ref())
            .map(|d| {
                let namespace = dependency_namespace(d, &namespace).to_owned();
                (namespace, d.application_set.clone())
            })
            .filter(|(namespace, name)| {
                (namespace.as_str(), name.as_str()) != (own.as_str(), appset.name_any().as_str())
                    && !read
                        .iter()
                        .any(|r| r.namespace == *namespace && r.name == *name)
                    && permitted_namespace(projects, project, &own, namespace).is_ok()
            })
            .collect();
        next += 1;
        for (namespace, name) in further.into_iter().take(FOLLOWED - followed) {
            followed += 1;
            if let (lookup @ Lookup::Found(_), watched) =
                read_one(ctx, &namespace, &name, false).await?
            {
                read.push(ExternalApplicationSet {
                    namespace,
                    name,
                    lookup,
                    watched,
                });
            }
        }
    }
    Ok(read)
}

/// What is found of the ApplicationSet `name` of `namespace` (with its Applications' labels
/// when `labels`), and whether it was read from a watch.
///
/// # Errors
/// Reading it or its Applications from the API server failed.
async fn read_one(
    ctx: &AppSetContext,
    namespace: &str,
    name: &str,
    labels: bool,
) -> Result<(Lookup, bool), RolloutError> {
    let store = ctx.watched_appsets(namespace).await;
    let found = match &store {
        Some(store) => store.get(&ObjectRef::new(name).within(namespace)),
        None => {
            let api: Api<ApplicationSet> = Api::namespaced(ctx.client.clone(), namespace);
            api.get_opt(name)
                .await
                .map_err(|error| RolloutError::Dependency {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    error: error.into(),
                })?
                .map(Arc::new)
        }
    };
    let lookup = match found {
        None => Lookup::NotFound,
        Some(other) => Lookup::Found(Box::new(rollout_of(ctx, &other, labels).await?)),
    };
    Ok((lookup, store.is_some()))
}

/// What the pure core reads of `other`: its strategy and rollout status, and when `labels` (a
/// `matchLabels` names it) its Applications' labels — read with their rollout entries when it
/// keeps those on its Applications (past `--rollout-status-limit`), as the counts in its status
/// cannot tell labels.
///
/// # Errors
/// Reading its Applications from the API server failed.
async fn rollout_of(
    ctx: &AppSetContext,
    other: &ApplicationSet,
    labels: bool,
) -> Result<ExternalRollout, RolloutError> {
    let mut status = other.status.clone().unwrap_or_default();
    let reported = !(status.conditions.is_empty()
        && status.application_status.is_empty()
        && status.application_status_summary.is_empty());
    let labels = match labels {
        false => BTreeMap::new(),
        true if rollout_layout::on_applications(&status) => {
            let applications = read_applications(ctx, other).await?;
            rollout_layout::hydrate(&mut status, &applications);
            applications
                .into_iter()
                .map(|app| (app.name_any(), app.metadata.labels.unwrap_or_default()))
                .collect()
        }
        true => application_labels(ctx, other).await?,
    };
    Ok(ExternalRollout {
        strategy: other.spec.strategy.clone(),
        reported,
        application_status: status.application_status,
        summary: status.application_status_summary,
        step_status: status.rollout_steps,
        rollback: status.rollout_rollback,
        labels,
    })
}

/// The Applications of `appset`, whole.
///
/// # Errors
/// Listing them failed.
async fn read_applications(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
) -> Result<Vec<Application>, RolloutError> {
    let (api, params, failed) = applications_of(ctx, appset);
    api.list(&params)
        .await
        .map(|listed| listed.items)
        .map_err(failed)
}

/// The labels of the Applications of `appset`, by name.
///
/// # Errors
/// Listing them failed.
async fn application_labels(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, RolloutError> {
    let (api, params, failed) = applications_of(ctx, appset);
    let listed = api.list_metadata(&params).await.map_err(failed)?;
    Ok(listed
        .items
        .into_iter()
        .map(|app| (app.name_any(), app.metadata.labels.unwrap_or_default()))
        .collect())
}

/// How the Applications of `appset` are listed: the API of its namespace, the selector of its
/// Applications, and the error a failed list is.
fn applications_of(
    ctx: &AppSetContext,
    appset: &ApplicationSet,
) -> (
    Api<Application>,
    ListParams,
    impl FnOnce(kube::Error) -> RolloutError,
) {
    let (namespace, name) = (appset.namespace().unwrap_or_default(), appset.name_any());
    let api: Api<Application> = Api::namespaced(ctx.client.clone(), &namespace);
    let params = ListParams::default().labels(&format!("{APPLICATION_SET_LABEL}={name}"));
    let failed = move |error: kube::Error| RolloutError::Dependency {
        namespace,
        name,
        error: ApiError::from(error),
    };
    (api, params, failed)
}

/// The ApplicationSets in `store` (of `namespace`) whose steps wait for a step of `changed`:
/// reconciled when it changes, so they open as soon as it completes.
pub(super) fn waiting_for(
    store: &Store<ApplicationSet>,
    namespace: &str,
    changed: &ApplicationSet,
) -> Vec<ObjectRef<ApplicationSet>> {
    let (changed_namespace, changed_name) =
        (changed.namespace().unwrap_or_default(), changed.name_any());
    let waiting: BTreeSet<String> = store
        .state()
        .iter()
        .filter(|appset| {
            let own = appset.namespace().unwrap_or_else(|| namespace.to_owned());
            dependencies(appset.spec.strategy.as_ref()).any(|d| {
                d.application_set == changed_name
                    && dependency_namespace(d, &own) == changed_namespace
            })
        })
        .map(|appset| appset.name_any())
        .collect();
    waiting
        .into_iter()
        .map(|name| ObjectRef::new(&name).within(namespace))
        .collect()
}
