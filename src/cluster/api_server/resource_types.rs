//! Resource types of a cluster by apiVersion and kind, discovered lazily one group version at a
//! time (only the group versions a sync names are read, not the whole aggregated document), cached, and
//! re-read once when a kind is missing (a CRD applied by this sync may have become Established).
//! Which discovered custom kinds declare a status subresource ([`ResourceTypes::status_kinds`])
//! is learned from the same discovery: a kind with a `status` subresource whose CRD exists.

use std::collections::HashMap;
use std::sync::Arc;

use flotilla_core::health::StatusKinds;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::GroupVersion;
use kube::discovery::{ApiCapabilities, ApiResource, Scope, pinned_group};
use kube::{Api, Client};
use tokio::sync::Mutex;

use super::api_error::ApiError;
use super::request_count::{RequestCounter, RequestKind};
use crate::sync::execute::cluster_api::ClusterError;

/// A resource type: how to address it and whether it is namespaced.
#[derive(Debug, Clone)]
pub struct ResourceType {
    /// Group, version, kind and plural.
    pub resource: ApiResource,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

/// The resource types of one group version.
type GroupVersionTypes = Arc<Vec<(ApiResource, ApiCapabilities)>>;

/// The cache, shared by concurrent applies; one discovery request per group version.
#[derive(Debug, Default)]
pub struct ResourceTypes {
    by_group_version: Mutex<HashMap<String, GroupVersionTypes>>,
    /// Whether a kind with a status subresource, `(group, kind)`, is served by a CRD.
    custom: Mutex<HashMap<(String, String), bool>>,
}

impl ResourceTypes {
    /// The type of `kind` in `api_version`.
    ///
    /// # Errors
    /// [`ClusterError::UnknownKind`] when the server does not serve it even after a fresh look;
    /// [`ClusterError::Unavailable`] when discovery fails.
    pub async fn resolve(
        &self,
        client: &Client,
        counter: &RequestCounter,
        api_version: &str,
        kind: &str,
    ) -> Result<ResourceType, ClusterError> {
        let unknown = || ClusterError::UnknownKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        };
        let mut cache = self.by_group_version.lock().await;
        if let Some(found) = cache.get(api_version).and_then(|types| find(types, kind)) {
            return Ok(found);
        }
        let group_version: GroupVersion = api_version.parse().map_err(|_| unknown())?;
        counter.add(RequestKind::Discovery, 1);
        let types = match pinned_group(client, &group_version).await {
            Ok(group) => Arc::new(group.versioned_resources(&group_version.version)),
            Err(kube::Error::Api(status)) if status.code == 404 => Arc::new(Vec::new()),
            Err(error) => {
                return Err(ClusterError::unavailable(
                    format!("discovery of {api_version}"),
                    ApiError::from(error),
                ));
            }
        };
        cache.insert(api_version.to_owned(), Arc::clone(&types));
        find(&types, kind).ok_or_else(unknown)
    }

    /// The apiVersion under which `kind` of `group` was already discovered, if any.
    pub async fn known_version(&self, group: &str, kind: &str) -> Option<String> {
        let cache = self.by_group_version.lock().await;
        cache
            .values()
            .flat_map(|types| types.iter())
            .find(|(resource, _)| resource.group == group && resource.kind == kind)
            .map(|(resource, _)| resource.api_version.clone())
    }
}

impl ResourceTypes {
    /// The discovered custom kinds whose CRD declares a status subresource: each kind
    /// discovery lists with a `status` subresource in a group with a dot is looked up once as
    /// `customresourcedefinitions/<plural>.<group>` (built-in and aggregated kinds have none; a
    /// CRD that cannot be read counts as none).
    pub async fn status_kinds(&self, client: &Client, counter: &RequestCounter) -> StatusKinds {
        let candidates: Vec<ApiResource> = {
            let cache = self.by_group_version.lock().await;
            cache
                .values()
                .flat_map(|types| types.iter())
                .filter(|(resource, capabilities)| {
                    resource.group.contains('.')
                        && capabilities
                            .subresources
                            .iter()
                            .any(|(sub, _)| sub.plural == "status")
                })
                .map(|(resource, _)| resource.clone())
                .collect()
        };
        let mut custom = self.custom.lock().await;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for resource in candidates {
            let key = (resource.group.clone(), resource.kind.clone());
            if custom.contains_key(&key) {
                continue;
            }
            counter.add(RequestKind::Get, 1);
            let name = format!("{}.{}", resource.plural, resource.group);
            match crds.get_metadata_opt(&name).await {
                Ok(found) => {
                    custom.insert(key, found.is_some());
                }
                // Not allowed to read CRDs (a namespaced controller): a group outside
                // Kubernetes' own counts as custom.
                Err(kube::Error::Api(status)) if status.code == 403 => {
                    let custom_group = !resource.group.ends_with(".k8s.io");
                    custom.insert(key, custom_group);
                }
                // Asked again next time.
                Err(error) => {
                    tracing::debug!(crd = %name, %error, "cannot read the CRD; not awaiting status");
                }
            }
        }
        StatusKinds::new(
            custom
                .iter()
                .filter(|(_, declares)| **declares)
                .map(|(key, _)| key.clone()),
        )
    }
}

fn find(types: &[(ApiResource, ApiCapabilities)], kind: &str) -> Option<ResourceType> {
    types
        .iter()
        .find(|(resource, _)| resource.kind == kind)
        .map(|(resource, capabilities)| ResourceType {
            resource: resource.clone(),
            namespaced: capabilities.scope == Scope::Namespaced,
        })
}
