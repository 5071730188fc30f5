//! The I/O shell of a RollingSync step's analysis (Flotilla extension): before a pass, it looks
//! at what [`probes`] names — reads each analysis Job, sends each due HTTP GET (judged by
//! [`judge_answer`]), takes each due measurement of a metric analysis ([`super::metric_request`])
//! — and after the pass's status is written, creates the Jobs the pass asks
//! for (an existing one, from before a restart, is kept: its name makes the run happen once).
//! A Job is read and created on its destination cluster, reached as the Application controller
//! reaches it (the cluster Secrets; the controller's own client for the in-cluster address).
//! The decisions are [`flotilla_core::rollout::analysis`]'s.

use std::time::Duration;

use hyper::Method;
use hyper::body::Bytes;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

use crate::cluster::api_server::api_error::ApiError;
use crate::cluster::destinations::clients::{ClientsError, ClusterClients};
use crate::controller::http_clients::url_request::send;
use flotilla_core::api::application_set_status::AnalysisCluster;
use flotilla_core::api::{APPLICATION_SET_LABEL, STEP_LABEL};
use flotilla_core::rollout::analysis::{
    AnalysisJob, AnalysisObservation, AnalysisOutcome, Probe, judge_answer,
};

/// How long one GET of an HTTP analysis may take.
pub const GET_TIMEOUT: Duration = Duration::from_secs(10);

/// A Job that could not be created.
#[derive(Debug, thiserror::Error)]
#[error("creating the analysis Job {namespace}/{name} of step {step} on {cluster}: {error}")]
pub struct CreateJobError {
    pub step: usize,
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    #[source]
    pub error: JobWriteError,
}

/// Why a Job could not be created.
#[derive(Debug, thiserror::Error)]
pub enum JobWriteError {
    /// Its cluster cannot be reached.
    #[error(transparent)]
    Cluster(#[from] ClientsError),
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// The client of the destination cluster `cluster`.
async fn client_of(
    clusters: &ClusterClients,
    cluster: &AnalysisCluster,
) -> Result<Client, ClientsError> {
    Ok(clusters
        .for_destination(&cluster.destination())
        .await?
        .client())
}

/// Looks at every probe: the observations of this pass (a Job not found gives none). A metric
/// analysis' Secret is read from `secrets` (the ApplicationSet's namespace).
pub async fn observe(
    clusters: &ClusterClients,
    secrets: &Api<Secret>,
    probes: &[Probe],
) -> Vec<AnalysisObservation> {
    let mut observed = Vec::with_capacity(probes.len());
    for probe in probes {
        let seen = match probe {
            Probe::Job {
                step,
                cluster,
                namespace,
                name,
            } => {
                let read = match client_of(clusters, cluster).await {
                    Ok(client) => read_job(&client, namespace, name).await,
                    // Not reachable now: running (the Job is not created again).
                    Err(error) => Some((AnalysisOutcome::Running, format!("not read: {error}"))),
                };
                read.map(|(outcome, message)| AnalysisObservation {
                    step: *step,
                    outcome,
                    message,
                    cluster: Some(cluster.clone()),
                })
            }
            Probe::Http { step, check } => {
                let (passed, message) =
                    match send(Method::GET, &check.url, &[], Bytes::new(), GET_TIMEOUT).await {
                        Ok((status, body)) => judge_answer(check, status.as_u16(), &body),
                        Err(error) => (false, error.to_string()),
                    };
                tracing::info!(step, url = %check.url, passed, %message, "analysis GET");
                Some(AnalysisObservation {
                    step: *step,
                    outcome: if passed {
                        AnalysisOutcome::Passed
                    } else {
                        AnalysisOutcome::Failed
                    },
                    message,
                    cluster: None,
                })
            }
            Probe::Metric { step, check } => {
                let (outcome, message) = super::metric_request::measure(check, secrets).await;
                tracing::info!(step, metric = %check.describe(), ?outcome, %message, "analysis measurement");
                Some(AnalysisObservation {
                    step: *step,
                    outcome,
                    message,
                    cluster: None,
                })
            }
        };
        observed.extend(seen);
    }
    observed
}

/// The Job `namespace/name` as an outcome; `None` when it does not exist. A read that fails
/// otherwise counts as running (the Job is not created again).
async fn read_job(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Option<(AnalysisOutcome, String)> {
    let api: Api<Job> = Api::namespaced(client.clone(), namespace);
    let job = match api.get_opt(name).await {
        Ok(job) => job?,
        Err(error) => return Some((AnalysisOutcome::Running, format!("not read: {error}"))),
    };
    let status = job.status.unwrap_or_default();
    let condition = |type_: &str| {
        status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == type_ && c.status == "True")
    };
    if condition("Complete").is_some() {
        return Some((AnalysisOutcome::Passed, String::new()));
    }
    if let Some(failed) = condition("Failed") {
        let reason = failed.reason.clone().unwrap_or_default();
        let message = failed.message.clone().unwrap_or_default();
        let text = [reason, message]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(": ");
        return Some((AnalysisOutcome::Failed, text));
    }
    let active = status.active.unwrap_or(0);
    let failed = status.failed.unwrap_or(0);
    Some((
        AnalysisOutcome::Running,
        format!("{active} active, {failed} failed"),
    ))
}

/// Creates each Job on its cluster (one that exists already is kept), labelled with the
/// ApplicationSet and the step.
///
/// # Errors
/// The first cluster that cannot be reached, or creation refused for another reason than the
/// Job's existence.
pub async fn create_jobs(
    clusters: &ClusterClients,
    appset: &str,
    jobs: &[AnalysisJob],
) -> Result<(), CreateJobError> {
    for job in jobs {
        let failed = |error: JobWriteError| CreateJobError {
            step: job.step,
            cluster: job.cluster.to_string(),
            namespace: job.namespace.clone(),
            name: job.name.clone(),
            error,
        };
        let client = client_of(clusters, &job.cluster)
            .await
            .map_err(|error| failed(error.into()))?;
        let api: Api<Job> = Api::namespaced(client, &job.namespace);
        let object = Job {
            metadata: ObjectMeta {
                name: Some(job.name.clone()),
                namespace: Some(job.namespace.clone()),
                labels: Some(
                    [
                        (APPLICATION_SET_LABEL.to_owned(), appset.to_owned()),
                        (STEP_LABEL.to_owned(), job.step.to_string()),
                    ]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(job.spec.clone()),
            status: None,
        };
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => {
                tracing::info!(appset, step = job.step, job = %job.name, namespace = %job.namespace, cluster = %job.cluster, "analysis Job created");
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(failed(ApiError::from(error).into())),
        }
    }
    Ok(())
}
