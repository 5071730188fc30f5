//! The resource customizations (health checks, system-wide ignore rules) configured in one
//! ConfigMap of the controller's namespace (Argo CD's `argocd-cm` by default, so existing
//! `resource.customizations` work unchanged), kept by a watch started on first use and parsed
//! again only when the ConfigMap changed, each time with the health flags' defaults. No
//! ConfigMap means no customizations but those defaults.

use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Client, ResourceExt};

use crate::customizations::{Customizations, CustomizationsReadError};
use flotilla_core::health::HealthDefaults;
use flotilla_core::sync::JqFilters;

use super::watched_object::{WatchError, WatchedObject};

/// The ConfigMap read unless the controller is told otherwise.
pub const DEFAULT_CONFIG_MAP: &str = "argocd-cm";

/// Configured customizations that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CustomizationsConfigError {
    #[error(transparent)]
    Watch(#[from] WatchError),
    #[error(transparent)]
    Customizations(#[from] CustomizationsReadError),
}

/// The watched ConfigMap and the customizations last parsed from it (with its
/// resourceVersion).
pub struct WatchedCustomizations {
    config_map: WatchedObject<ConfigMap>,
    defaults: HealthDefaults,
    parsed: Mutex<(Option<String>, Customizations)>,
    /// The ignore rules' jq expressions, compiled once for the watch's life.
    filters: Arc<JqFilters>,
}

impl WatchedCustomizations {
    /// Customizations configured in ConfigMap `name` of `namespace`.
    #[must_use]
    pub fn new(client: Client, namespace: &str, name: &str) -> Self {
        Self {
            config_map: WatchedObject::new(client, namespace, name, "the settings ConfigMap"),
            defaults: HealthDefaults::default(),
            parsed: Mutex::new((None, Customizations::default())),
            filters: Arc::default(),
        }
    }

    /// Every parse of the ConfigMap with `defaults` (the health flags).
    #[must_use]
    pub fn with_health_defaults(self, defaults: HealthDefaults) -> Self {
        Self { defaults, ..self }
    }

    /// The customizations the ConfigMap configures now.
    ///
    /// # Errors
    /// The watch has not listed in time (say, it is forbidden), or the ConfigMap's
    /// customizations cannot be read.
    pub async fn current(&self) -> Result<Customizations, CustomizationsConfigError> {
        let config_map = self.config_map.current().await?;
        let version = config_map.as_ref().and_then(|c| c.resource_version());
        let mut parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        if parsed.0 != version || version.is_none() {
            let (namespace, name) = (self.config_map.namespace(), self.config_map.name());
            let source = format!("ConfigMap {namespace}/{name}");
            let data = config_map.and_then(|c| c.data.clone()).unwrap_or_default();
            let customizations = Customizations::from_data(&source, &data, &self.filters)?
                .with_health_defaults(&self.defaults)?;
            *parsed = (version, customizations);
        }
        Ok(parsed.1.clone())
    }
}
