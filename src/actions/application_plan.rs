//! What an Application would apply, read as the controller compares it: its source at its
//! target revision (into a temporary checkout), and its ignore rules with those of the
//! controller's settings ConfigMap. For `flotilla app diff` and the web view's object panel.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client, ResourceExt};

use crate::cluster::watches::watched_secrets::WatchedSecrets;
use crate::customizations::{Customizations, CustomizationsReadError};
use crate::repo::LocalRepos;
use crate::repo::cache::{FetchError, RepoCache};
use crate::source::{SourceOptions, Toolchain};
use crate::sync::application_settings::{SettingsError, ignore_differences};
use crate::sync::load_plan;
use flotilla_core::api::Application;
use flotilla_core::manifest::ValidationErrors;
use flotilla_core::sync::{IgnoreDifferences, SyncPlan};

/// Why what an Application would apply could not be read. Each message names what failed; its
/// source says why.
#[derive(Debug, thiserror::Error)]
pub enum ApplicationPlanError {
    #[error("reading ConfigMap {namespace}/{name}")]
    Settings {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("reading the settings")]
    Customizations(#[source] CustomizationsReadError),
    #[error("Application {app}: its ignoreDifferences")]
    IgnoreDifferences {
        app: String,
        #[source]
        source: SettingsError,
    },
    #[error("cannot create a temporary directory for the repositories")]
    Checkout(#[source] std::io::Error),
    #[error("Application {app}: reading its source")]
    Source {
        app: String,
        #[source]
        source: FetchError,
    },
    #[error("Application {app}: its manifests")]
    Manifests {
        app: String,
        #[source]
        source: ValidationErrors,
    },
    #[error("a blocking task did not finish")]
    Task(#[source] tokio::task::JoinError),
}

/// What Application `app` (of `namespace`) would apply — its source read at its target
/// revision into a temporary checkout — and its ignore rules with those of the settings
/// ConfigMap `settings_config_map`, as the controller compares.
///
/// # Errors
/// An unreadable settings ConfigMap or source, or manifests that do not load.
pub async fn application_plan(
    toolchain: &Arc<Toolchain>,
    client: Client,
    namespace: &str,
    app: &Application,
    settings_config_map: &str,
) -> Result<(SyncPlan, IgnoreDifferences), ApplicationPlanError> {
    let name = app.name_any();
    let settings = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt(settings_config_map)
        .await
        .map_err(|source| ApplicationPlanError::Settings {
            namespace: namespace.to_owned(),
            name: settings_config_map.to_owned(),
            source,
        })?;
    let customizations = Customizations::from_data(
        &format!("ConfigMap {namespace}/{settings_config_map}"),
        &settings.and_then(|c| c.data).unwrap_or_default(),
        &Arc::default(),
    )
    .map_err(ApplicationPlanError::Customizations)?;
    let ignore =
        ignore_differences(&app.spec, &customizations.ignore_differences).map_err(|source| {
            ApplicationPlanError::IgnoreDifferences {
                app: name.clone(),
                source,
            }
        })?;
    let credentials = WatchedSecrets::repository_credentials(client, namespace);
    let repos = RepoCache::temporary(LocalRepos::default(), Arc::clone(toolchain))
        .map_err(ApplicationPlanError::Checkout)?
        .with_credentials(Arc::new(credentials), None);
    // Kept until the plan is loaded: dropping the cache removes the checkout it reads.
    let repos = Arc::new(repos);
    let reader = Arc::clone(&repos);
    let spec = app.spec.clone();
    let manifests =
        tokio::task::spawn_blocking(move || reader.application(&spec, "", Some(&spec.project)))
            .await
            .map_err(ApplicationPlanError::Task)?
            .map_err(|source| ApplicationPlanError::Source {
                app: name.clone(),
                source,
            })?;
    let options =
        SourceOptions::of_application(app, manifests.revision.clone(), &manifests.sources);
    // Generating may run helm or kustomize: off the async workers.
    let (root, destination) = (
        manifests.root.clone(),
        app.spec.destination.namespace.clone(),
    );
    let toolchain = Arc::clone(toolchain);
    let plan = tokio::task::spawn_blocking(move || {
        load_plan(
            &toolchain,
            &root,
            &options,
            destination.as_deref(),
            "compare",
        )
    })
    .await
    .map_err(ApplicationPlanError::Task)?
    .map_err(|source| ApplicationPlanError::Manifests { app: name, source })?;
    drop(repos);
    Ok((plan, ignore))
}
