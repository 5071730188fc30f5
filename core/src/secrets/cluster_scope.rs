//! What the controller may manage in a destination cluster, from its cluster Secret (Argo CD's
//! namespaced clusters): `namespaces` (comma-separated) limits it to those namespaces, and then
//! `clusterResources: "true"` lets it manage cluster-scoped kinds too (default: not). Without
//! `namespaces` everything is managed. Pure: the Secret is given, and the check of one object
//! is a function of its kind, name and namespace.

use k8s_openapi::api::core::v1::Secret;

use super::cluster::{ClusterSecretError, secret_field};

/// The namespaces and kinds the controller manages in one cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterScope {
    /// The managed namespaces, sorted; empty: every namespace and every cluster-scoped kind.
    pub namespaces: Vec<String>,
    /// With `namespaces`: whether cluster-scoped kinds are managed too.
    pub cluster_resources: bool,
}

/// A `namespaces` or `clusterResources` field that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterScopeError {
    #[error(transparent)]
    Field(#[from] ClusterSecretError),
    #[error("Secret {secret}: field clusterResources is {value:?}; expected \"true\" or \"false\"")]
    ClusterResources { secret: String, value: String },
}

/// An object outside the cluster's scope, in Argo CD's words, naming the cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotManaged {
    #[error(
        "cluster {cluster}: Namespace {namespace:?} for {kind} {name:?} is not managed (the \
         cluster Secret's namespaces: {managed})"
    )]
    Namespace {
        cluster: String,
        namespace: String,
        kind: String,
        name: String,
        managed: String,
    },
    #[error(
        "cluster {cluster}: Cluster level {kind} {name:?} can not be managed when in namespaced \
         mode (the cluster Secret lists namespaces {managed} without clusterResources: \"true\")"
    )]
    ClusterLevel {
        cluster: String,
        kind: String,
        name: String,
        managed: String,
    },
}

impl ClusterScope {
    /// Reads `namespaces` and `clusterResources` of a cluster Secret.
    ///
    /// # Errors
    /// A field that is not UTF-8, or a `clusterResources` other than `true` or `false`.
    pub fn from_secret(secret: &Secret) -> Result<Self, ClusterScopeError> {
        let mut namespaces: Vec<String> = secret_field(secret, "namespaces")?
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|namespace| !namespace.is_empty())
            .map(str::to_owned)
            .collect();
        namespaces.sort();
        namespaces.dedup();
        let cluster_resources = match secret_field(secret, "clusterResources")?.as_deref() {
            None | Some("" | "false") => false,
            Some("true") => true,
            Some(value) => {
                return Err(ClusterScopeError::ClusterResources {
                    secret: secret.metadata.name.clone().unwrap_or_default(),
                    value: value.to_owned(),
                });
            }
        };
        Ok(Self {
            namespaces,
            cluster_resources,
        })
    }

    /// The namespaces to watch one by one; None: the whole cluster.
    #[must_use]
    pub fn watched_namespaces(&self) -> Option<&[String]> {
        (!self.namespaces.is_empty()).then_some(self.namespaces.as_slice())
    }

    /// Whether cluster-scoped kinds are managed.
    #[must_use]
    pub fn manages_cluster_resources(&self) -> bool {
        self.namespaces.is_empty() || self.cluster_resources
    }

    /// Whether the object `kind` `name` in `namespace` (None: cluster-scoped) of `cluster` is
    /// managed.
    ///
    /// # Errors
    /// [`NotManaged`] naming the cluster, the object and the namespaces managed.
    pub fn check(
        &self,
        cluster: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<(), NotManaged> {
        let managed = || self.namespaces.join(", ");
        match namespace {
            None if self.manages_cluster_resources() => Ok(()),
            None => Err(NotManaged::ClusterLevel {
                cluster: cluster.to_owned(),
                kind: kind.to_owned(),
                name: name.to_owned(),
                managed: managed(),
            }),
            Some(namespace)
                if self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace) =>
            {
                Ok(())
            }
            Some(namespace) => Err(NotManaged::Namespace {
                cluster: cluster.to_owned(),
                namespace: namespace.to_owned(),
                kind: kind.to_owned(),
                name: name.to_owned(),
                managed: managed(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(string_data: &str) -> Secret {
        serde_saphyr::from_str(&format!(
            "metadata: {{name: in-cluster}}\nstringData: {string_data}\n"
        ))
        .expect("a Secret")
    }

    #[test]
    fn fields_read_as_argo_cd_reads_them() {
        let cases = [
            ("{server: s}", vec![], false, None),
            ("{namespaces: 'b, a,,a'}", vec!["a", "b"], false, Some(2)),
            (
                "{namespaces: a, clusterResources: 'true'}",
                vec!["a"],
                true,
                Some(1),
            ),
            ("{clusterResources: 'false'}", vec![], false, None),
        ];
        for (data, namespaces, cluster_resources, watched) in cases {
            let scope = ClusterScope::from_secret(&secret(data)).unwrap();
            assert_eq!(scope.namespaces, namespaces, "{data}");
            assert_eq!(scope.cluster_resources, cluster_resources, "{data}");
            assert_eq!(scope.watched_namespaces().map(<[String]>::len), watched);
        }
        let bad = ClusterScope::from_secret(&secret("{namespaces: a, clusterResources: yes}"));
        assert_eq!(
            bad.unwrap_err().to_string(),
            "Secret in-cluster: field clusterResources is \"yes\"; expected \"true\" or \"false\""
        );
    }

    #[test]
    fn objects_outside_the_namespaces_or_cluster_level_are_not_managed() {
        let all = ClusterScope::default();
        let listed = ClusterScope {
            namespaces: vec!["team-a".into(), "team-b".into()],
            cluster_resources: false,
        };
        let with_cluster = ClusterScope {
            cluster_resources: true,
            ..listed.clone()
        };
        let check = |scope: &ClusterScope, kind, namespace| {
            scope
                .check("in-cluster", kind, "x", namespace)
                .map_err(|e| e.to_string())
        };
        assert_eq!(check(&all, "ConfigMap", Some("anywhere")), Ok(()));
        assert_eq!(check(&all, "ClusterRole", None), Ok(()));
        assert_eq!(check(&listed, "ConfigMap", Some("team-b")), Ok(()));
        assert_eq!(
            check(&listed, "ConfigMap", Some("team-c")),
            Err(
                "cluster in-cluster: Namespace \"team-c\" for ConfigMap \"x\" is not managed \
                 (the cluster Secret's namespaces: team-a, team-b)"
                    .into()
            )
        );
        assert_eq!(
            check(&listed, "Namespace", None),
            Err(
                "cluster in-cluster: Cluster level Namespace \"x\" can not be managed when in \
                 namespaced mode (the cluster Secret lists namespaces team-a, team-b without \
                 clusterResources: \"true\")"
                    .into()
            )
        );
        assert_eq!(check(&with_cluster, "ClusterRole", None), Ok(()));
        assert!(check(&with_cluster, "ConfigMap", Some("team-c")).is_err());
    }
}
