//! Charts of a Helm chart repository or an OCI registry: `chart` + `repoURL` at
//! `targetRevision`, a version or a semver range (empty: the newest). The repository is an
//! HTTP(S) one (its `index.yaml`) unless its URL is `oci://host/path` or its Secret says
//! `enableOCI: "true"` (Argo CD's form: the URL without a scheme); the chart is then
//! `oci://host/path/chart`, over plain HTTP with `insecureOCIForceHttp`. `helm pull --untar`
//! resolves and fetches the chart (tool runs that may reach a network); each resolved version is
//! kept under a cache directory, one per (repository, chart, version), read only afterwards, so
//! Applications of one chart version share it. Credentials (a Secret of
//! [`flotilla_core::secrets::repository`]) go through a [`HelmSession`]: an HTTP(S) repository with a
//! password is first added with `helm repo add --password-stdin` and the chart pulled by that
//! repository's name, a registry with one is logged in with `helm registry login
//! --password-stdin`, both in the session's private HOME; `insecure`, `proxy` and `noProxy`
//! apply to every run. `passCredentials` sends the password to every domain the repository's
//! index points at (`--pass-credentials`). helm sends basic auth with every request, so
//! `forceHttpBasicAuth` changes nothing here.

use std::ffi::OsString;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use super::helm_session::{HelmSession, RegistryAccess};
use super::tools::Tools;
use super::{SourceError, private_dir_in};
use flotilla_core::secrets::repository::RepoCredentials;

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

/// Where a chart is pulled from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ChartLocation {
    /// An HTTP(S) chart repository, by URL.
    Repository(String),
    /// An OCI registry: `oci://host/path` (without the chart).
    Oci(String),
}

impl ChartLocation {
    /// Where `url` is, as Argo CD reads it: `oci://…`, or any URL whose Secret enables OCI,
    /// is a registry.
    #[must_use]
    pub fn of(url: &str, credentials: Option<&RepoCredentials>) -> Self {
        let url = url.trim_end_matches('/');
        match url.strip_prefix("oci://") {
            Some(rest) => Self::Oci(format!("oci://{rest}")),
            None if credentials.is_some_and(|c| c.enable_oci) => Self::Oci(format!("oci://{url}")),
            None => Self::Repository(url.to_owned()),
        }
    }
}

/// The registry host of an `oci://host/path` reference (what `helm registry login` takes).
#[must_use]
pub fn registry_host(reference: &str) -> &str {
    let rest = reference.strip_prefix("oci://").unwrap_or(reference);
    rest.split('/').next().unwrap_or(rest)
}

/// The `helm pull` arguments for `chart` at `location` at `version` (a version or range; empty
/// for the newest), untarred into `into`; with `added`, the chart of an HTTP(S) repository is
/// looked up in the repository added as [`REPO_NAME`] (which holds the credentials) instead of
/// by URL.
#[must_use]
pub fn pull_args(
    location: &ChartLocation,
    chart: &str,
    version: &str,
    into: &Path,
    added: bool,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["pull".into()];
    match location {
        ChartLocation::Oci(registry) => args.push(format!("{registry}/{chart}").into()),
        ChartLocation::Repository(_) if added => args.push(format!("{REPO_NAME}/{chart}").into()),
        ChartLocation::Repository(url) => {
            args.extend([chart.into(), "--repo".into(), url.into()]);
        }
    }
    args.extend(["--untar".into(), "--untardir".into(), into.into()]);
    if !version.is_empty() && version != "*" {
        args.push("--version".into());
        args.push(version.into());
    }
    args
}

/// What to pull: a chart of a repository at a version or range, with the repository's
/// credentials and whether they go to every domain (`passCredentials`).
#[derive(Clone, Copy, Debug)]
pub struct ChartRequest<'a> {
    /// The `repoURL`.
    pub url: &'a str,
    /// The chart's name.
    pub chart: &'a str,
    /// A version or semver range; empty for the newest.
    pub version: &'a str,
    /// The repository Secret's credentials.
    pub credentials: Option<&'a RepoCredentials>,
    /// `helm.passCredentials`.
    pub pass_credentials: bool,
}

/// Fetches the chart `request` names into `cache` (kept there per resolved version).
///
/// # Errors
/// A chart name that is not a plain name, helm's failure (unknown chart, no version in range,
/// unreachable repository or registry, a refused password) with its stderr, or a cache that
/// cannot be written.
pub fn pull(
    cache: &Path,
    request: &ChartRequest<'_>,
    tools: &Tools,
) -> Result<PulledChart, SourceError> {
    let ChartRequest {
        url,
        chart,
        version,
        credentials,
        pass_credentials,
    } = *request;
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
    let location = ChartLocation::of(url, credentials);
    let mut session = HelmSession::new(tools)?;
    session.remember(credentials);
    let mut args = match &location {
        ChartLocation::Oci(registry) => {
            session.login_registry(registry_host(registry), credentials)?;
            let mut args = pull_args(&location, chart, version, fetched.path(), false);
            args.extend(RegistryAccess::of(credentials).pull_flags());
            args
        }
        ChartLocation::Repository(url) => {
            let added = credentials.is_some_and(|c| c.password.is_some());
            if added {
                session.add_repository(REPO_NAME, url, credentials, pass_credentials)?;
            }
            let mut args = pull_args(&location, chart, version, fetched.path(), added);
            if credentials.is_some_and(|c| c.insecure) {
                args.push("--insecure-skip-tls-verify".into());
            }
            args
        }
    };
    if pass_credentials {
        args.push("--pass-credentials".into());
    }
    session.run(args)?;
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
    location.hash(&mut hasher);
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

    fn text(args: Vec<OsString>) -> String {
        args.into_iter()
            .map(|a| a.into_string().unwrap())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn pull_arguments_name_the_repository_and_the_range() {
        let repository = ChartLocation::of("http://charts.local/", None);
        let args = |version| {
            text(pull_args(
                &repository,
                "db",
                version,
                Path::new("/c/x"),
                false,
            ))
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
        let added = pull_args(&repository, "db", "1.0", Path::new("/c/x"), true);
        assert_eq!(added[1], "flotilla-source/db");
        assert!(!added.contains(&"--repo".into()));
    }

    #[test]
    fn oci_registries_as_argo_cd_names_them() {
        let oci = RepoCredentials {
            enable_oci: true,
            ..RepoCredentials::default()
        };
        let expected = ChartLocation::Oci("oci://reg.local:5000/charts".into());
        assert_eq!(
            ChartLocation::of("oci://reg.local:5000/charts", None),
            expected
        );
        assert_eq!(
            ChartLocation::of("reg.local:5000/charts", Some(&oci)),
            expected
        );
        assert_eq!(
            ChartLocation::of("https://reg.local/charts", None),
            ChartLocation::Repository("https://reg.local/charts".into())
        );
        assert_eq!(
            registry_host("oci://reg.local:5000/charts"),
            "reg.local:5000"
        );
        assert_eq!(
            text(pull_args(&expected, "db", "~1.0", Path::new("/c/x"), true)),
            "pull oci://reg.local:5000/charts/db --untar --untardir /c/x --version ~1.0"
        );
    }

    #[test]
    fn a_chart_name_cannot_be_a_path() {
        for chart in ["", "../db", "a/b", ".."] {
            let request = ChartRequest {
                url: "http://x",
                chart,
                version: "",
                credentials: None,
                pass_credentials: false,
            };
            let error = pull(Path::new("/nonexistent"), &request, &Tools::default()).unwrap_err();
            assert!(error.to_string().starts_with("chart: "), "{error}");
        }
    }
}
