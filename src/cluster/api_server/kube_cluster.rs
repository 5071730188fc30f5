//! [`ClusterApi`] on a real API server through one reused kube client: server-side apply with
//! the field manager `flotilla` (forced), every write (dry runs too) with strict field validation
//! (an unknown or duplicate field is refused, naming it, as `kubectl apply` and Argo CD's default
//! `--validate=strict` do, instead of being dropped; a `Validate=false` write asks for them to be
//! dropped, as `--validate=false` does), dynamic objects addressed through lazily discovered
//! resource types, tracked objects read from a [`TrackedCache`] of watches, and a count of every
//! request made. An object outside the cluster's [`ClusterScope`] (its Secret's `namespaces` and
//! `clusterResources`) is refused before any request for it. No sync decisions here.

use std::sync::OnceLock;
use std::time::Duration;

use flotilla_core::health::StatusKinds;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, PropagationPolicy,
};
use kube::client::Body;
use kube::core::Status;
use kube::{Client, Resource};
use serde_json::Value;

use flotilla_core::manifest::ObjectKey;
use flotilla_core::secrets::cluster_scope::ClusterScope;
use flotilla_core::sync::{FieldValidation, ResourceAction};

use super::api_error::ApiError;
use super::request_count::{RequestCounter, RequestCounts, RequestKind};
use super::resource_types::{ResourceType, ResourceTypes};
use crate::cluster::tracked::tracked_cache::{Touched, TrackedCache, WatchSize};
use crate::sync::execute::cluster_api::{Applied, ClusterApi, ClusterError, Deleted, Propagation};
use flotilla_core::sync::FIELD_MANAGER;

/// A cluster reached through a kubeconfig.
pub struct KubeCluster {
    client: Client,
    types: ResourceTypes,
    counter: RequestCounter,
    tracked: TrackedCache,
    /// What the controller may manage here, and how refusals name the cluster.
    scope: ClusterScope,
    label: String,
    /// The Kubernetes version the API server reported, once read.
    version: OnceLock<String>,
}

impl KubeCluster {
    /// Wraps an existing client; every namespace and kind is managed.
    #[must_use]
    pub fn new(client: Client) -> Self {
        Self {
            client,
            types: ResourceTypes::default(),
            counter: RequestCounter::default(),
            tracked: TrackedCache::default(),
            scope: ClusterScope::default(),
            label: String::new(),
            version: OnceLock::new(),
        }
    }

    /// Wraps an existing client for the cluster `label`, managing only what `scope` lets it
    /// (its watches too); changes of tracked objects are announced to `touched` (see
    /// [`TrackedCache`]).
    #[must_use]
    pub fn announcing(client: Client, touched: Touched, label: &str, scope: ClusterScope) -> Self {
        Self {
            tracked: TrackedCache::announcing(touched, scope.clone()),
            scope,
            label: label.to_owned(),
            ..Self::new(client)
        }
    }

