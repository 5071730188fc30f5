//! How to reach a registered cluster: the `config` field of its Argo CD cluster Secret (bearer
//! token, basic auth, an exec credential plugin (`execProviderConfig`), EKS through the `aws`
//! command (`awsAuthConfig`), TLS settings) read once, and turned into a kube client
//! configuration. What Flotilla cannot honour (`awsAuthConfig` without `aws` on PATH,
//! `proxyUrl`) is an error naming the cluster, never a connection without credentials.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Secret;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::Deserialize;
use serde_json::json;

use flotilla_core::secrets::cluster::{ClusterSecretError, secret_field};

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
    /// A command printing an ExecCredential (a kubeconfig's `exec` user).
    #[serde(default)]
    pub exec_provider_config: Option<ExecProviderConfig>,
    /// EKS: a token from `aws eks get-token`.
    #[serde(default)]
    pub aws_auth_config: Option<AwsAuthConfig>,
    /// A proxy for the API server: not supported (refused, never ignored).
    #[serde(default)]
    pub proxy_url: Option<String>,
}

/// `config.execProviderConfig`, as Argo CD's (client-go's exec plugin settings).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecProviderConfig {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub install_hint: Option<String>,
}

/// `config.awsAuthConfig`: an EKS cluster, optionally through a role or profile.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct AwsAuthConfig {
    #[serde(default, rename = "clusterName")]
    pub cluster_name: String,
    #[serde(default, rename = "roleARN")]
    pub role_arn: Option<String>,
    #[serde(default)]
    pub profile: Option<String>,
}

/// The exec plugin's API version when the Secret names none.
const EXEC_API_VERSION: &str = "client.authentication.k8s.io/v1beta1";

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
    #[error("Secret {secret}: field config is not a cluster configuration: {error}")]
    Config {
        secret: String,
        #[source]
        error: serde_json::Error,
    },
    /// The configuration asks for something Flotilla does not do.
    #[error("cluster {server}: {message}")]
    Refused { server: String, message: String },
    /// The configuration does not make a usable kubeconfig (certificates, credentials).
    #[error("cluster {server}: {error}")]
    Kubeconfig {
        server: String,
        #[source]
        error: Box<kube::config::KubeconfigError>,
    },
    /// The kubeconfig document built from the configuration is not one.
    #[error("cluster {server}: {error}")]
    Document {
        server: String,
        #[source]
        error: serde_json::Error,
    },
    /// No client could be made from the configuration.
    #[error("cluster {server}: {error}")]
    Client {
        server: String,
        #[source]
        error: Box<kube::Error>,
    },
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
            error,
        })
    }

    /// A kubeconfig with one context reaching `server` with these settings.
    ///
    /// # Errors
    /// Settings Flotilla cannot honour: `proxyUrl`, or `awsAuthConfig` without the `aws`
    /// command on PATH.
    pub fn kubeconfig(&self, server: &str) -> Result<Kubeconfig, ConnectionError> {
        self.kubeconfig_with(server, find_on_path("aws").as_deref())
    }

    /// [`Self::kubeconfig`] with `aws` the path of the `aws` command, if there is one.
    fn kubeconfig_with(
        &self,
        server: &str,
        aws: Option<&Path>,
    ) -> Result<Kubeconfig, ConnectionError> {
        let refused = |message: String| ConnectionError::Refused {
            server: server.to_owned(),
            message,
        };
        if self.proxy_url.is_some() {
            return Err(refused("config.proxyUrl is not supported".into()));
        }
        let exec = match (&self.exec_provider_config, &self.aws_auth_config) {
            (Some(_), Some(_)) => {
                return Err(refused(
                    "config sets both execProviderConfig and awsAuthConfig; set one".into(),
                ));
            }
            (Some(exec), None) => Some(exec_user(exec)),
            (None, Some(aws_config)) => {
                let aws = aws.ok_or_else(|| {
                    refused(
                        "config.awsAuthConfig needs the aws command (AWS CLI), which is not on \
                         PATH; no connection without credentials is made"
                            .into(),
                    )
                })?;
                Some(exec_user(&aws_exec(aws, aws_config)))
            }
            (None, None) => None,
        };
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
                "exec": exec,
            }}],
            "contexts": [{"name": "cluster", "context": {"cluster": "cluster", "user": "user"}}],
            "current-context": "cluster",
        });
        serde_json::from_value(without_nulls(document)).map_err(|error| ConnectionError::Document {
            server: server.to_owned(),
            error,
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
        .map_err(|error| ConnectionError::Kubeconfig {
            server: server.to_owned(),
            error: Box::new(error),
        })
    }
}

