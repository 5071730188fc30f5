//! Which cluster an Application's `destination` names: `server` or `name` looked up among the
//! registered cluster Secrets; the in-cluster address and name work without a Secret (a Secret
//! registering the in-cluster address names it, but the controller's own client reaches it).
//! Pure.

use flotilla_generators::source::{IN_CLUSTER_NAME, IN_CLUSTER_SERVER};

use flotilla_core::api::application::ApplicationDestination;
use flotilla_core::project::ClusterIdentity;

use super::connection::ClusterConfig;
use flotilla_core::secrets::cluster::ClusterSecret;
use flotilla_core::secrets::cluster_scope::ClusterScope;

/// A cluster Secret read completely: its registration, how to connect, and what the controller
/// may manage there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredCluster {
    pub secret: ClusterSecret,
    pub config: ClusterConfig,
    pub scope: ClusterScope,
}

/// The name of the cluster at `server`: its registered name, `in-cluster` for the in-cluster
/// address, else the URL.
#[must_use]
pub fn cluster_name<'a>(server: &'a str, clusters: &'a [RegisteredCluster]) -> &'a str {
    match registration(server, clusters) {
        Some(cluster) => cluster.secret.name.as_str(),
        None if server == IN_CLUSTER_SERVER => IN_CLUSTER_NAME,
        None => server,
    }
}

/// How messages name the cluster at `server`: its registered name and server URL, or the URL.
#[must_use]
pub fn cluster_label(server: &str, clusters: &[RegisteredCluster]) -> String {
    let name = cluster_name(server, clusters);
    if name == server {
        server.to_owned()
    } else {
        format!("{name} ({server})")
    }
}

/// The scope of the cluster at `server` (a [`resolve`]d server URL): its Secret's, or every
/// namespace and kind for a cluster without a Secret (the in-cluster one).
#[must_use]
pub fn scope(server: &str, clusters: &[RegisteredCluster]) -> ClusterScope {
    registration(server, clusters)
        .map(|cluster| cluster.scope.clone())
        .unwrap_or_default()
}

fn registration<'a>(
    server: &str,
    clusters: &'a [RegisteredCluster],
) -> Option<&'a RegisteredCluster> {
    let server = server.trim_end_matches('/');
    clusters
        .iter()
        .find(|c| c.secret.server.trim_end_matches('/') == server)
}

/// Where to sync.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The cluster the controller runs in, through its own client.
    InCluster,
    /// A registered cluster.
    Remote {
        server: String,
        /// Boxed: a configuration is large, the in-cluster target is nothing.
        config: Box<ClusterConfig>,
    },
}

/// A destination that names no usable cluster.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    #[error("destination sets both server ({server}) and name ({name}); set one")]
    Both { server: String, name: String },
    #[error("destination sets neither server nor name")]
    Neither,
    #[error("destination server {0} is not a registered cluster (no cluster Secret has it)")]
    UnknownServer(String),
    #[error("destination name {0} is not a registered cluster (no cluster Secret has it)")]
    UnknownName(String),
}

/// Both names of the cluster `destination` names, as projects match it: the server URL and the
/// registered name, found among `clusters` (the in-cluster address and name need no Secret);
/// what cannot be told stays empty.
#[must_use]
pub fn identity<'a>(
    destination: &ApplicationDestination,
    clusters: impl IntoIterator<Item = &'a ClusterSecret>,
) -> ClusterIdentity {
    let server = destination.server.as_deref().unwrap_or_default();
    let name = destination.name.as_deref().unwrap_or_default();
    let found = clusters.into_iter().find(|c| {
        (!server.is_empty() && c.server.trim_end_matches('/') == server.trim_end_matches('/'))
            || (!name.is_empty() && c.name == name)
    });
    match found {
        Some(cluster) => ClusterIdentity {
            server: cluster.server.clone(),
            name: cluster.name.clone(),
        },
        None if server == IN_CLUSTER_SERVER || name == IN_CLUSTER_NAME => ClusterIdentity {
            server: IN_CLUSTER_SERVER.to_owned(),
            name: IN_CLUSTER_NAME.to_owned(),
        },
        None => ClusterIdentity {
            server: server.to_owned(),
            name: name.to_owned(),
        },
    }
}

