//! Charts of a Helm chart repository: `chart` + `repoURL` (HTTP(S), its `index.yaml`) at
//! `targetRevision`, a version or a semver range (empty: the newest). `helm pull --untar`
//! resolves and fetches the chart (the one tool run that may reach a network); each resolved
//! version is kept under a cache directory, one per (repository, chart, version), read only
//! afterwards, so Applications of one chart version share it.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use super::tools::Tools;
use super::{SourceError, private_dir_in};

/// A chart fetched from a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PulledChart {
    /// The chart's directory (holding `Chart.yaml`).
    pub root: PathBuf,
    /// The version `targetRevision` resolved to.
    pub version: String,
}

/// The `helm pull` arguments for `chart` of `url` at `version` (a version or range; empty for
/// the newest), untarred into `into`.
#[must_use]
pub fn pull_args(url: &str, chart: &str, version: &str, into: &Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "pull".into(),
        chart.into(),
        "--repo".into(),
        url.into(),
        "--untar".into(),
        "--untardir".into(),
        into.into(),
    ];
    if !version.is_empty() && version != "*" {
        args.push("--version".into());
        args.push(version.into());
    }
    args
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
    let mut command = tools.helm(pull_args(url, chart, version, fetched.path()));
    command.network = true;
    command
        .run(tools.timeout)
        .map_err(|error| SourceError::Tool {
            tool: "helm",
            error,
        })?;
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
            pull_args("http://charts.local", "db", version, Path::new("/c/x"))
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
    }

    #[test]
    fn a_chart_name_cannot_be_a_path() {
        for chart in ["", "../db", "a/b", ".."] {
            let error = pull(
                Path::new("/nonexistent"),
                "http://x",
                chart,
                "",
                Tools::current(),
            )
            .unwrap_err();
            assert!(error.to_string().starts_with("chart: "), "{error}");
        }
    }
}
