//! How to reach a registered cluster: the `config` field of its Argo CD cluster Secret (bearer
//! token or basic auth, TLS settings) read once, and turned into a kube client configuration.

use k8s_openapi::api::core::v1::Secret;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::Deserialize;
use serde_json::json;

use super::secret::{ClusterSecretError, secret_field};

/// The credentials and TLS settings of a cluster Secret's `config` (Argo CD's format).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConfig {
    #[serde(default)]
    pub bearer_token: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
    #[serde(default)]
    pub tls_client_config: TlsClientConfig,
}

/// `config.tlsClientConfig`: certificates as base64 PEM, as in a kubeconfig.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsClientConfig {
    #[serde(default)]
    pub insecure: bool,
    #[serde(default)]
    pub server_name: Option<String>,
    #[serde(default)]
    pub ca_data: Option<String>,
    #[serde(default)]
    pub cert_data: Option<String>,
    #[serde(default)]
    pub key_data: Option<String>,
}

/// A cluster that cannot be connected to.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error(transparent)]
    Secret(#[from] ClusterSecretError),
    #[error("Secret {secret}: field config is not a cluster configuration: {message}")]
    Config { secret: String, message: String },
    #[error("cluster {server}: {message}")]
    Client { server: String, message: String },
}

impl ClusterConfig {
    /// Reads the `config` field of a cluster Secret; none means no credentials.
    ///
    /// # Errors
    /// A `config` that is not UTF-8 or not a cluster configuration.
    pub fn from_secret(secret: &Secret) -> Result<Self, ConnectionError> {
        let Some(text) = secret_field(secret, "config")? else {
            return Ok(Self::default());
        };
        serde_json::from_str(&text).map_err(|error| ConnectionError::Config {
            secret: secret.metadata.name.clone().unwrap_or_default(),
            message: error.to_string(),
        })
    }

    /// A kubeconfig with one context reaching `server` with these settings.
    ///
    /// # Errors
    /// Never for a configuration read by [`Self::from_secret`]; the conversion is checked.
    pub fn kubeconfig(&self, server: &str) -> Result<Kubeconfig, ConnectionError> {
        let tls = &self.tls_client_config;
        let document = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "cluster", "cluster": {
                "server": server,
                "insecure-skip-tls-verify": tls.insecure,
                "certificate-authority-data": tls.ca_data,
                "tls-server-name": tls.server_name,
            }}],
            "users": [{"name": "user", "user": {
                "token": self.bearer_token,
                "username": self.username,
                "password": self.password,
                "client-certificate-data": tls.cert_data,
                "client-key-data": tls.key_data,
            }}],
            "contexts": [{"name": "cluster", "context": {"cluster": "cluster", "user": "user"}}],
            "current-context": "cluster",
        });
        serde_json::from_value(without_nulls(document)).map_err(|error| ConnectionError::Client {
            server: server.to_owned(),
            message: error.to_string(),
        })
    }

    /// The client configuration reaching `server` with these settings.
    ///
    /// # Errors
    /// Unusable certificates or credentials.
    pub async fn config(&self, server: &str) -> Result<kube::Config, ConnectionError> {
        kube::Config::from_custom_kubeconfig(
            self.kubeconfig(server)?,
            &KubeConfigOptions::default(),
        )
        .await
        .map_err(|e| ConnectionError::Client {
            server: server.to_owned(),
            message: e.to_string(),
        })
    }
}

fn without_nulls(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => map
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k, without_nulls(v)))
            .collect(),
        serde_json::Value::Array(items) => items.into_iter().map(without_nulls).collect(),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(yaml: &str) -> Secret {
        serde_saphyr::from_str(yaml).expect("valid secret")
    }

    #[test]
    fn reads_argo_cd_configs_into_a_kubeconfig() {
        let read = ClusterConfig::from_secret(&secret(
            "metadata: {name: s}\nstringData:\n  server: https://x\n  config: '{\"bearerToken\": \"t\", \"tlsClientConfig\": {\"insecure\": true, \"serverName\": \"k\"}}'\n",
        ))
        .unwrap();
        assert_eq!(read.bearer_token.as_deref(), Some("t"));
        assert!(read.tls_client_config.insecure);
        let kubeconfig = read.kubeconfig("https://x:6443").unwrap();
        let cluster = kubeconfig.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://x:6443"));
        assert_eq!(cluster.insecure_skip_tls_verify, Some(true));
        assert_eq!(cluster.tls_server_name.as_deref(), Some("k"));
        assert!(
            kubeconfig.auth_infos[0]
                .auth_info
                .as_ref()
                .unwrap()
                .token
                .is_some()
        );

        let none =
            ClusterConfig::from_secret(&secret("metadata: {name: s}\nstringData: {server: x}\n"));
        assert_eq!(none.unwrap(), ClusterConfig::default());
        let broken = ClusterConfig::from_secret(&secret(
            "metadata: {name: bad}\nstringData: {server: x, config: 'nope'}\n",
        ));
        assert!(broken.unwrap_err().to_string().contains("Secret bad"));
    }
}
