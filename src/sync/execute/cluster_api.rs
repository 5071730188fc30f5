//! The cluster as the sync executor sees it — the port the engine owns: a small trait of plain
//! operations (apply, replace, get, whether a kind is served, list tracked objects, delete, pods
//! of a workload, which kinds declare a status subresource, clock). Implementations carry no sync decisions, so a real API server
//! ([`crate::cluster::api_server::kube_cluster::KubeCluster`]) and an embedded simulator can both stand
//! behind it.

use std::future::Future;
use std::time::Duration;

use flotilla_generators::cause::Cause;
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use flotilla_core::health::{HealthChecks, StatusKinds};
use flotilla_core::manifest::ObjectKey;

use flotilla_core::sync::{FieldValidation, ResourceAction};

/// The server's answer as people read it, the one format of every API error in Flotilla:
/// `configmaps "web" not found (HTTP 404 NotFound)`.
#[must_use]
pub fn server_message(code: u16, reason: &str, message: &str) -> String {
    match (message.trim(), reason) {
        ("", "") => format!("the server answered HTTP {code}"),
        ("", reason) => format!("the server answered HTTP {code} {reason}"),
        (message, "") => format!("{message} (HTTP {code})"),
        (message, reason) => format!("{message} (HTTP {code} {reason})"),
    }
}

/// The outcome of a server-side apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The object as the server returned it.
    pub object: Value,
    /// Created, configured or unchanged.
    pub action: ResourceAction,
}

/// Whether a delete found the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// Deletion was requested; the object may linger while finalizers or dependents go.
    Requested,
    /// There was nothing to delete.
    AlreadyGone,
}

/// How dependents of a deleted object are removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// The object goes at once; the garbage collector removes its dependents afterwards.
    Background,
    /// The object stays (with a deletion timestamp) until its dependents are gone.
    Foreground,
    /// The object goes; its dependents stay, without it as their owner.
    Orphan,
}

/// A cluster operation that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// The server has no resource type for this apiVersion and kind.
    #[error("the server has no resource type {kind} in {api_version}")]
    UnknownKind {
        /// apiVersion.
        api_version: String,
        /// Kind.
        kind: String,
    },
    /// The server answered with an error status.
    #[error("{}", server_message(*code, reason, message))]
    Rejected {
        /// HTTP status code.
        code: u16,
        /// The server's reason, e.g. `NotFound`, `Invalid`.
        reason: String,
        /// The server's message.
        message: String,
    },
    /// The server could not be reached or its answer not read (`context` says what was being
    /// done; empty when the cause says it all).
    #[error("{}", cause.with_context(context))]
    Unavailable {
        /// What was being done, e.g. `discovery of apps/v1`.
        context: String,
        /// Why it failed.
        #[source]
        cause: Cause,
    },
    /// The cluster did not reach a state the call needs: a watch that has not listed, an object
    /// still there after its deletion.
    #[error("{0}")]
    NotReady(String),
    /// A rejected write was to be redone by deleting and recreating the object
    /// (`Force=true`), and the deletion failed.
    #[error("{rejection}; deleting it to recreate it failed: {deletion}")]
    RecreateFailed {
        /// The write's rejection.
        rejection: Box<ClusterError>,
        /// Why the deletion failed.
        #[source]
        deletion: Box<ClusterError>,
    },
    /// The object is outside what the cluster's Secret lets the controller manage (its
    /// `namespaces` and `clusterResources`): refused before any request.
    #[error(transparent)]
    NotManaged(#[from] flotilla_core::secrets::cluster_scope::NotManaged),
}

impl ClusterError {
    /// The server could not be reached or its answer not read while doing `context`.
    pub fn unavailable(
        context: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Unavailable {
            context: context.into(),
            cause: Cause::new(cause),
        }
    }

    /// Whether the server said the object (or its namespace) does not exist.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Rejected { code: 404, .. })
    }

    /// Whether the server rejected a write because it would change an immutable field (HTTP 422
    /// with a message such as `spec.template: Invalid value: …: field is immutable`).
    #[must_use]
    pub fn is_immutable_field(&self) -> bool {
        matches!(self, Self::Rejected { code: 422, message, .. } if message.contains("immutable"))
    }

    /// Whether the server refused a server-side apply because the object sets a field its schema
    /// does not declare (`.spec.colour: field not declared in schema`, HTTP 500 today), which
    /// `fieldValidation=Ignore` does not turn off for an apply.
    #[must_use]
    pub fn is_undeclared_field(&self) -> bool {
        matches!(self, Self::Rejected { message, .. } if message.contains("field not declared in schema"))
    }
}

