//! What long-running subcommands share: a client from `--kubeconfig`/`--context`, and a future
//! that completes on Ctrl-C or SIGTERM.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

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

/// A client for `kubeconfig` and `context`; see [`config`].
///
/// # Errors
/// An unreadable kubeconfig or one without usable credentials.
pub async fn client(kubeconfig: Option<&Path>, context: Option<&str>) -> anyhow::Result<Client> {
    Ok(Client::try_from(config(kubeconfig, context).await?)?)
}

/// The client configuration for `kubeconfig` (default: `$KUBECONFIG`, `~/.kube/config`, or the
/// in-cluster service account) and `context` (default: the current context).
///
/// # Errors
/// An unreadable kubeconfig or one without usable credentials.
pub async fn config(kubeconfig: Option<&Path>, context: Option<&str>) -> anyhow::Result<Config> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .context("loading the kubeconfig")?
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .context("loading the kubeconfig")?,
        None => Config::infer()
            .await
            .context("finding a kubeconfig or in-cluster credentials")?,
    };
    Ok(config)
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
