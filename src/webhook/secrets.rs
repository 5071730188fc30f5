//! The Secret holding the webhooks' shared secrets (Argo CD's `argocd-secret` by default, with
//! its keys `webhook.github.secret`, …), kept by a watch of that one Secret: a webhook costs no
//! API request, and a changed secret applies once the watch delivers it. A missing Secret holds
//! no secrets (every webhook is then refused, naming the key).

use k8s_openapi::api::core::v1::Secret;
use kube::Client;

use super::signature::WebhookSecrets;
use crate::cluster::watches::watched_object::{WatchError, WatchedObject};

/// The watched webhook Secret of one namespace.
pub struct WebhookSecretSource(WatchedObject<Secret>);

impl WebhookSecretSource {
    /// The Secret `name` of `namespace`, read through `client`.
    #[must_use]
    pub fn new(client: Client, namespace: &str, name: &str) -> Self {
        Self(WatchedObject::new(
            client,
            namespace,
            name,
            "the webhook Secret",
        ))
    }

    /// The Secret's name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// The Secret's keys and values now (none when it does not exist).
    ///
    /// # Errors
    /// The watch has not listed in time (say, reading Secrets is forbidden).
    pub async fn current(&self) -> Result<WebhookSecrets, WatchError> {
        Ok(self
            .0
            .current()
            .await?
            .iter()
            .flat_map(|secret| secret.data.iter().flatten())
            .map(|(key, value)| (key.clone(), value.0.clone()))
            .collect())
    }
}
