//! What an Application would apply, read as the controller compares it: its source at its
//! target revision (into a temporary checkout), and its ignore rules with those of the
//! controller's settings ConfigMap. For `flotilla app diff` and the web view's object panel.

use std::sync::Arc;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client, ResourceExt};

use crate::cluster::watches::watched_secrets::WatchedSecrets;
use crate::customizations::Customizations;
use crate::repo::LocalRepos;
use crate::repo::cache::RepoCache;
use crate::source::SourceOptions;
use crate::sync::application_settings::ignore_differences;
use crate::sync::load_plan;
use flotilla_core::api::Application;
use flotilla_core::sync::{IgnoreDifferences, SyncPlan};

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