/// Resolves `destination` among `clusters`.
///
/// # Errors
/// Both or neither of server and name, or one no cluster Secret registers.
pub fn resolve(
    destination: &ApplicationDestination,
    clusters: &[RegisteredCluster],
) -> Result<Target, DestinationError> {
    let server = destination.server.as_deref().filter(|s| !s.is_empty());
    let name = destination.name.as_deref().filter(|n| !n.is_empty());
    let found = match (server, name) {
        (Some(server), Some(name)) => {
            return Err(DestinationError::Both {
                server: server.to_owned(),
                name: name.to_owned(),
            });
        }
        (None, None) => return Err(DestinationError::Neither),
        (Some(server), None) => clusters
            .iter()
            .find(|c| c.secret.server.trim_end_matches('/') == server.trim_end_matches('/'))
            .map(|c| c.secret.server.as_str())
            .or_else(|| (server == IN_CLUSTER_SERVER).then_some(IN_CLUSTER_SERVER))
            .ok_or_else(|| DestinationError::UnknownServer(server.to_owned()))?,
        (None, Some(name)) => clusters
            .iter()
            .find(|c| c.secret.name == name)
            .map(|c| c.secret.server.as_str())
            .or_else(|| (name == IN_CLUSTER_NAME).then_some(IN_CLUSTER_SERVER))
            .ok_or_else(|| DestinationError::UnknownName(name.to_owned()))?,
    };
    if found == IN_CLUSTER_SERVER {
        return Ok(Target::InCluster);
    }
    let cluster = clusters.iter().find(|c| c.secret.server == found);
    Ok(Target::Remote {
        server: found.to_owned(),
        config: Box::new(cluster.map(|c| c.config.clone()).unwrap_or_default()),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn registered(name: &str, server: &str, token: &str) -> RegisteredCluster {
        RegisteredCluster {
            secret: ClusterSecret {
                secret_name: format!("cluster-{name}"),
                name: name.into(),
                server: server.into(),
                project: None,
                labels: BTreeMap::new(),
                annotations: BTreeMap::new(),
            },
            config: ClusterConfig {
                bearer_token: Some(token.into()),
                ..ClusterConfig::default()
            },
            scope: ClusterScope::default(),
        }
    }

    fn destination(server: Option<&str>, name: Option<&str>) -> ApplicationDestination {
        ApplicationDestination {
            server: server.map(str::to_owned),
            name: name.map(str::to_owned),
            namespace: Some("n".into()),
        }
    }

    #[test]
    fn resolutions() {
        let clusters = [
            registered("edge", "https://edge:6443", "t1"),
            registered("local", IN_CLUSTER_SERVER, "t2"),
        ];
        let edge = Ok(Target::Remote {
            server: "https://edge:6443".into(),
            config: Box::new(clusters[0].config.clone()),
        });
        let cases = [
            (destination(Some("https://edge:6443"), None), edge.clone()),
            (destination(Some("https://edge:6443/"), None), edge.clone()),
            (destination(None, Some("edge")), edge),
            (
                destination(Some(IN_CLUSTER_SERVER), None),
                Ok(Target::InCluster),
            ),
            (destination(None, Some("local")), Ok(Target::InCluster)),
            (
                destination(None, Some("nowhere")),
                Err(DestinationError::UnknownName("nowhere".into())),
            ),
            (
                destination(Some("https://gone"), None),
                Err(DestinationError::UnknownServer("https://gone".into())),
            ),
            (destination(None, None), Err(DestinationError::Neither)),
        ];
        for (index, (wanted, expected)) in cases.into_iter().enumerate() {
            assert_eq!(resolve(&wanted, &clusters), expected, "case {index}");
        }
        assert_eq!(
            resolve(&destination(None, Some(IN_CLUSTER_NAME)), &[]),
            Ok(Target::InCluster)
        );
        assert!(matches!(
            resolve(&destination(Some("a"), Some("b")), &[]),
            Err(DestinationError::Both { .. })
        ));
    }

    #[test]
    fn labels_and_scopes_come_from_the_registration() {
        let mut local = registered("local", IN_CLUSTER_SERVER, "t");
        local.scope.namespaces = vec!["team-a".into()];
        let clusters = [registered("edge", "https://edge:6443", "t"), local];
        assert_eq!(
            cluster_label("https://edge:6443", &clusters),
            "edge (https://edge:6443)"
        );
        assert_eq!(
            cluster_label(IN_CLUSTER_SERVER, &[]),
            format!("in-cluster ({IN_CLUSTER_SERVER})")
        );
        assert_eq!(cluster_label("https://x", &[]), "https://x");
        assert_eq!(scope(IN_CLUSTER_SERVER, &clusters).namespaces, ["team-a"]);
        assert_eq!(scope(IN_CLUSTER_SERVER, &[]), ClusterScope::default());
    }
}
