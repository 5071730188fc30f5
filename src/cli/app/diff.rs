//! `flotilla app diff NAME`: an Application's objects as the controller compares them — its
//! source read at its target revision from its repository, its destination resolved through the
//! cluster Secrets, the ignore rules of the Application and of the controller's settings
//! ConfigMap applied — against the live objects, reported as `flotilla diff` reports.

use std::sync::Arc;

use anyhow::Context as _;
use kube::{Api, Client, ResourceExt};

use crate::actions::application_plan::application_plan;
use crate::cli::diff::{DiffOutput, ObjectDiff, diff_objects};
use crate::cluster::destinations::clients::{ClusterClients, plain_connect};
use crate::cluster::watches::watched_customizations::DEFAULT_CONFIG_MAP;
use crate::source::Toolchain;
use flotilla_core::api::Application;
use flotilla_core::controller::application::instance::instance_name;

/// Arguments of `flotilla app diff`.
#[derive(Debug, clap::Args)]
pub struct AppDiffArgs {
    /// The Application.
    pub app: String,
    /// The controller's settings ConfigMap in the Application's namespace (its
    /// `resource.customizations`).
    #[arg(long, default_value = DEFAULT_CONFIG_MAP)]
    pub settings_config_map: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: DiffOutput,
}

/// The objects of Application `args.app` in `namespace`, compared.
///
/// # Errors
/// No such Application, an unreadable settings ConfigMap, source or destination, or a live
/// object that cannot be read.
pub async fn app_diff(
    toolchain: &Arc<Toolchain>,
    client: Client,
    namespace: &str,
    args: &AppDiffArgs,
) -> anyhow::Result<Vec<ObjectDiff>> {
    let app = Api::<Application>::namespaced(client.clone(), namespace)
        .get(&args.app)
        .await
        .with_context(|| format!("reading Application {namespace}/{}", args.app))?;
    let (plan, ignore) = application_plan(
        toolchain,
        client.clone(),
        namespace,
        &app,
        &args.settings_config_map,
    )
    .await?;
    let cluster = ClusterClients::new(client, namespace, plain_connect())
        .for_destination(&app.spec.destination)
        .await
        .with_context(|| format!("Application {}: its destination", app.name_any()))?;
    diff_objects(&cluster, &plan, &instance_name(&app), &ignore).await
}
