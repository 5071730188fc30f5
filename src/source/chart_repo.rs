//! Charts of a Helm chart repository: `chart` + `repoURL` (HTTP(S), its `index.yaml`) at
//! `targetRevision`, a version or a semver range (empty: the newest). `helm pull --untar`
//! resolves and fetches the chart (the one tool run that may reach a network); each resolved
//! version is kept under a cache directory, one per (repository, chart, version), read only
//! afterwards, so Applications of one chart version share it. A repository with a password
//! (a Secret of [`crate::secrets::repository`]) is first added with `helm repo add
//! --password-stdin` in the run's private HOME (its `repositories.yaml` there, removed with it),
//! and the chart pulled by that repository's name; `insecure` and `proxy` apply to both runs,
//! `noProxy` becomes `NO_PROXY`. helm sends basic auth with every request, so
//! `forceHttpBasicAuth` changes nothing here.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use super::run::{RunInput, ToolError};
use super::tools::Tools;
use super::{SourceError, private_dir_in};
use crate::secrets::repository::{RepoCredentials, Sensitive};

/// A chart fetched from a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PulledChart {
    /// The chart's directory (holding `Chart.yaml`).
    pub root: PathBuf,
    /// The version `targetRevision` resolved to.
    pub version: String,
}

/// The name the repository of a pull with credentials is added under, in the run's own HOME.
const REPO_NAME: &str = "flotilla-source";

/// The `helm pull` arguments for `chart` of `url` at `version` (a version or range; empty for
/// the newest), untarred into `into`; with `added`, the chart is looked up in the repository
/// added as [`REPO_NAME`] (which holds the credentials) instead of by URL.
#[must_use]
pub fn pull_args(
    url: &str,
    chart: &str,
    version: &str,
    into: &Path,
    added: bool,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec!["pull".into()];
    if added {
        args.push(format!("{REPO_NAME}/{chart}").into());
    } else {
        args.extend([chart.into(), "--repo".into(), url.into()]);
    }
    args.extend(["--untar".into(), "--untardir".into(), into.into()]);
    if !version.is_empty() && version != "*" {
        args.push("--version".into());
        args.push(version.into());
    }
    args
}

/// The `helm repo add` arguments adding `url` as [`REPO_NAME`] with `username` and the password
/// read from standard input (never an argument).
#[must_use]
pub fn repo_add_args(url: &str, username: &str) -> Vec<std::ffi::OsString> {
    [
        "repo",
        "add",
        REPO_NAME,
        url,
        "--username",
        username,
        "--password-stdin",
    ]
    .into_iter()
    .map(Into::into)
    .collect()
}

