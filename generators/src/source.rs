//! The data sources generators read, injected as traits so generation stays pure: the cluster
//! inventory (what Argo CD keeps in cluster Secrets), read access to git trees at a commit, the
//! objects of the ApplicationSet's namespace (ConfigMaps, Secrets, custom resources), the
//! plugin services of plugin generators and the REST APIs of SCM providers (pullRequest
//! and scmProvider generators). Implementations (Kubernetes, a git client, HTTP,
//! in-memory fakes) live with their callers; [`Offline`] stands in where there is no cluster.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cause::Cause;

/// Name of the implicit cluster the controller runs in.
pub const IN_CLUSTER_NAME: &str = "in-cluster";

/// API server address of the implicit cluster the controller runs in.
pub const IN_CLUSTER_SERVER: &str = "https://kubernetes.default.svc";

/// One cluster a clusters generator can target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cluster {
    pub name: String,
    pub server: String,
    /// The Argo CD project the cluster is restricted to, if any.
    pub project: Option<String>,
    /// Labels of the cluster's Secret; what `selector` matches.
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

impl Cluster {
    /// The implicit `in-cluster` entry: included when no registered cluster has the in-cluster
    /// server address; it has no labels, so only a selector-less clusters generator lists it.
    #[must_use]
    pub fn in_cluster() -> Self {
        Self {
            name: IN_CLUSTER_NAME.to_string(),
            server: IN_CLUSTER_SERVER.to_string(),
            ..Self::default()
        }
    }
}

/// The cluster inventory could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot list clusters: {message}")]
pub struct InventoryError {
    pub message: String,
}

/// The clusters registered with the controller.
pub trait ClusterInventory: Send + Sync {
    /// Every registered cluster, in a stable order.
    ///
    /// # Errors
    /// The inventory cannot be read.
    fn clusters(&self) -> Result<Vec<Cluster>, InventoryError>;
}

/// A git read that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    #[error("revision {revision:?} not found")]
    RevisionNotFound { revision: String },
    #[error("file {path} not found at commit {commit}")]
    FileNotFound { commit: String, path: String },
    /// The repository is not available (not mapped, no such commit).
    #[error("{message}")]
    Unavailable { message: String },
    /// Reading the repository failed (network, credentials, corrupt data); `context` says what
    /// was being read, empty when the cause says it all.
    #[error("{}", cause.with_context(context))]
    Read {
        context: String,
        #[source]
        cause: Cause,
    },
}

impl GitError {
    /// Reading failed with `error` while doing `context` (empty when the error says it all).
    pub fn read(
        context: impl Into<String>,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Read {
            context: context.into(),
            cause: Cause::new(error),
        }
    }
}

/// Read access to git repositories: resolve a revision to a commit, then list and read the tree
/// at that commit, so one generation sees one consistent snapshot.
pub trait GitReader: Send + Sync {
    /// The commit sha `revision` (branch, tag, sha; empty for `HEAD`) points to, fetched with the
    /// credentials of `project` (the ApplicationSet template's project, when not templated: a
    /// repository Secret scoped to it is used, as for its Applications), else unscoped ones.
    ///
    /// # Errors
    /// Unknown revision, unreachable repository.
    fn resolve(
        &self,
        repo_url: &str,
        revision: &str,
        project: Option<&str>,
    ) -> Result<String, GitError>;

    /// Every blob path (`apps/a/config.json`) in the tree of `commit`, relative to the root.
    ///
    /// # Errors
    /// Unreachable repository, unknown commit.
    fn list_files(&self, repo_url: &str, commit: &str) -> Result<Vec<String>, GitError>;

    /// The content of the blob at `path` in the tree of `commit`.
    ///
    /// # Errors
    /// Missing file, unreachable repository.
    fn read_file(&self, repo_url: &str, commit: &str, path: &str) -> Result<Vec<u8>, GitError>;
}

/// An object of the ApplicationSet's namespace could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectsError {
    #[error("{kind} {name} not found")]
    NotFound { kind: String, name: String },
    #[error("{kind} {name} has no key {key:?}")]
    MissingKey {
        kind: String,
        name: String,
        key: String,
    },
    /// The object cannot be read as asked (not UTF-8, no such kind offline).
    #[error("{message}")]
    Unavailable { message: String },
    /// The API server could not be asked (network, permissions, unknown kind), or its answer
    /// not read; `context` says what was being read.
    #[error("{}", cause.with_context(context))]
    Read {
        context: String,
        #[source]
        cause: Cause,
    },
}

/// Read access to the ApplicationSet's namespace: what plugin and clusterDecisionResource
/// generators name.
pub trait NamespaceObjects: Send + Sync {
    /// The `data` of ConfigMap `name`.
    ///
    /// # Errors
    /// Missing ConfigMap, unreachable API server.
    fn config_map(&self, name: &str) -> Result<BTreeMap<String, String>, ObjectsError>;

