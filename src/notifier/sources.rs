//! The objects each notifier pass reads: the `flotilla-notifications` ConfigMap and Secret, and
//! Argo CD's `argocd-notifications-cm` and `argocd-notifications-secret`, each kept by a watch of
//! that one object. A pass runs after every change of an Application (2,000 of them change
//! several times a second during a rollout), so reading them there would spend most of the
//! client's request rate on four GETs a pass.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;

use crate::cluster::watches::watched_object::{WatchError, WatchedObject};
use flotilla_core::notify::argo::config as argo;
use flotilla_core::notify::config as native;

/// The watched objects of one namespace's notifier.
pub struct NotificationSources {
    pub config: WatchedObject<ConfigMap>,
    pub secret: WatchedObject<Secret>,
    pub argo_config: WatchedObject<ConfigMap>,
    pub argo_secret: WatchedObject<Secret>,
}

impl NotificationSources {
    /// The objects of `namespace`, read through `client` (each watch starts on first use).
    #[must_use]
    pub fn new(client: &Client, namespace: &str) -> Self {
        Self {
            config: WatchedObject::new(
                client.clone(),
                namespace,
                native::CONFIG_MAP,
                "the notifications ConfigMap",
            ),
            secret: WatchedObject::new(
                client.clone(),
                namespace,
                native::SECRET,
                "the notifications Secret",
            ),
            argo_config: WatchedObject::new(
                client.clone(),
                namespace,
                argo::CONFIG_MAP,
                "the Argo CD notifications ConfigMap",
            ),
            argo_secret: WatchedObject::new(
                client.clone(),
                namespace,
                argo::SECRET,
                "the Argo CD notifications Secret",
            ),
        }
    }
}

/// The keys of the watched Secret `secret` and their values as text (none when it does not
/// exist), as `$key` references read them.
///
/// # Errors
/// Its watch has not listed.
pub async fn secret_text(
    secret: &WatchedObject<Secret>,
) -> Result<BTreeMap<String, String>, WatchError> {
    Ok(secret
        .current()
        .await?
        .iter()
        .flat_map(|s| s.data.iter().flatten())
        .map(|(key, value)| (key.clone(), String::from_utf8_lossy(&value.0).into_owned()))
        .collect())
}
