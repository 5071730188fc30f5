//! The resource customizations (health checks, system-wide ignore rules) configured in one
//! ConfigMap of the controller's namespace (Argo CD's `argocd-cm` by default, so existing
//! `resource.customizations` work unchanged), kept by a watch started on first use and parsed
//! again only when the ConfigMap changed. No ConfigMap means no customizations.

use std::sync::{Mutex, PoisonError};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use tokio::sync::OnceCell;

use crate::customizations::{Customizations, CustomizationsReadError};
use crate::duration::format_duration;

use super::listed_watch::{LIST_TIMEOUT, ListedWatch};

/// The ConfigMap read unless the controller is told otherwise.
pub const DEFAULT_CONFIG_MAP: &str = "argocd-cm";

/// Configured customizations that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CustomizationsConfigError {
    #[error(
        "ConfigMap {namespace}/{name}: the watch has not listed within {}",
        format_duration(LIST_TIMEOUT)
    )]
    Watch { namespace: String, name: String },
    #[error(transparent)]
    Customizations(#[from] CustomizationsReadError),
}

/// The watched ConfigMap and the customizations last parsed from it (with its
/// resourceVersion).
pub struct WatchedCustomizations {
    client: Client,
    namespace: String,
    name: String,
    watch: OnceCell<ListedWatch<ConfigMap>>,
    parsed: Mutex<(Option<String>, Customizations)>,
}

impl WatchedCustomizations {
    /// Customizations configured in ConfigMap `name` of `namespace`.
    #[must_use]
    pub fn new(client: Client, namespace: &str, name: &str) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            watch: OnceCell::new(),
            parsed: Mutex::new((None, Customizations::default())),
        }
    }

    /// The customizations the ConfigMap configures now.
    ///
    /// # Errors
    /// The watch has not listed in time (say, it is forbidden), or the ConfigMap's
    /// customizations cannot be read.
    pub async fn current(&self) -> Result<Customizations, CustomizationsConfigError> {
        let watch = self.watch.get_or_try_init(|| self.start()).await?;
        let config_map = watch.store().state().into_iter().next();
        let version = config_map.as_ref().and_then(|c| c.resource_version());
        let mut parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        if parsed.0 != version || version.is_none() {
            let source = format!("ConfigMap {}/{}", self.namespace, self.name);
            let data = config_map.and_then(|c| c.data.clone()).unwrap_or_default();
            *parsed = (version, Customizations::from_data(&source, &data)?);
        }
        Ok(parsed.1.clone())
    }

    /// Starts the watch and waits until it has listed.
    async fn start(&self) -> Result<ListedWatch<ConfigMap>, CustomizationsConfigError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.name));
        ListedWatch::start(api, config, "the settings ConfigMap")
            .await
            .ok_or_else(|| CustomizationsConfigError::Watch {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
            })
    }
}