/// A kubeconfig `exec` user running `exec` (never interactive: a controller has no terminal).
fn exec_user(exec: &ExecProviderConfig) -> serde_json::Value {
    let env: Vec<_> = exec
        .env
        .iter()
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect();
    json!({
        "apiVersion": exec.api_version.as_deref().unwrap_or(EXEC_API_VERSION),
        "command": exec.command,
        "args": exec.args,
        "env": env,
        "installHint": exec.install_hint,
        "interactiveMode": "Never",
    })
}

/// `aws eks get-token` for `config`, as the exec plugin an EKS kubeconfig uses.
fn aws_exec(aws: &Path, config: &AwsAuthConfig) -> ExecProviderConfig {
    let mut args = vec![
        "eks".to_owned(),
        "get-token".to_owned(),
        "--cluster-name".to_owned(),
        config.cluster_name.clone(),
    ];
    if let Some(role) = config.role_arn.as_ref().filter(|r| !r.is_empty()) {
        args.extend(["--role-arn".to_owned(), role.clone()]);
    }
    let env = config
        .profile
        .iter()
        .filter(|p| !p.is_empty())
        .map(|profile| ("AWS_PROFILE".to_owned(), profile.clone()))
        .collect();
    ExecProviderConfig {
        command: aws.display().to_string(),
        args,
        env,
        api_version: None,
        install_hint: None,
    }
}

/// The first executable file called `program` in a directory of `PATH`.
fn find_on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| {
            path.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
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
        let exec = ClusterConfig::from_secret(&secret(
            "metadata: {name: s}\nstringData:\n  server: https://x\n  config: '{\"execProviderConfig\": {\"command\": \"/bin/token\", \"args\": [\"-a\"], \"env\": {\"K\": \"V\"}, \"installHint\": \"install token\"}}'\n",
        ))
        .unwrap();
        let kubeconfig = exec.kubeconfig("https://x").unwrap();
        let user = kubeconfig.auth_infos[0].auth_info.as_ref().unwrap();
        let plugin = user.exec.as_ref().unwrap();
        assert_eq!(plugin.command.as_deref(), Some("/bin/token"));
        assert_eq!(plugin.args.as_deref(), Some(&["-a".to_owned()][..]));
        assert_eq!(plugin.api_version.as_deref(), Some(EXEC_API_VERSION));
        assert_eq!(plugin.install_hint.as_deref(), Some("install token"));
        let env = &plugin.env.as_ref().unwrap()[0];
        assert_eq!((env["name"].as_str(), env["value"].as_str()), ("K", "V"));

        let aws = ClusterConfig::from_secret(&secret(
            "metadata: {name: s}\nstringData:\n  server: https://x\n  config: '{\"awsAuthConfig\": {\"clusterName\": \"prod\", \"roleARN\": \"arn:r\"}}'\n",
        ))
        .unwrap();
        let refused = aws
            .kubeconfig_with("https://eks", None)
            .unwrap_err()
            .to_string();
        assert!(
            refused.starts_with("cluster https://eks: config.awsAuthConfig needs the aws command"),
            "{refused}"
        );
        let through_aws = aws
            .kubeconfig_with("https://eks", Some(Path::new("/usr/bin/aws")))
            .unwrap();
        let plugin = through_aws.auth_infos[0]
            .auth_info
            .as_ref()
            .unwrap()
            .exec
            .clone()
            .unwrap();
        assert_eq!(plugin.command.as_deref(), Some("/usr/bin/aws"));
        assert_eq!(
            plugin.args.unwrap().join(" "),
            "eks get-token --cluster-name prod --role-arn arn:r"
        );
        let proxied = ClusterConfig {
            proxy_url: Some("http://p".into()),
            ..ClusterConfig::default()
        };
        assert!(
            proxied
                .kubeconfig("https://x")
                .unwrap_err()
                .to_string()
                .contains("proxyUrl")
        );

        let broken = ClusterConfig::from_secret(&secret(
            "metadata: {name: bad}\nstringData: {server: x, config: 'nope'}\n",
        ));
        assert!(broken.unwrap_err().to_string().contains("Secret bad"));
    }
}
