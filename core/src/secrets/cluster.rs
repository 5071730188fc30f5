//! Argo CD-style cluster Secrets (`argocd.argoproj.io/secret-type: cluster`): a cluster's name,
//! server URL, project, labels and annotations, from `stringData` or base64 `data`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;

/// The label that marks a Secret as a cluster registration.
pub const SECRET_TYPE_LABEL: &str = "argocd.argoproj.io/secret-type";
/// Its value for clusters.
pub const SECRET_TYPE_CLUSTER: &str = "cluster";

/// A cluster registration as read from its Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSecret {
    /// The Secret's own name, for error messages.
    pub secret_name: String,
    pub name: String,
    pub server: String,
    pub project: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

/// A cluster Secret that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterSecretError {
    #[error("Secret {secret}: missing field {field} in data/stringData")]
    MissingField { secret: String, field: &'static str },
    #[error("Secret {secret}: field {field} is not UTF-8")]
    NotUtf8 { secret: String, field: &'static str },
}

impl ClusterSecret {
    /// Whether `secret` carries the cluster label.
    #[must_use]
    pub fn is_cluster_secret(secret: &Secret) -> bool {
        secret
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SECRET_TYPE_LABEL))
            .is_some_and(|v| v == SECRET_TYPE_CLUSTER)
    }

    /// Reads the registration; `stringData` wins over `data` as on the API server.
    ///
    /// # Errors
    /// A missing `server` (a missing `name` defaults to the server URL, as in Argo CD), or a
    /// value that is not UTF-8.
    pub fn from_secret(secret: &Secret) -> Result<Self, ClusterSecretError> {
        let secret_name = secret.metadata.name.clone().unwrap_or_default();
        let field = |key: &'static str| secret_field(secret, key);
        let server = field("server")?.ok_or_else(|| ClusterSecretError::MissingField {
            secret: secret_name.clone(),
            field: "server",
        })?;
        let name = field("name")?.unwrap_or_else(|| server.clone());
        let project = field("project")?.filter(|p| !p.is_empty());
        Ok(Self {
            name,
            server,
            project,
            labels: secret.metadata.labels.clone().unwrap_or_default(),
            annotations: secret.metadata.annotations.clone().unwrap_or_default(),
            secret_name,
        })
    }
}

/// One field of a Secret; `stringData` wins over `data` as on the API server.
///
/// # Errors
/// A value that is not UTF-8.
pub fn secret_field(
    secret: &Secret,
    key: &'static str,
) -> Result<Option<String>, ClusterSecretError> {
    if let Some(value) = secret.string_data.as_ref().and_then(|d| d.get(key)) {
        return Ok(Some(value.clone()));
    }
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|bytes| {
            String::from_utf8(bytes.0.clone()).map_err(|_| ClusterSecretError::NotUtf8 {
                secret: secret.metadata.name.clone().unwrap_or_default(),
                field: key,
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn secret(yaml: &str) -> Secret {
        serde_saphyr::from_str(yaml).expect("valid secret")
    }

    #[test]
    fn reads_string_data_and_base64_data() {
        let plain = secret(
            "metadata: {name: s1, labels: {argocd.argoproj.io/secret-type: cluster, env: prod}}\n\
             stringData: {name: prod, server: 'https://prod', project: shop}\n",
        );
        let read = ClusterSecret::from_secret(&plain).unwrap();
        assert!(ClusterSecret::is_cluster_secret(&plain));
        assert_eq!(
            (
                read.name.as_str(),
                read.server.as_str(),
                read.project.as_deref()
            ),
            ("prod", "https://prod", Some("shop"))
        );
        assert_eq!(read.labels.get("env").map(String::as_str), Some("prod"));

        let mut encoded = secret("metadata: {name: s2}\n");
        encoded.data = Some(BTreeMap::from([(
            "server".to_string(),
            ByteString(b"https://x".to_vec()),
        )]));
        let read = ClusterSecret::from_secret(&encoded).unwrap();
        assert_eq!(
            (read.name.as_str(), read.server.as_str()),
            ("https://x", "https://x")
        );
        assert!(!ClusterSecret::is_cluster_secret(&encoded));
    }

    #[test]
    fn missing_server_names_the_secret() {
        let err = ClusterSecret::from_secret(&secret(
            "metadata: {name: broken}\nstringData: {name: x}\n",
        ));
        assert_eq!(
            err,
            Err(ClusterSecretError::MissingField {
                secret: "broken".into(),
                field: "server"
            })
        );
    }
}
