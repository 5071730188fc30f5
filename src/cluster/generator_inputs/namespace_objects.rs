//! The objects of an ApplicationSet's namespace that plugin and clusterDecisionResource
//! generators read (ConfigMaps, Secrets, custom resources of any kind through the dynamic API),
//! read from the API server. Generation is synchronous and runs on a blocking thread, so each
//! read blocks that thread on the runtime the controller runs on. Every kind listed is handed to
//! the controller's [`DecisionWatches`], so that changes of its objects regenerate.

use std::collections::BTreeMap;
use std::sync::Arc;

use flotilla_generators::cause::Cause;
use flotilla_generators::source::{NamespaceObjects, ObjectsError};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DynamicObject, GroupVersionKind, ListParams};
use kube::discovery::pinned_kind;
use kube::{Api, Client, ResourceExt};
use serde_json::Value;
use tokio::runtime::Handle;

use crate::cluster::generator_inputs::decision_watches::DecisionWatches;

/// [`NamespaceObjects`] over the API server, for `namespace`.
pub struct KubeNamespaceObjects {
    client: Client,
    namespace: String,
    runtime: Handle,
    watches: Arc<DecisionWatches>,
}

impl KubeNamespaceObjects {
    /// Reads in `namespace` with `client`; blocking calls run on `runtime`; listed kinds are
    /// watched by `watches`. Use only from a blocking thread (`spawn_blocking`), never from an
    /// async task.
    #[must_use]
    pub fn new(
        client: Client,
        namespace: String,
        runtime: Handle,
        watches: Arc<DecisionWatches>,
    ) -> Self {
        Self {
            client,
            namespace,
            runtime,
            watches,
        }
    }

    fn get<K>(&self, kind: &str, name: &str) -> Result<K, ObjectsError>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), &self.namespace);
        match self.runtime.block_on(api.get_opt(name)) {
            Ok(Some(object)) => Ok(object),
            Ok(None) => Err(ObjectsError::NotFound {
                kind: kind.into(),
                name: name.into(),
            }),
            Err(error) => Err(unavailable(kind, name, error)),
        }
    }
}

impl NamespaceObjects for KubeNamespaceObjects {
    fn config_map(&self, name: &str) -> Result<BTreeMap<String, String>, ObjectsError> {
        let config_map: ConfigMap = self.get("ConfigMap", name)?;
        Ok(config_map.data.unwrap_or_default())
    }

    fn secret_value(&self, name: &str, key: &str) -> Result<String, ObjectsError> {
        let secret: Secret = self.get("Secret", name)?;
        let missing = || ObjectsError::MissingKey {
            kind: "Secret".into(),
            name: name.into(),
            key: key.into(),
        };
        let bytes = secret
            .data
            .unwrap_or_default()
            .remove(key)
            .ok_or_else(missing)?;
        String::from_utf8(bytes.0).map_err(|_| ObjectsError::Unavailable {
            message: format!("Secret {name}: key {key:?} is not UTF-8 text"),
        })
    }

    fn list(&self, api_version: &str, kind: &str) -> Result<Vec<Value>, ObjectsError> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let listed = self.runtime.block_on(async {
            let (resource, _) = pinned_kind(&self.client, &gvk).await?;
            self.watches.ensure(&resource, &self.runtime);
            let api: Api<DynamicObject> =
                Api::namespaced_with(self.client.clone(), &self.namespace, &resource);
            api.list(&ListParams::default()).await
        });
        let mut items = listed
            .map_err(|error| unavailable(kind, api_version, error))?
            .items;
        items.sort_by_key(ResourceExt::name_any);
        items
            .into_iter()
            .map(|item| {
                serde_json::to_value(item).map_err(|error| ObjectsError::Read {
                    context: kind.to_owned(),
                    cause: Cause::new(error),
                })
            })
            .collect()
    }
}

fn unavailable(kind: &str, name: &str, error: kube::Error) -> ObjectsError {
    ObjectsError::Read {
        context: format!("reading {kind} {name}"),
        cause: Cause::new(error),
    }
}
