//! What long-running subcommands share: a client from `--kubeconfig`/`--context`, and a future
//! that completes on Ctrl-C or SIGTERM.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::cluster::api_error::ApiError;

/// `--kubeconfig` and `--context`, shared by every subcommand that talks to a cluster.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct KubeconfigArgs {
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster credentials).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current context).
    #[arg(long, global = true)]
    pub context: Option<String>,
}

impl KubeconfigArgs {
    /// A client for these arguments; see [`client`].
    ///
    /// # Errors
    /// An unreadable kubeconfig or one without usable credentials.
    pub async fn client(&self) -> anyhow::Result<Client> {
        client(self.kubeconfig.as_deref(), self.context.as_deref()).await
    }

    /// A client and the namespace to work in: `namespace` if given, else the kubeconfig's (or
    /// the service account's).
    ///
    /// # Errors
    /// See [`client`].
    pub async fn client_in(&self, namespace: Option<&str>) -> anyhow::Result<(Client, String)> {
        let client = self.client().await?;
        let namespace =
            namespace.map_or_else(|| client.default_namespace().to_string(), str::to_string);
        Ok((client, namespace))
    }
}

/// A client for `kubeconfig` (default: `$KUBECONFIG`, `~/.kube/config`, or the in-cluster
/// service account) and `context` (default: the current context), checked by asking the server
/// its version, so that an unreachable server is reported here, by URL and context.
///
/// # Errors
/// An unreadable kubeconfig, one without usable credentials, or a server that does not answer.
pub async fn client(kubeconfig: Option<&Path>, context: Option<&str>) -> anyhow::Result<Client> {
    let settings = settings(kubeconfig, context).await?;
    let client = Client::try_from(settings.config.clone())?;
    settings.check(&client).await?;
    Ok(client)
}

/// The Kubernetes API server did not answer (the CLI's exit code 3, see
/// [`super::exit_code`]).
#[derive(Debug, thiserror::Error)]
#[error("cannot reach the Kubernetes API server {server} ({origin})")]
pub struct Unreachable {
    pub server: String,
    /// Where the connection settings came from.
    pub origin: String,
    #[source]
    pub error: ApiError,
}

/// The client configuration and where it came from.
pub struct Settings {
    pub config: Config,
    /// `kubeconfig context "ctx" of PATH`, or the in-cluster service account.
    pub origin: String,
}

impl Settings {
    /// Asks the server its version through `client`, naming the server and where its settings
    /// came from when it does not answer.
    ///
    /// # Errors
    /// The server cannot be reached or refuses the request.
    pub async fn check(&self, client: &Client) -> anyhow::Result<()> {
        let (server, origin) = (&self.config.cluster_url, &self.origin);
        match client.apiserver_version().await {
            Ok(_) => Ok(()),
            Err(error @ kube::Error::Api(_)) => Err(anyhow::anyhow!(
                "the Kubernetes API server {server} ({origin}) refused a version request: {}",
                ApiError::from(error)
            )),
            Err(error) => Err(Unreachable {
                server: server.to_string(),
                origin: origin.clone(),
                error: error.into(),
            }
            .into()),
        }
    }
}

/// The client configuration for `kubeconfig` and `context` (see [`client`]).
///
/// # Errors
/// An unreadable kubeconfig or one without usable credentials.
pub async fn settings(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> anyhow::Result<Settings> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let file = match kubeconfig {
        Some(path) => Kubeconfig::read_from(path)
            .with_context(|| format!("reading kubeconfig {}", path.display())),
        None => Kubeconfig::read().context("reading the kubeconfig"),
    };
    let (config, origin) = match file {
        Ok(file) => {
            let origin = origin(&file, context, kubeconfig);
            let config = Config::from_custom_kubeconfig(file, &options)
                .await
                .with_context(|| format!("loading {origin}"))?;
            (config, origin)
        }
        Err(error) if kubeconfig.is_some() || context.is_some() => return Err(error),
        Err(error) => match Config::incluster() {
            Ok(config) => (config, "the in-cluster service account".to_owned()),
            Err(in_cluster) => {
                return Err(error.context(format!(
                    "no kubeconfig, and no in-cluster credentials ({in_cluster})"
                )));
            }
        },
    };
    Ok(Settings { config, origin })
}

/// `kubeconfig context "ctx" (path)`: where the connection settings came from.
fn origin(file: &Kubeconfig, context: Option<&str>, path: Option<&Path>) -> String {
    let name = context.or(file.current_context.as_deref()).unwrap_or("");
    match path {
        Some(path) => format!("kubeconfig context {name:?} of {}", path.display()),
        None => format!("kubeconfig context {name:?}"),
    }
}

/// Completes on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let term = async {
        match terminate.as_mut() {
            Some(signal) => drop(signal.recv().await),
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}