/// What the sync executor needs from a cluster.
pub trait ClusterApi: Sync {
    /// Server-side applies `object` (field manager [`flotilla_core::sync::FIELD_MANAGER`], conflicts forced); with
    /// `dry_run` the server validates and answers without persisting; `validation` says how the
    /// server checks its fields.
    fn apply(
        &self,
        object: &Value,
        dry_run: bool,
        validation: FieldValidation,
    ) -> impl Future<Output = Result<Applied, ClusterError>> + Send;

    /// Replaces `object` as a whole (an update without a resourceVersion, field manager
    /// [`flotilla_core::sync::FIELD_MANAGER`]), or creates it when it does not exist, as `kubectl replace` /
    /// `kubectl create` do; with `dry_run` nothing is persisted.
    fn replace(
        &self,
        object: &Value,
        dry_run: bool,
        validation: FieldValidation,
    ) -> impl Future<Output = Result<Applied, ClusterError>> + Send;

    /// Whether the server serves `kind` in `api_version` now (discovery).
    fn served(
        &self,
        api_version: &str,
        kind: &str,
    ) -> impl Future<Output = Result<bool, ClusterError>> + Send;

    /// The live object, or None when it does not exist.
    fn get(
        &self,
        key: &ObjectKey,
    ) -> impl Future<Output = Result<Option<Value>, ClusterError>> + Send;

    /// Every object whose tracking annotation ([`flotilla_core::sync::TRACKING_ANNOTATION`]) names the
    /// Application `app` (the part of the id before its first `:`), of any kind and namespace.
    /// `apiVersion`, `kind` and `metadata` are enough.
    fn list_tracked(
        &self,
        app: &str,
    ) -> impl Future<Output = Result<Vec<Value>, ClusterError>> + Send;

    /// Requests deletion of an object.
    fn delete(
        &self,
        key: &ObjectKey,
        propagation: Propagation,
    ) -> impl Future<Output = Result<Deleted, ClusterError>> + Send;

    /// The pods a workload selects (`spec.selector.matchLabels` in its namespace), for health
    /// messages such as `pod api-7c9 ImagePullBackOff`.
    fn pods_of(
        &self,
        workload: &Value,
    ) -> impl Future<Output = Result<Vec<Value>, ClusterError>> + Send;

    /// The current time.
    fn now(&self) -> Timestamp;

    /// The custom kinds whose CRD declares a status subresource, among the kinds this cluster
    /// has resolved so far.
    fn status_kinds(&self) -> impl Future<Output = StatusKinds> + Send;

    /// `checks` judging this cluster's objects now: its status kinds and its clock.
    fn observing(&self, checks: &HealthChecks) -> impl Future<Output = HealthChecks> + Send {
        async move { checks.observing(self.status_kinds().await, self.now()) }
    }

    /// Waits `duration` on this cluster's clock.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + Send;

    /// Waits before polling `keys` again, whose state the caller last read at `since`: one
    /// `interval`. A cluster that knows when its objects change (the embedded simulator) may
    /// wait whole `interval`s longer while no read of `keys` could differ from one at `since`,
    /// but no further than the first `interval` boundary at or after `limit`; the next poll
    /// then sees exactly what polling every `interval` would have seen first.
    fn wait_for_change(
        &self,
        keys: &[ObjectKey],
        since: Timestamp,
        interval: Duration,
        limit: Duration,
    ) -> impl Future<Output = ()> + Send {
        let _ = (keys, since, limit);
        self.sleep(interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immutable_field_rejections() {
        let rejected = |code, message: &str| ClusterError::Rejected {
            code,
            reason: "Invalid".to_owned(),
            message: message.to_owned(),
        };
        let cases = [
            (
                rejected(
                    422,
                    "Job.batch \"m\" is invalid: spec.template: Invalid value: {}: field is immutable",
                ),
                true,
            ),
            (
                rejected(422, "spec.ports[0].protocol: Unsupported value"),
                false,
            ),
            (rejected(409, "field is immutable"), false),
            (ClusterError::NotReady("immutable".to_owned()), false),
        ];
        for (error, expected) in cases {
            assert_eq!(error.is_immutable_field(), expected, "{error}");
        }
    }

    #[test]
    fn undeclared_field_rejections() {
        let rejected = |code, message: &str| ClusterError::Rejected {
            code,
            reason: String::new(),
            message: message.to_owned(),
        };
        let undeclared = "failed to create typed patch object (ns/w; t.test/v1, Kind=Widget): \
                          .spec.colour: field not declared in schema";
        assert!(rejected(500, undeclared).is_undeclared_field());
        assert!(!rejected(422, "spec.size: Invalid value").is_undeclared_field());
        assert!(!ClusterError::NotReady(undeclared.to_owned()).is_undeclared_field());
    }
}