/// Fetches `chart` of the repository `url` at `version` into `cache` (kept there per resolved
/// version).
///
/// # Errors
/// A chart name that is not a plain name, helm's failure (unknown chart, no version in range,
/// unreachable repository) with its stderr, or a cache that cannot be written.
pub fn pull(
    cache: &Path,
    url: &str,
    chart: &str,
    version: &str,
    credentials: Option<&RepoCredentials>,
    tools: &Tools,
) -> Result<PulledChart, SourceError> {
    let plain = !chart.is_empty()
        && chart
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !chart.starts_with('.');
    if !plain {
        return Err(SourceError::Field {
            field: "chart".into(),
            message: format!("{chart:?} is not a chart name"),
        });
    }
    let writable = |error| SourceError::Private {
        path: cache.to_owned(),
        error,
    };
    std::fs::create_dir_all(cache).map_err(writable)?;
    let fetched = private_dir_in(cache)?;
    let tool_error = |error| SourceError::Tool {
        tool: "helm",
        error: match (error, credentials) {
            (
                ToolError::Failed {
                    command,
                    status,
                    stderr,
                },
                Some(credentials),
            ) => ToolError::Failed {
                command,
                status,
                stderr: credentials.scrub(&stderr),
            },
            (error, _) => error,
        },
    };
    let password = credentials.and_then(|c| c.password.as_ref());
    let added = password.is_some();
    let mut pull = tools.helm(pull_args(url, chart, version, fetched.path(), added));
    let home = pull.private_home().map_err(tool_error)?;
    let mut input = RunInput::new(home.path());
    let no_proxy = credentials
        .and_then(|c| c.no_proxy.clone())
        .map(Sensitive::new);
    if let Some(proxy) = credentials.and_then(|c| c.proxy.as_ref()) {
        input.env = vec![("HTTP_PROXY", proxy), ("HTTPS_PROXY", proxy)];
    }
    if let Some(no_proxy) = &no_proxy {
        input
            .env
            .extend([("NO_PROXY", no_proxy), ("no_proxy", no_proxy)]);
    }
    let insecure = credentials.is_some_and(|c| c.insecure);
    if let Some(password) = password {
        let username = credentials.and_then(|c| c.username.as_deref());
        let mut add = tools.helm(repo_add_args(url, username.unwrap_or_default()));
        if insecure {
            add.args.push("--insecure-skip-tls-verify".into());
        }
        add.network = true;
        let input = RunInput {
            stdin: Some(password),
            ..RunInput::new(home.path())
        };
        add.run_with(tools.timeout, &input).map_err(tool_error)?;
    }
    if insecure {
        pull.args.push("--insecure-skip-tls-verify".into());
    }
    pull.network = true;
    pull.run_with(tools.timeout, &input).map_err(tool_error)?;
    let untarred = fetched.path().join(chart);
    let metadata = std::fs::read_to_string(untarred.join("Chart.yaml")).map_err(|error| {
        SourceError::Field {
            field: "chart".into(),
            message: format!("{chart:?} from {url} has no readable Chart.yaml: {error}"),
        }
    })?;
    let resolved = serde_saphyr::from_str::<serde_json::Value>(&metadata)
        .ok()
        .and_then(|m| m.get("version").and_then(|v| v.as_str()).map(str::to_owned))
        .ok_or_else(|| SourceError::Field {
            field: "chart".into(),
            message: format!("{chart:?} from {url}: Chart.yaml names no version"),
        })?;
    let mut hasher = DefaultHasher::new();
    url.hash(&mut hasher);
    let kept = cache.join(format!("{:016x}-{chart}-{resolved}", hasher.finish()));
    if !kept.is_dir() {
        // A concurrent pull of the same version may have kept it first: either copy serves.
        let _ = std::fs::rename(fetched.path(), &kept);
    }
    Ok(PulledChart {
        root: kept.join(chart),
        version: resolved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_arguments_name_the_repository_and_the_range() {
        let args = |version| {
            pull_args(
                "http://charts.local",
                "db",
                version,
                Path::new("/c/x"),
                false,
            )
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect::<Vec<_>>()
            .join(" ")
        };
        assert_eq!(
            args(">=0.1 <0.2"),
            "pull db --repo http://charts.local --untar --untardir /c/x --version >=0.1 <0.2"
        );
        assert_eq!(
            args(""),
            "pull db --repo http://charts.local --untar --untardir /c/x"
        );
        assert_eq!(args("*"), args(""));
        let added = pull_args("http://charts.local", "db", "1.0", Path::new("/c/x"), true);
        assert_eq!(added[1], "flotilla-source/db");
        assert!(!added.contains(&"--repo".into()));
        let add = repo_add_args("http://charts.local", "deploy");
        assert_eq!(add.last().unwrap(), "--password-stdin");
    }

    #[test]
    fn a_chart_name_cannot_be_a_path() {
        for chart in ["", "../db", "a/b", ".."] {
            let error = pull(
                Path::new("/nonexistent"),
                "http://x",
                chart,
                "",
                None,
                Tools::current(),
            )
            .unwrap_err();
            assert!(error.to_string().starts_with("chart: "), "{error}");
        }
    }
}