    /// The decoded value of `key` in Secret `name`.
    ///
    /// # Errors
    /// Missing Secret or key, unreachable API server.
    fn secret_value(&self, name: &str, key: &str) -> Result<String, ObjectsError>;

    /// Every object of `kind` in `api_version` (`group/version`, or `v1`), as JSON, in a stable
    /// order.
    ///
    /// # Errors
    /// Unknown kind, unreachable API server.
    fn list(&self, api_version: &str, kind: &str) -> Result<Vec<Value>, ObjectsError>;
}

/// A plugin service could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginCallError {
    /// No connection can be made (no host, no TLS configuration, no cluster).
    #[error("cannot connect: {message}")]
    Connect { message: String },
    /// Connecting or exchanging the request failed; `context` says at which step, empty when
    /// the cause says it all.
    #[error("cannot connect: {}", cause.with_context(context))]
    Unreachable {
        context: String,
        #[source]
        cause: Cause,
    },
    #[error("no answer within {seconds} s")]
    Timeout { seconds: u64 },
    #[error("answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("answered invalid JSON: {cause}")]
    InvalidJson {
        #[source]
        cause: Cause,
    },
}

/// Asks plugin services (Argo CD's `getparams.execute` protocol).
pub trait PluginService: Send + Sync {
    /// POSTs `body` as JSON to `url` with `Authorization: Bearer <token>` and returns the parsed
    /// JSON answer.
    ///
    /// # Errors
    /// Connection failure, timeout, a status other than 200, an answer that is not JSON.
    fn call(&self, url: &str, token: &str, body: &Value) -> Result<Value, PluginCallError>;
}

/// One answer of an SCM provider's REST API: status, headers (names in lower case) and body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpAnswer {
    /// The value of header `name` (lower case), the first when there are several.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// An SCM provider's API could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScmCallError {
    /// No request can be made (an invalid URL, no TLS configuration, no network access).
    #[error("{message}")]
    Unusable { message: String },
    /// Connecting or exchanging the request failed.
    #[error("no answer: {message}")]
    Unreachable { message: String },
    #[error("no answer within {seconds} s")]
    Timeout { seconds: u64 },
}

/// GETs from SCM providers' REST APIs (GitHub, GitLab, Gitea, Bitbucket Server), for the
/// pullRequest and scmProvider generators.
pub trait ScmApi: Send + Sync {
    /// Whether providers can be asked at all; checked before a generator reads its token.
    ///
    /// # Errors
    /// No network access here (`flotilla render`, `simulate`).
    fn available(&self) -> Result<(), ScmCallError> {
        Ok(())
    }

    /// GETs `url` with `headers` and returns the whole answer, whatever its status.
    /// `insecure` accepts any certificate of an `https://` server, as Argo CD's `insecure: true`.
    ///
    /// # Errors
    /// No connection, a timeout.
    fn get(
        &self,
        url: &str,
        headers: &[(String, String)],
        insecure: bool,
    ) -> Result<HttpAnswer, ScmCallError>;
}

/// The data sources of a generation without cluster access (`flotilla render`): every read is an
/// error saying so.
pub struct Offline;

const OFFLINE: &str = "not available without a cluster (flotilla render reads files only)";

impl NamespaceObjects for Offline {
    fn config_map(&self, _: &str) -> Result<BTreeMap<String, String>, ObjectsError> {
        Err(offline())
    }

    fn secret_value(&self, _: &str, _: &str) -> Result<String, ObjectsError> {
        Err(offline())
    }

    fn list(&self, _: &str, _: &str) -> Result<Vec<Value>, ObjectsError> {
        Err(offline())
    }
}

impl PluginService for Offline {
    fn call(&self, _: &str, _: &str, _: &Value) -> Result<Value, PluginCallError> {
        Err(PluginCallError::Connect {
            message: OFFLINE.to_string(),
        })
    }
}

impl ScmApi for Offline {
    fn available(&self) -> Result<(), ScmCallError> {
        Err(offline_scm())
    }

    fn get(&self, _: &str, _: &[(String, String)], _: bool) -> Result<HttpAnswer, ScmCallError> {
        Err(offline_scm())
    }
}

const OFFLINE_SCM: &str = "pullRequest and scmProvider generators ask the provider's API \
     over the network, which flotilla render and simulate do not (they read files only)";

fn offline_scm() -> ScmCallError {
    ScmCallError::Unusable {
        message: OFFLINE_SCM.to_string(),
    }
}

fn offline() -> ObjectsError {
    ObjectsError::Unavailable {
        message: OFFLINE.to_string(),
    }
}