    /// Refuses an object `scope` does not manage (`namespace` None: cluster-scoped).
    fn in_scope(
        &self,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<(), ClusterError> {
        Ok(self.scope.check(&self.label, kind, name, namespace)?)
    }

    /// The client, for callers that need typed APIs (e.g. the operation store).
    #[must_use]
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The requests made so far.
    #[must_use]
    pub fn request_counts(&self) -> RequestCounts {
        self.counter.snapshot()
    }

    /// Reads the Kubernetes version of the API server unless read already; a failure is
    /// tried again on the next call (the version only labels metrics).
    pub async fn read_version(&self) {
        if self.version.get().is_none()
            && let Ok(info) = self.client.apiserver_version().await
        {
            let _ = self.version.set(info.git_version);
        }
    }

    /// The Kubernetes version read (e.g. `v1.33.1`), empty before.
    #[must_use]
    pub fn version(&self) -> &str {
        self.version.get().map_or("", String::as_str)
    }

    /// What a Config Management Plugin is told of this cluster: its version (the API versions
    /// it serves are not read).
    #[must_use]
    pub fn capabilities(&self) -> flotilla_core::cmp::KubeCapabilities {
        flotilla_core::cmp::KubeCapabilities {
            version: self.version().to_owned(),
            api_versions: Vec::new(),
        }
    }

    /// What its watches of tracked objects hold.
    #[must_use]
    pub fn watch_size(&self) -> WatchSize {
        self.tracked.size()
    }

    /// The objects tracked by `app` (their tracking id starts with `<app>:`), with
    /// `apiVersion`, `kind` and `metadata`; `kinds` (group, kind) are the kinds `app` deploys, so
    /// that a kind the watches do not cover yet is discovered.
    ///
    /// # Errors
    /// See [`TrackedCache::read`].
    pub async fn tracked_by(
        &self,
        app: &str,
        kinds: &[(String, String)],
    ) -> Result<Vec<Value>, ClusterError> {
        self.tracked
            .read(&self.client, &self.counter, app, kinds)
            .await
    }

    async fn resource_type(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<ResourceType, ClusterError> {
        self.types
            .resolve(&self.client, &self.counter, api_version, kind)
            .await
    }

    /// The plural resource name of `key`'s kind (from discovery), as RBAC rules name it.
    ///
    /// # Errors
    /// Discovery fails or the server does not serve the kind.
    pub async fn plural(&self, key: &ObjectKey) -> Result<String, ClusterError> {
        let api_version = self.preferred_api_version(key).await?;
        let found = self.resource_type(&api_version, &key.kind).await?;
        Ok(found.resource.plural)
    }

    async fn api_for(&self, key: &ObjectKey) -> Result<Api<DynamicObject>, ClusterError> {
        let api_version = self.preferred_api_version(key).await?;
        let found = self.resource_type(&api_version, &key.kind).await?;
        let namespace = key.namespace.as_deref().filter(|_| found.namespaced);
        self.in_scope(&key.kind, &key.name, scoped(&found, namespace))?;
        Ok(self.api(&found, namespace))
    }

    fn api(&self, found: &ResourceType, namespace: Option<&str>) -> Api<DynamicObject> {
        match (found.namespaced, namespace) {
            (true, Some(namespace)) => {
                Api::namespaced_with(self.client.clone(), namespace, &found.resource)
            }
            _ => Api::all_with(self.client.clone(), &found.resource),
        }
    }

    /// An [`ObjectKey`] names a group, not a version: the first version the server lists for the
    /// group (its preferred one) is used.
    async fn preferred_api_version(&self, key: &ObjectKey) -> Result<String, ClusterError> {
        if key.group.is_empty() {
            return Ok("v1".to_owned());
        }
        if let Some(version) = self.types.known_version(&key.group, &key.kind).await {
            return Ok(version);
        }
        self.counter.add(RequestKind::Discovery, 1);
        let group = kube::discovery::group(&self.client, &key.group)
            .await
            .map_err(|error| match error {
                kube::Error::Api(status) if status.code == 404 => ClusterError::UnknownKind {
                    api_version: key.group.clone(),
                    kind: key.kind.clone(),
                },
                error => ClusterError::unavailable(
                    format!("discovery of {}", key.group),
                    ApiError::from(error),
                ),
            })?;
        Ok(format!(
            "{}/{}",
            key.group,
            group.preferred_version_or_latest()
        ))
    }
}

impl KubeCluster {
    /// The resource type and collection URL of an object, with its name.
    async fn address(&self, object: &Value) -> Result<(String, String), ClusterError> {
        let field = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        let metadata = object.get("metadata");
        let text = |name: &str| metadata.and_then(|m| m.get(name)).and_then(Value::as_str);
        let found = self.resource_type(api_version, kind).await?;
        let namespace = text("namespace").filter(|_| found.namespaced);
        let name = text("name").unwrap_or("");
        self.in_scope(kind, name, scoped(&found, namespace))?;
        let url = DynamicObject::url_path(&found.resource, namespace);
        Ok((url, name.to_owned()))
    }

    /// Sends a write (counted as an apply request) and reads the object it returns; the action
    /// is Created on HTTP 201, else
    /// Configured when our managed-fields entry was written by it, else Unchanged.
    async fn write(
        &self,
        url: &str,
        name: &str,
        write: Write<'_>,
        validation: FieldValidation,
    ) -> Result<Applied, ClusterError> {
        let request = kube::core::Request::new(url);
        let request = match write {
            Write::Apply(params, object) => request.patch(name, params, &Patch::Apply(object)),
            Write::Replace(params, body) => request.replace(name, params, body),
            Write::Create(params, body) => request.create(params, body),
        }
        .map_err(|error| ClusterError::unavailable("building the request", error))?;
        let request = validated(request, validation)?;
        self.counter.add(RequestKind::Apply, 1);
        let started = Timestamp::now();
        let response = self
            .client
            .send(request.map(Body::from))
            .await
            .map_err(from_kube)?;
        let code = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect_bytes()
            .await
            .map_err(|error| ClusterError::unavailable("", error))?;
        if code >= 400 {
            return Err(rejected(code, &bytes));
        }
        let object: Value = serde_json::from_slice(&bytes)
            .map_err(|error| ClusterError::unavailable("reading the answer", error))?;
        let action = if code == 201 {
            ResourceAction::Created
        } else if applied_since(&object, started) {
            ResourceAction::Configured
        } else {
            ResourceAction::Unchanged
        };
        Ok(Applied { object, action })
    }
}

/// `request` with `fieldValidation` added to its query (kube's `PostParams` has no such field, so
/// creates and updates get it here, like applies).
fn validated(
    request: http::Request<Vec<u8>>,
    validation: FieldValidation,
) -> Result<http::Request<Vec<u8>>, ClusterError> {
    let (mut parts, body) = request.into_parts();
    let separator = if parts.uri.query().is_some() {
        '&'
    } else {
        '?'
    };
    parts.uri = format!(
        "{}{separator}fieldValidation={}",
        parts.uri,
        validation.as_str()
    )
    .parse()
    .map_err(|error| ClusterError::unavailable("building the request", error))?;
    Ok(http::Request::from_parts(parts, body))
}

impl KubeCluster {
    /// Shows a persisted write to the tracked objects at once (reads after a sync see it).
    fn record(&self, applied: &Applied, dry_run: bool) {
        if !dry_run {
            self.tracked.record(&applied.object);
        }
    }
}

/// A write request.
enum Write<'o> {
    /// Server-side apply (PATCH).
    Apply(&'o PatchParams, &'o Value),
    /// Update of the whole object (PUT).
    Replace(&'o PostParams, Vec<u8>),
    /// Creation (POST).
    Create(&'o PostParams, Vec<u8>),
}

impl ClusterApi for KubeCluster {
    async fn apply(
        &self,
        object: &Value,
        dry_run: bool,
        validation: FieldValidation,
    ) -> Result<Applied, ClusterError> {
        let (url, name) = self.address(object).await?;
        let mut params = PatchParams::apply(FIELD_MANAGER).force();
        params.dry_run = dry_run;
        let applied = self
            .write(&url, &name, Write::Apply(&params, object), validation)
            .await?;
        self.record(&applied, dry_run);
        Ok(applied)
    }

    async fn replace(
        &self,
        object: &Value,
        dry_run: bool,
        validation: FieldValidation,
    ) -> Result<Applied, ClusterError> {
        let (url, name) = self.address(object).await?;
        let params = PostParams {
            dry_run,
            field_manager: Some(FIELD_MANAGER.to_owned()),
        };
        let body = serde_json::to_vec(object)
            .map_err(|error| ClusterError::unavailable(format!("encoding {name}"), error))?;
        let applied = match self
            .write(
                &url,
                &name,
                Write::Replace(&params, body.clone()),
                validation,
            )
            .await
        {
            Err(error) if error.is_not_found() => {
                self.write(&url, &name, Write::Create(&params, body), validation)
                    .await
            }
            result => result,
        }?;
        self.record(&applied, dry_run);
        Ok(applied)
    }

    async fn served(&self, api_version: &str, kind: &str) -> Result<bool, ClusterError> {
        match self.resource_type(api_version, kind).await {
            Ok(_) => Ok(true),
            Err(ClusterError::UnknownKind { .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }

    async fn get(&self, key: &ObjectKey) -> Result<Option<Value>, ClusterError> {
        let api = self.api_for(key).await?;
        self.counter.add(RequestKind::Get, 1);
        let object = api.get_opt(&key.name).await.map_err(from_kube)?;
        object
            .map(serde_json::to_value)
            .transpose()
            .map_err(|error| ClusterError::unavailable("", error))
    }

    async fn list_tracked(&self, app: &str) -> Result<Vec<Value>, ClusterError> {
        self.tracked
            .read(&self.client, &self.counter, app, &[])
            .await
    }

    async fn delete(
        &self,
        key: &ObjectKey,
        propagation: Propagation,
    ) -> Result<Deleted, ClusterError> {
        let api = self.api_for(key).await?;
        let params = DeleteParams {
            propagation_policy: Some(match propagation {
                Propagation::Background => PropagationPolicy::Background,
                Propagation::Foreground => PropagationPolicy::Foreground,
                Propagation::Orphan => PropagationPolicy::Orphan,
            }),
            ..DeleteParams::default()
        };
        self.counter.add(RequestKind::Delete, 1);
        match api.delete(&key.name, &params).await {
            Ok(_) => Ok(Deleted::Requested),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(Deleted::AlreadyGone),
            Err(error) => Err(from_kube(error)),
        }
    }

    async fn pods_of(&self, workload: &Value) -> Result<Vec<Value>, ClusterError> {
        let Some(namespace) = workload
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        else {
            return Ok(Vec::new());
        };
        let Some(labels) = workload
            .pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object)
        else {
            return Ok(Vec::new());
        };
        let selector: Vec<String> = labels
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
            .collect();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        self.counter.add(RequestKind::List, 1);
        let pods = api
            .list(&ListParams::default().labels(&selector.join(",")))
            .await
            .map_err(from_kube)?;
        pods.items
            .into_iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()
            .map_err(|error| ClusterError::unavailable("", error))
    }

    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    async fn status_kinds(&self) -> StatusKinds {
        self.types.status_kinds(&self.client, &self.counter).await
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// The namespace a scope check judges: None for a cluster-scoped type, the object's (empty when
/// it has none) for a namespaced one.
fn scoped<'a>(found: &ResourceType, namespace: Option<&'a str>) -> Option<&'a str> {
    found.namespaced.then(|| namespace.unwrap_or_default())
}

/// Whether flotilla's managed-fields entry was written at or after `started` (second
/// resolution): a no-op apply leaves it untouched.
fn applied_since(object: &Value, started: Timestamp) -> bool {
    let started = started.as_second();
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|entry| entry.get("manager").and_then(Value::as_str) == Some(FIELD_MANAGER))
        .filter_map(|entry| entry.get("time").and_then(Value::as_str))
        .filter_map(|time| time.parse::<Timestamp>().ok())
        .any(|time| time.as_second() >= started)
}

fn rejected(code: u16, body: &[u8]) -> ClusterError {
    match serde_json::from_slice::<Status>(body) {
        Ok(status) => ClusterError::Rejected {
            code,
            reason: status.reason,
            message: status.message,
        },
        Err(_) => ClusterError::Rejected {
            code,
            reason: String::new(),
            message: String::from_utf8_lossy(body).trim().to_owned(),
        },
    }
}

fn from_kube(error: kube::Error) -> ClusterError {
    match error {
        kube::Error::Api(status) => ClusterError::Rejected {
            code: status.code,
            reason: status.reason,
            message: status.message,
        },
        error => ClusterError::unavailable("", ApiError::from(error)),
    }
}
