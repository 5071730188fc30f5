//! The data sources generators read, injected as traits so generation stays pure: the cluster
//! inventory (what Argo CD keeps in cluster Secrets) and read access to git trees at a commit.
//! Implementations (Kubernetes, a git client, in-memory fakes) live with their callers.

use std::collections::BTreeMap;

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
    /// The repository could not be reached or read (network, credentials, corrupt data).
    #[error("{message}")]
    Unavailable { message: String },
}

/// Read access to git repositories: resolve a revision to a commit, then list and read the tree
/// at that commit, so one generation sees one consistent snapshot.
pub trait GitReader: Send + Sync {
    /// The commit sha `revision` (branch, tag, sha; empty for `HEAD`) points to.
    ///
    /// # Errors
    /// Unknown revision, unreachable repository.
    fn resolve(&self, repo_url: &str, revision: &str) -> Result<String, GitError>;

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
