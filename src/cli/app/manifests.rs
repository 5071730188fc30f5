//! `flotilla app manifests NAME`: the Application's manifests, as `argocd app manifests` prints
//! them — by default as its source renders them at its target revision (or `--revision`), read
//! as the controller reads it (the same code as `flotilla app diff`); with `--source live`, its
//! managed objects as the destination cluster has them now. YAML documents by default; `-o json`
//! a JSON list, `-o name` one `kind.group/name` per object.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use kube::{Api, Client, ResourceExt};
use serde_json::Value;

use crate::actions::application_plan::application_plan;
use crate::cli::missing::get_named;
use crate::cli::output::{OutputFormat, Printable, object_name};
use crate::cluster::destinations::clients::{ClusterClients, plain_connect};
use crate::cluster::watches::watched_customizations::DEFAULT_CONFIG_MAP;
use crate::source::Toolchain;
use crate::sync::execute::cluster_api::ClusterApi;
use flotilla_core::api::Application;
use flotilla_core::manifest::ObjectKey;

/// Where the manifests come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ManifestSource {
    /// The source, rendered at the target revision (or --revision).
    #[default]
    Git,
    /// The managed objects as they are in the destination cluster.
    Live,
}

/// Arguments of `flotilla app manifests`.
#[derive(Debug, clap::Args)]
pub struct ManifestsArgs {
    /// The Application.
    pub app: String,
    /// git (the desired manifests) or live (the objects in the cluster).
    #[arg(long, value_enum, default_value_t)]
    pub source: ManifestSource,
    /// Render the source at this revision instead of its targetRevision (--source git).
    #[arg(long, conflicts_with = "source")]
    pub revision: Option<String>,
    /// The controller's settings ConfigMap in the Application's namespace.
    #[arg(long, default_value = DEFAULT_CONFIG_MAP)]
    pub settings_config_map: String,
    /// Output format (the default and `table` print YAML documents).
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Prints the manifests.
///
/// # Errors
/// No such Application, an unreadable source, or an unreachable destination.
pub async fn manifests(
    toolchain: &Arc<Toolchain>,
    client: Client,
    namespace: &str,
    args: &ManifestsArgs,
) -> anyhow::Result<ExitCode> {
    let mut app = get_named(
        &Api::<Application>::namespaced(client.clone(), namespace),
        &args.app,
    )
    .await?;
    let objects = match args.source {
        ManifestSource::Git => {
            if let Some(revision) = &args.revision {
                app.spec.source.target_revision.clone_from(revision);
            }
            let (plan, _) = application_plan(
                toolchain,
                client,
                namespace,
                &app,
                &args.settings_config_map,
            )
            .await?;
            plan.tasks
                .into_iter()
                .map(|task| task.resource.body)
                .collect()
        }
        ManifestSource::Live => live(client, namespace, &app).await?,
    };
    print!("{}", args.output.print(&Manifests(objects))?);
    Ok(ExitCode::SUCCESS)
}

/// The managed objects of `app` (its `status.resources`) that exist in its destination.
async fn live(client: Client, namespace: &str, app: &Application) -> anyhow::Result<Vec<Value>> {
    let cluster = ClusterClients::new(client, namespace, plain_connect())
        .for_destination(&app.spec.destination)
        .await
        .with_context(|| format!("Application {}: its destination", app.name_any()))?;
    let mut objects = Vec::new();
    let resources = app.status.iter().flat_map(|status| &status.resources);
    for resource in resources {
        let key = super::resources::key(resource);
        let object = cluster
            .get(&key)
            .await
            .with_context(|| format!("reading {key}"))?;
        objects.extend(object);
    }
    Ok(objects)
}

/// Manifests, printable.
struct Manifests(Vec<Value>);

impl Printable for Manifests {
    fn data(&self) -> impl serde::Serialize + '_ {
        &self.0
    }

    fn names(&self) -> Vec<String> {
        self.0
            .iter()
            .filter_map(ObjectKey::of_object)
            .map(|key| object_name(&key.group, &key.kind, &key.name))
            .collect()
    }

    /// YAML documents, each opened by `---`.
    fn table(&self, _wide: bool) -> String {
        self.0
            .iter()
            .map(|object| {
                format!(
                    "---\n{}",
                    serde_saphyr::to_string(object).unwrap_or_default()
                )
            })
            .collect()
    }
}
