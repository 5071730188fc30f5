//! What long-running subcommands share: a client from `--kubeconfig`/`--context` (or
//! `$KUBECONFIG`, read as kubectl reads it), and a future that completes on Ctrl-C or SIGTERM.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::cluster::api_server::api_error::ApiError;

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
/// One line, as kubectl's: the server, where its settings came from, and the innermost cause.
#[derive(Debug, thiserror::Error)]
#[error("cannot reach the Kubernetes API server {server} ({origin}): {reason}")]
pub struct Unreachable {
    pub server: String,
    /// Where the connection settings came from.
    pub origin: String,
    /// The innermost error of the client's chain (`Connection refused (os error 111)`); the
    /// layers above it (`ServiceError: client error (Connect): tcp connect error`) say nothing a
    /// user can act on, so they are not kept as a source for `{:#}` to print.
    pub reason: String,
}

/// The innermost error under `error`.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
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
                reason: root_cause(&error),
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
            .map(|file| KubeconfigFiles {
                files: vec![(path.to_owned(), file.clone())],
                merged: file,
            })
            .with_context(|| format!("reading kubeconfig {}", path.display())),
        None => KubeconfigFiles::from_env(),
    };
    let (config, origin) = match file {
        Ok(files) => {
            let origin = files.origin(context);
            let file = files.merged;
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

/// The kubeconfig files read, each as read and merged as kubectl merges them.
struct KubeconfigFiles {
    /// Each file that exists, in order.
    files: Vec<(PathBuf, Kubeconfig)>,
    merged: Kubeconfig,
}

impl KubeconfigFiles {
    /// `$KUBECONFIG` as kubectl reads it: a list of files (`:`-separated) where a file that
    /// does not exist is skipped and the others are merged, the first file to set a value
    /// winning (kube's `Kubeconfig::from_env` fails on a missing file); else `~/.kube/config`.
    ///
    /// # Errors
    /// A file that exists but cannot be read or parsed, files that disagree on `kind` or
    /// `apiVersion`, or no file at all.
    fn from_env() -> anyhow::Result<Self> {
        let listed: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
            .map(|value| std::env::split_paths(&value).collect())
            .unwrap_or_default();
        let listed: Vec<PathBuf> = listed
            .into_iter()
            .filter(|path| !path.as_os_str().is_empty())
            .collect();
        if listed.is_empty() {
            let path = std::env::home_dir()
                .map(|home| home.join(".kube").join("config"))
                .context("no KUBECONFIG and no home directory")?;
            let file = Kubeconfig::read_from(&path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            return Ok(Self {
                files: vec![(path, file.clone())],
                merged: file,
            });
        }
        Self::merge(&listed)
    }

    /// The files of `listed` that exist, merged in order.
    ///
    /// # Errors
    /// See [`Self::from_env`].
    fn merge(listed: &[PathBuf]) -> anyhow::Result<Self> {
        let mut files = Vec::new();
        for path in listed {
            if path.try_exists().ok() == Some(false) {
                tracing::debug!(path = %path.display(), "KUBECONFIG lists a file that does not exist; skipped");
                continue;
            }
            let mut file = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            // An empty current-context sets nothing (kubectl's merge skips empty values).
            file.current_context = file.current_context.filter(|c| !c.is_empty());
            files.push((path.clone(), file));
        }
        if files.is_empty() {
            let names: Vec<String> = listed.iter().map(|p| p.display().to_string()).collect();
            anyhow::bail!(
                "none of the files KUBECONFIG lists exists ({})",
                names.join(", ")
            );
        }
        let merged = files
            .iter()
            .try_fold(Kubeconfig::default(), |merged, (path, file)| {
                merged
                    .merge(file.clone())
                    .with_context(|| format!("merging kubeconfig {}", path.display()))
            })?;
        Ok(Self { files, merged })
    }

    /// `kubeconfig context "ctx" of PATH`: the context used (`context`, else the current one)
    /// and the first file that defines it, the one whose definition the merge kept.
    fn origin(&self, context: Option<&str>) -> String {
        let name = context
            .or(self.merged.current_context.as_deref())
            .unwrap_or("");
        let defining = self
            .files
            .iter()
            .find(|(_, file)| file.contexts.iter().any(|c| c.name == name));
        match defining {
            Some((path, _)) => format!("kubeconfig context {name:?} of {}", path.display()),
            None => format!("kubeconfig context {name:?}"),
        }
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
