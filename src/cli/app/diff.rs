//! `flotilla app diff NAME`: an Application's objects as the controller compares them — its
//! source read at its target revision from its repository, its destination resolved through the
//! cluster Secrets, the ignore rules of the Application and of the controller's settings
//! ConfigMap applied — against the live objects, reported as `flotilla diff` reports.

use std::sync::Arc;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client, ResourceExt};

use crate::cli::diff::{DiffOutput, ObjectDiff, diff_objects};
use crate::cluster::destinations::clients::{ClusterClients, plain_connect};
use crate::cluster::watches::watched_customizations::DEFAULT_CONFIG_MAP;
use crate::cluster::watches::watched_secrets::WatchedSecrets;
use crate::customizations::Customizations;
use crate::repo::LocalRepos;
use crate::repo::cache::RepoCache;
use crate::source::SourceOptions;
use crate::sync::application_settings::ignore_differences;
use crate::sync::load_plan;
use flotilla_core::api::Application;
use flotilla_core::controller::application::instance::instance_name;
use flotilla_core::sync::{IgnoreDifferences, SyncPlan};

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
    client: Client,
    namespace: &str,
    args: &AppDiffArgs,
) -> anyhow::Result<Vec<ObjectDiff>> {
    let app = Api::<Application>::namespaced(client.clone(), namespace)
        .get(&args.app)
        .await
        .with_context(|| format!("reading Application {namespace}/{}", args.app))?;
    let (plan, ignore) =
        application_plan(client.clone(), namespace, &app, &args.settings_config_map).await?;
    let cluster = ClusterClients::new(client, namespace, plain_connect())
        .for_destination(&app.spec.destination)
        .await
        .with_context(|| format!("Application {}: its destination", app.name_any()))?;
    diff_objects(&cluster, &plan, &instance_name(&app), &ignore).await
}

/// What Application `app` (of `namespace`) would apply — its source read at its target
/// revision into a temporary checkout — and its ignore rules with those of the settings
/// ConfigMap `settings_config_map`, as the controller compares.
///
/// # Errors
/// An unreadable settings ConfigMap or source, or manifests that do not load.
pub async fn application_plan(
    client: Client,
    namespace: &str,
    app: &Application,
    settings_config_map: &str,
) -> anyhow::Result<(SyncPlan, IgnoreDifferences)> {
    let settings = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt(settings_config_map)
        .await
        .with_context(|| format!("reading ConfigMap {namespace}/{settings_config_map}"))?;
    let customizations = Customizations::from_data(
        &format!("ConfigMap {namespace}/{settings_config_map}"),
        &settings.and_then(|c| c.data).unwrap_or_default(),
    )?;
    let ignore = ignore_differences(&app.spec, &customizations.ignore_differences)?;
    let credentials = WatchedSecrets::repository_credentials(client, namespace);
    let repos = RepoCache::temporary(LocalRepos::default())
        .context("cannot create a temporary directory for the repositories")?
        .with_credentials(Arc::new(credentials), None);
    // Kept until the plan is loaded: dropping the cache removes the checkout it reads.
    let repos = Arc::new(repos);
    let reader = Arc::clone(&repos);
    let spec = app.spec.clone();
    let manifests =
        tokio::task::spawn_blocking(move || reader.application(&spec, "", Some(&spec.project)))
            .await?
            .with_context(|| format!("Application {}: reading its source", app.name_any()))?;
    let options =
        SourceOptions::of_application(app, manifests.revision.clone(), &manifests.sources);
    // Generating may run helm or kustomize: off the async workers.
    let (root, destination) = (
        manifests.root.clone(),
        app.spec.destination.namespace.clone(),
    );
    let plan = tokio::task::spawn_blocking(move || {
        load_plan(&root, &options, destination.as_deref(), "compare")
    })
    .await?
    .map_err(|errors| {
        let lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("Application {}: {}", app.name_any(), lines.join("\n"))
    })?;
    drop(repos);
    Ok((plan, ignore))
}
