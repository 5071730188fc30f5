//! The CLI's [`OperationStore`]: a ConfigMap `flotilla-operation-<app>` in the destination
//! namespace holding the operation as JSON under `operation.json`, written by server-side apply.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};

use crate::sync::execute::{OperationStore, StoreError};
use flotilla_core::sync::OperationState;

use super::api_error::ApiError;
use flotilla_core::sync::FIELD_MANAGER;

/// The data key holding the operation.
pub const OPERATION_KEY: &str = "operation.json";

/// A ConfigMap holding one Application's operation.
pub struct ConfigMapStore {
    api: Api<ConfigMap>,
    namespace: String,
    name: String,
}

impl ConfigMapStore {
    /// The store of `app` in `namespace`.
    #[must_use]
    pub fn new(client: Client, namespace: &str, app: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: format!("flotilla-operation-{app}"),
        }
    }

    fn error(&self, message: impl ToString) -> StoreError {
        StoreError {
            location: format!("ConfigMap {}/{}", self.namespace, self.name),
            message: message.to_string(),
        }
    }
}

impl OperationStore for ConfigMapStore {
    async fn load(&self) -> Result<Option<OperationState>, StoreError> {
        let Some(config_map) = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.error(ApiError::from(e)))?
        else {
            return Ok(None);
        };
        let Some(text) = config_map.data.as_ref().and_then(|d| d.get(OPERATION_KEY)) else {
            return Ok(None);
        };
        serde_json::from_str(text)
            .map(Some)
            .map_err(|e| self.error(format!("{OPERATION_KEY}: {e}")))
    }

    async fn save(&self, state: &OperationState) -> Result<(), StoreError> {
        let text = serde_json::to_string(state).map_err(|e| self.error(e))?;
        let config_map = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "data": {OPERATION_KEY: text},
        });
        let params = PatchParams::apply(FIELD_MANAGER).force();
        match self
            .api
            .patch(&self.name, &params, &Patch::Apply(&config_map))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                tracing::debug!(namespace = %self.namespace, "namespace does not exist yet; operation state not stored");
                Ok(())
            }
            Err(error) => Err(self.error(ApiError::from(error))),
        }
    }
}
