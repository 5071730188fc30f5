//! The I/O shell of RollingSync in the ApplicationSet reconcile: resolves the revision of each
//! generated Application's source (the revision being rolled out: a git commit, or the chart
//! version the Application controller would sync, through the same [`RepoCache`]), requests the syncs a pass
//! decided by server-side applying `spec.operation` under the rollout's field manager, and
//! publishes the rollout's Events. The decisions are made by [`flotilla_core::rollout::advance`] and the
//! pure [`flotilla_core::controller::appset`] core.

use std::collections::BTreeMap;
use std::sync::Arc;

use flotilla_generators::source::{GitError, GitReader};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource};

use super::bounded_writes;
use crate::cluster::api_server::api_error::ApiError;
use crate::controller::runtime::cpu_time;
use crate::controller::runtime::events::EventPublisher;
use crate::repo::cache::{FetchError, RepoCache};
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_history_events::from_note;
use flotilla_core::controller::appset::rollout_input::{SourceRevision, sources};
use flotilla_core::controller::appset::rollout_status::RolloutEvent;
use flotilla_core::controller::appset::sync_request::{ROLLOUT_FIELD_MANAGER, SyncRequest};
use flotilla_core::controller::event_reason::EventReason;

/// Where the rollout step of a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    #[error("resolving revision {revision:?} of {repo_url}: {error}")]
    Resolve {
        repo_url: String,
        revision: String,
        #[source]
        error: GitError,
    },
    /// The chart version a chart source's range selects could not be read.
    #[error("resolving the chart version: {0}")]
    Chart(#[source] Box<FetchError>),
    #[error("the revision task failed: {0}")]
    ResolveTask(#[source] tokio::task::JoinError),
    #[error("reading the projects' sync windows: {0}")]
    Projects(#[from] crate::cluster::watches::watched_projects::ProjectsWatchError),
    #[error(transparent)]
    AnalysisJob(Box<super::analysis::CreateJobError>),
    /// An ApplicationSet a step waits for (`dependsOn`) could not be read.
    #[error("reading ApplicationSet {namespace}/{name}, which a step waits for: {error}")]
    Dependency {
        namespace: String,
        name: String,
        #[source]
        error: ApiError,
    },
    #[error("requesting a sync of Application {application}: {error}")]
    Trigger {
        application: String,
        #[source]
        error: ApiError,
    },
}

/// The revision each distinct source of `desired` points to now: a git source's commit, a chart
/// source's version (`git` and `helm` run off the async workers).
///
/// # Errors
/// A source whose repository, revision or chart cannot be resolved.
pub async fn resolve_sources(
    repos: &Arc<RepoCache>,
    desired: &[Application],
) -> Result<BTreeMap<SourceRevision, String>, RolloutError> {
    let (repos, wanted) = (Arc::clone(repos), sources(desired));
    cpu_time::spawn_blocking(move || {
        wanted
            .into_iter()
            .map(|source| resolve(&repos, source))
            .collect()
    })
    .await
    .map_err(RolloutError::ResolveTask)?
}

/// The revision `source` points to now, read with the credentials of its Application's project
/// (project-scoped repository Secrets first, as the Application controller reads it). Blocking.
fn resolve(
    repos: &RepoCache,
    source: SourceRevision,
) -> Result<(SourceRevision, String), RolloutError> {
    if !source.chart.is_empty() {
        // The Application controller's own read of a chart source, so both see one version.
        let chart = repos
            .chart(
                &source.repo_url,
                &source.chart,
                &source.target_revision,
                Some(&source.project),
                source.pass_credentials,
            )
            .map_err(|error| RolloutError::Chart(Box::new(error)))?;
        let version = chart.revision.unwrap_or_default();
        return Ok((source, version));
    }
    match repos.resolve(
        &source.repo_url,
        &source.target_revision,
        Some(&source.project),
    ) {
        Ok(commit) => Ok((source, commit)),
        Err(error) => Err(RolloutError::Resolve {
            repo_url: source.repo_url,
            revision: source.target_revision,
            error,
        }),
    }
}

/// Writes each request's `spec.operation` (server-side apply, the rollout's field manager), a
/// bounded number at once ([`bounded_writes`]); a request refused because its Application
/// changed since the pass read it is left out.
///
/// # Errors
/// The first write that fails.
pub async fn request_syncs(
    client: &Client,
    namespace: &str,
    requests: &[SyncRequest],
) -> Result<(), RolloutError> {
    let api: Api<Application> = Api::namespaced(client.clone(), namespace);
    let params = PatchParams::apply(ROLLOUT_FIELD_MANAGER).force();
    let (api, params) = (&api, &params);
    let mut writes = Vec::with_capacity(requests.len());
    for request in requests {
        writes.push(async move {
            match api
                .patch(
                    &request.application,
                    params,
                    &Patch::Apply(request.apply_body()),
                )
                .await
            {
                Ok(_) => {
                    tracing::info!(application = %request.application, revision = %request.operation.sync.revision, "rollout requested a sync");
                }
                // Decided from a copy of the Application that is no longer current (its sync
                // may be under way already): the next pass decides from the current one.
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    tracing::debug!(application = %request.application, "sync not requested: the Application changed since the pass read it");
                }
                Err(error) => {
                    return Err(RolloutError::Trigger {
                        application: request.application.clone(),
                        error: error.into(),
                    });
                }
            }
            Ok::<(), RolloutError>(())
        });
    }
    bounded_writes::all(writes).await
}

/// Publishes `events` on `appset`; a failure is logged, never fails the reconcile. Each
/// `RolloutEnded` is an Event of its own (the rollout's entry, in its note, is read back from
/// it), never folded into the series of an earlier one.
pub async fn publish(publisher: &EventPublisher, appset: &ApplicationSet, events: &[RolloutEvent]) {
    let reference = appset.object_ref(&());
    for event in events {
        let own = (event.reason == EventReason::RolloutEnded)
            .then(|| from_note(&event.note))
            .flatten()
            .map(|entry| {
                format!(
                    "status.rolloutHistory[startedAt={}].{}",
                    entry.started_at.0,
                    entry.outcome.as_str()
                )
            });
        publisher
            .publish_distinct(&reference, event.reason, event.note.clone(), own)
            .await;
    }
}
