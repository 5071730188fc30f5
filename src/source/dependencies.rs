//! Chart dependencies, as Argo CD builds them: a chart (in git, by `path`) whose `Chart.yaml`
//! declares dependencies its `charts/` directory lacks is copied and `helm dependency build`
//! fetches them into the copy, kept beside the commit's tree so the build runs once per
//! (commit, path) and never at steady state; a chart whose dependencies are all vendored is used
//! as it is, without network. Repositories with credentials (their `type: helm` Secrets) are
//! added with `helm repo add` (`--pass-credentials` with `passCredentials`), registries logged in
//! to, in one [`HelmSession`]; the others helm reads anonymously. Which dependencies are missing
//! ([`missing`]) is read from the chart alone.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::chart_repo::registry_host;
use super::helm_session::{HelmSession, RegistryAccess};
use super::tools::Tools;
use super::{SourceError, private_dir_in};
use flotilla_core::secrets::repository::RepoCredentials;

/// One entry of `dependencies` in `Chart.yaml`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Dependency {
    /// The chart's name.
    pub name: String,
    /// Where it comes from: an HTTP(S) repository, `oci://…`, `file://…` (empty: vendored).
    #[serde(default)]
    pub repository: String,
    /// A version or range.
    #[serde(default)]
    pub version: String,
}

/// The part of `Chart.yaml` read here.
#[derive(Debug, Default, Deserialize)]
struct ChartMetadata {
    #[serde(default)]
    dependencies: Vec<Dependency>,
}

/// How the credentials for a dependency repository URL are found (the repository Secrets).
pub type CredentialLookup<'a> = dyn Fn(&str) -> Result<Option<RepoCredentials>, String> + 'a;

