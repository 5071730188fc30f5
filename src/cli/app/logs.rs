//! `flotilla app logs NAME`: the logs of the pods of the Application's workloads, as `argocd app
//! logs` prints them. The pods are those its managed objects (`status.resources`, narrowed by
//! `--group --kind --name --namespace`) are or select (`spec.selector.matchLabels` of a
//! Deployment, StatefulSet, DaemonSet, ReplicaSet or Job), in its destination cluster; each
//! container's log (or `--container`'s) is read through `pods/log`, with `--tail`, `--previous`
//! and `--follow` (every log at once, lines as they come).

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::Context as _;
use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::LogParams;
use kube::{Api, Client, ResourceExt};

use crate::cli::missing::get_named;
use crate::cluster::api_server::api_error::ApiError;
use crate::cluster::destinations::clients::{ClusterClients, plain_connect};
use crate::sync::execute::cluster_api::ClusterApi;
use flotilla_core::api::Application;
use flotilla_core::api::application::ResourceStatus;

/// The kinds whose pods are those their `spec.selector.matchLabels` selects.
const WORKLOADS: [&str; 5] = [
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
];

/// Arguments of `flotilla app logs`.
#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// The Application.
    pub app: String,
    /// Only the managed objects of this API group.
    #[arg(long)]
    pub group: Option<String>,
    /// Only the managed objects of this kind (e.g. Deployment, Pod).
    #[arg(long)]
    pub kind: Option<String>,
    /// Only the managed object of this name.
    #[arg(long)]
    pub name: Option<String>,
    /// Only the managed objects in this namespace (of the destination).
    #[arg(long = "resource-namespace", value_name = "NAMESPACE")]
    pub resource_namespace: Option<String>,
    /// Only this container's log (default: every container's).
    #[arg(short, long)]
    pub container: Option<String>,
    /// The last N lines of each log.
    #[arg(long, value_name = "N")]
    pub tail: Option<i64>,
    /// The log of the previous instance of each container.
    #[arg(short, long)]
    pub previous: bool,
    /// Keep printing lines as they are written.
    #[arg(short, long)]
    pub follow: bool,
}

impl LogsArgs {
    /// Whether the managed object `resource` passes the filters.
    fn selects(&self, resource: &ResourceStatus) -> bool {
        let matches = |filter: &Option<String>, value: &str| {
            filter.as_deref().is_none_or(|wanted| wanted == value)
        };
        matches(&self.group, &resource.group)
            && matches(&self.kind, &resource.kind)
            && matches(&self.name, &resource.name)
            && matches(&self.resource_namespace, &resource.namespace)
    }
}

/// No pod to read a log of.
#[derive(Debug, thiserror::Error)]
#[error("Application {app} has no pods among the objects selected")]
pub struct NoPods {
    app: String,
}

/// Prints the logs.
///
/// # Errors
/// No such Application, an unreachable destination, no pods, or a log that cannot be read.
pub async fn logs(client: Client, namespace: &str, args: &LogsArgs) -> anyhow::Result<ExitCode> {
    let app = get_named(
        &Api::<Application>::namespaced(client.clone(), namespace),
        &args.app,
    )
    .await?;
    let cluster = ClusterClients::new(client, namespace, plain_connect())
        .for_destination(&app.spec.destination)
        .await
        .with_context(|| format!("Application {}: its destination", app.name_any()))?;
    let mut pods = BTreeMap::new();
    let selected = app
        .status
        .iter()
        .flat_map(|status| &status.resources)
        .filter(|resource| args.selects(resource));
    for resource in selected {
        let is_pod = resource.group.is_empty() && resource.kind == "Pod";
        if !is_pod && !WORKLOADS.contains(&resource.kind.as_str()) {
            continue;
        }
        let key = super::resources::key(resource);
        let Some(object) = cluster
            .get(&key)
            .await
            .with_context(|| format!("reading {key}"))?
        else {
            continue;
        };
        let found = if is_pod {
            vec![object]
        } else {
            cluster
                .pods_of(&object)
                .await
                .with_context(|| format!("listing the pods of {key}"))?
        };
        for pod in found {
            let pod: Pod = serde_json::from_value(pod).context("reading a pod")?;
            pods.insert((pod.namespace().unwrap_or_default(), pod.name_any()), pod);
        }
    }
    if pods.is_empty() {
        return Err(NoPods {
            app: args.app.clone(),
        }
        .into());
    }
    let mut reads = Vec::new();
    for ((pod_namespace, pod_name), pod) in &pods {
        let containers: Vec<String> = match &args.container {
            Some(container) => vec![container.clone()],
            None => pod
                .spec
                .iter()
                .flat_map(|spec| &spec.containers)
                .map(|c| c.name.clone())
                .collect(),
        };
        for container in containers {
            let params = LogParams {
                container: Some(container.clone()),
                tail_lines: args.tail,
                previous: args.previous,
                follow: args.follow,
                ..LogParams::default()
            };
            reads.push((
                Api::<Pod>::namespaced(cluster.client(), pod_namespace),
                pod_name.clone(),
                container,
                params,
            ));
        }
    }
    if args.follow {
        follow(reads).await?;
    } else {
        for (api, pod, container, params) in reads {
            let text = api
                .logs(&pod, &params)
                .await
                .map_err(ApiError::from)
                .with_context(|| {
                    format!("reading the log of container {container} of pod {pod}")
                })?;
            print!("{text}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the lines of every log as they come, until each ends.
async fn follow(reads: Vec<(Api<Pod>, String, String, LogParams)>) -> anyhow::Result<()> {
    let mut streams = Vec::new();
    for (api, pod, container, params) in reads {
        let stream = api
            .log_stream(&pod, &params)
            .await
            .map_err(ApiError::from)
            .with_context(|| format!("following the log of container {container} of pod {pod}"))?;
        streams.push(stream.lines().map_err(anyhow::Error::from).boxed());
    }
    let mut lines = futures::stream::select_all(streams);
    while let Some(line) = lines.next().await {
        println!("{}", line?);
    }
    Ok(())
}