/// The dependencies `Chart.yaml` of `chart` declares that `charts/` does not hold (as a
/// directory `charts/NAME` or an archive `charts/NAME-VERSION.tgz`).
///
/// # Errors
/// A `Chart.yaml` that cannot be read as a chart's metadata.
pub fn missing(chart: &Path) -> Result<Vec<Dependency>, SourceError> {
    let file = chart.join("Chart.yaml");
    let text = std::fs::read_to_string(&file).map_err(|error| SourceError::Field {
        field: "path".into(),
        message: format!("{}: {error}", file.display()),
    })?;
    let metadata: ChartMetadata =
        serde_saphyr::from_str(&text).map_err(|error| SourceError::Field {
            field: "path".into(),
            message: format!("{}: not a chart's metadata: {error}", file.display()),
        })?;
    let vendored: Vec<String> = std::fs::read_dir(chart.join("charts"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    Ok(metadata
        .dependencies
        .into_iter()
        .filter(|dependency| !is_vendored(&dependency.name, &vendored))
        .collect())
}

/// Whether the entries of `charts/` hold the chart `name`.
fn is_vendored(name: &str, entries: &[String]) -> bool {
    entries.iter().any(|entry| {
        entry == name
            || entry
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('-'))
                .and_then(|rest| rest.strip_suffix(".tgz"))
                .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The chart at `chart` ready for `helm template`: itself when `charts/` holds every
/// dependency, else its copy at `kept` (built there the first time, reused afterwards) with
/// the missing ones fetched by `helm dependency build`.
///
/// # Errors
/// An unreadable `Chart.yaml`, an unusable credentials Secret, a repository named by alias
/// (`@name`), or helm's failure (an unreachable repository, an unknown chart or version) with
/// its message.
pub fn prepare(
    chart: &Path,
    kept: &Path,
    credentials: &CredentialLookup<'_>,
    pass_credentials: bool,
    tools: &Tools,
) -> Result<PathBuf, SourceError> {
    let missing = missing(chart)?;
    if missing.is_empty() {
        return Ok(chart.to_owned());
    }
    let built = kept.join("chart");
    if built.is_dir() {
        return Ok(built);
    }
    let parent = kept.parent().unwrap_or(kept);
    std::fs::create_dir_all(parent).map_err(|error| SourceError::Private {
        path: parent.to_owned(),
        error,
    })?;
    let work = private_dir_in(parent)?;
    let copy = work.path().join("chart");
    copy_dir(chart, &copy).map_err(|error| SourceError::Private {
        path: copy.clone(),
        error,
    })?;
    let mut session = HelmSession::new(tools)?;
    // One run reads every repository: plain HTTP or no TLS verification if any asks for it.
    let mut access = RegistryAccess::default();
    let mut repositories: Vec<&str> = missing.iter().map(|d| d.repository.as_str()).collect();
    repositories.dedup();
    for (index, url) in repositories.into_iter().enumerate() {
        if url.starts_with('@') || url.starts_with("alias:") {
            return Err(SourceError::Field {
                field: "Chart.yaml dependencies".into(),
                message: format!(
                    "repository {url:?} names a repository added by name; give its URL"
                ),
            });
        }
        if url.is_empty() || url.starts_with("file://") {
            continue;
        }
        let found = credentials(url).map_err(|message| SourceError::Field {
            field: format!("Chart.yaml dependencies (repository {url})"),
            message,
        })?;
        let wanted = RegistryAccess::of(found.as_ref());
        access.insecure |= wanted.insecure;
        if url.starts_with("oci://") {
            access.plain_http |= wanted.plain_http;
            session.login_registry(registry_host(url), found.as_ref())?;
        } else if found.as_ref().is_some_and(|c| c.password.is_some()) {
            let name = format!("flotilla-dependency-{index}");
            session.add_repository(&name, url, found.as_ref(), pass_credentials)?;
        } else {
            session.remember(found.as_ref());
        }
    }
    let mut args: Vec<OsString> = vec!["dependency".into(), "build".into(), copy.into()];
    args.extend(access.pull_flags());
    session.run(args)?;
    if !built.is_dir() {
        // A concurrent build of the same chart may have kept it first: either copy serves.
        let _ = std::fs::rename(work.path(), kept);
    }
    Ok(built)
}

/// Copies the directory `from` to `to` (files and directories; links are followed).
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendored_dependencies_are_not_missing() {
        let chart = tempfile::tempdir().unwrap();
        std::fs::write(
            chart.path().join("Chart.yaml"),
            "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n\
             - {name: redis, version: 1.x, repository: https://charts.local}\n\
             - {name: common, version: 2.0.0, repository: https://charts.local}\n\
             - {name: db, repository: oci://reg.local/charts}\n\
             - {name: local}\n",
        )
        .unwrap();
        std::fs::create_dir_all(chart.path().join("charts/local")).unwrap();
        std::fs::write(chart.path().join("charts/common-2.0.0.tgz"), "").unwrap();
        std::fs::write(chart.path().join("charts/db-extra.tgz"), "").unwrap();
        let names: Vec<String> = missing(chart.path())
            .unwrap()
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["redis", "db"]);
    }

    #[test]
    fn a_chart_without_missing_dependencies_is_used_as_it_is() {
        let chart = tempfile::tempdir().unwrap();
        std::fs::write(
            chart.path().join("Chart.yaml"),
            "name: app\nversion: 1.0.0\n",
        )
        .unwrap();
        let kept = chart.path().join("kept");
        let prepared = prepare(chart.path(), &kept, &|_| Ok(None), false, &Tools::default());
        assert_eq!(prepared.unwrap(), chart.path());
        assert!(!kept.exists(), "nothing is copied");
    }

    #[test]
    fn a_repository_by_alias_is_refused_before_any_run() {
        let chart = tempfile::tempdir().unwrap();
        std::fs::write(
            chart.path().join("Chart.yaml"),
            "name: app\nversion: 1.0.0\ndependencies:\n- {name: x, repository: '@stable'}\n",
        )
        .unwrap();
        let kept = tempfile::tempdir().unwrap();
        let error = prepare(
            chart.path(),
            &kept.path().join("k"),
            &|_| Ok(None),
            false,
            &Tools::default(),
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("\"@stable\" names a repository added by name"),
            "{error}"
        );
    }
}
