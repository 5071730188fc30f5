//! Helm sources: `source.helm` as `helm template` arguments (pure: [`template_args`]), the
//! values files and file parameters resolved inside the chart, and the run. Hooks in the output
//! keep their `helm.sh/*` annotations, which the sync engine maps as Argo CD does
//! ([`flotilla_core::sync::parse_helm_hooks`]).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use flotilla_core::api::helm_source::HelmSource;

use super::toolchain::Toolchain;
use super::{SourceError, SourceOptions, inside};

/// The values files and `--set-file` parameters of a chart, as paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChartFiles {
    /// `valueFiles` that exist, in order.
    pub value_files: Vec<PathBuf>,
    /// `fileParameters` as `(name, path)`.
    pub file_parameters: Vec<(String, PathBuf)>,
}

impl ChartFiles {
    /// Resolves the files `helm` names, relative to `chart` (never outside it); a values file
    /// `$name/…` is read inside the repository `refs` lends under `name` (a multi-source
    /// Application's `ref`).
    ///
    /// # Errors
    /// A path that leaves the chart or the ref's repository, an unknown `$name`, or a values
    /// file that does not exist (unless `ignoreMissingValueFiles`), naming the field.
    pub fn resolve(
        chart: &Path,
        helm: &HelmSource,
        refs: &BTreeMap<String, PathBuf>,
    ) -> Result<Self, SourceError> {
        let mut files = Self::default();
        for (index, file) in helm.value_files.iter().enumerate() {
            let field = format!("helm.valueFiles[{index}]");
            let path = match file.strip_prefix('$') {
                Some(reference) => {
                    let (name, rest) = reference.split_once('/').unwrap_or((reference, ""));
                    let tree = refs.get(name).ok_or_else(|| SourceError::Field {
                        field: field.clone(),
                        message: format!("{file:?} names ${name}, but no source has ref {name:?}"),
                    })?;
                    inside(tree, rest, &field)?
                }
                None => inside(chart, file, &field)?,
            };
            if path.is_file() {
                files.value_files.push(path);
            } else if !helm.ignore_missing_value_files {
                let within = if file.starts_with('$') {
                    "its repository"
                } else {
                    "the chart"
                };
                return Err(SourceError::Field {
                    field,
                    message: format!("{file:?} does not exist in {within}"),
                });
            }
        }
        for (index, parameter) in helm.file_parameters.iter().enumerate() {
            let field = format!("helm.fileParameters[{index}]");
            let path = inside(chart, &parameter.path, &field)?;
            files.file_parameters.push((parameter.name.clone(), path));
        }
        Ok(files)
    }
}

/// The arguments of `helm template` for `chart` as Argo CD passes them: release name, namespace,
/// CRDs included unless `skipCrds`, values files, then the inline values (`values` or
/// `valuesObject`, written to `inline_values`), then `--set`/`--set-string`/`--set-file`.
#[must_use]
pub fn template_args(
    chart: &Path,
    release: &str,
    namespace: Option<&str>,
    helm: &HelmSource,
    files: &ChartFiles,
    inline_values: Option<&Path>,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["template".into(), release.into(), chart.into()];
    let mut flag = |name: &str, value: OsString| {
        args.push(name.into());
        args.push(value);
    };
    if let Some(namespace) = namespace {
        flag("--namespace", namespace.into());
    }
    if !helm.kube_version.is_empty() {
        flag("--kube-version", helm.kube_version.clone().into());
    }
    for api_version in &helm.api_versions {
        flag("--api-versions", api_version.into());
    }
    for file in files
        .value_files
        .iter()
        .map(PathBuf::as_path)
        .chain(inline_values)
    {
        flag("--values", file.into());
    }
    for parameter in &helm.parameters {
        let set = if parameter.force_string {
            "--set-string"
        } else {
            "--set"
        };
        flag(
            set,
            format!("{}={}", parameter.name, parameter.value).into(),
        );
    }
    for (name, path) in &files.file_parameters {
        let mut value = OsString::from(format!("{name}="));
        value.push(path);
        flag("--set-file", value);
    }
    if !helm.skip_crds {
        args.push("--include-crds".into());
    }
    if helm.skip_tests {
        args.push("--skip-tests".into());
    }
    args
}

/// The inline values of `helm` as a YAML document: `valuesObject` when set, else `values`.
fn inline_values(helm: &HelmSource) -> Result<Option<String>, SourceError> {
    match &helm.values_object {
        Some(object) => {
            serde_json::to_string(object)
                .map(Some)
                .map_err(|error| SourceError::Field {
                    field: "helm.valuesObject".into(),
                    message: error.to_string(),
                })
        }
        None if helm.values.trim().is_empty() => Ok(None),
        None => Ok(Some(helm.values.clone())),
    }
}

/// Renders the chart at `chart` with `helm template`; returns its output.
///
/// # Errors
/// Bad options (naming the field), an unusable helm, or helm's own failure with its stderr.
pub fn render(
    chart: &Path,
    options: &SourceOptions,
    toolchain: &Toolchain,
) -> Result<String, SourceError> {
    let tools = &toolchain.tools;
    let helm = options.helm.clone().unwrap_or_default();
    if !helm.version.is_empty() && helm.version != "v3" {
        return Err(SourceError::Field {
            field: "helm.version".into(),
            message: format!("{:?} is not supported (only v3)", helm.version),
        });
    }
    if let (Err(error), _) = toolchain.versions() {
        return Err(SourceError::Unusable {
            tool: "helm",
            error: error.clone(),
        });
    }
    let files = ChartFiles::resolve(chart, &helm, &options.refs)?;
    let private = super::private_dir()?;
    let values = match inline_values(&helm)? {
        Some(text) => {
            let path = private.path().join("values.yaml");
            std::fs::write(&path, text).map_err(|error| SourceError::Private {
                path: path.clone(),
                error,
            })?;
            Some(path)
        }
        None => None,
    };
    let release = Some(helm.release_name.as_str())
        .filter(|name| !name.is_empty())
        .unwrap_or(&options.application);
    let namespace = Some(helm.namespace.as_str())
        .filter(|ns| !ns.is_empty())
        .or(options.namespace.as_deref());
    let args = template_args(chart, release, namespace, &helm, &files, values.as_deref());
    tools
        .helm(args)
        .run(tools.timeout)
        .map_err(|error| SourceError::Tool {
            tool: "helm",
            error,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_core::api::helm_source::HelmParameter;

    fn args(helm: &HelmSource, files: &ChartFiles, inline: Option<&Path>) -> Vec<String> {
        template_args(Path::new("/c"), "db", Some("prod"), helm, files, inline)
            .into_iter()
            .map(|arg| arg.into_string().unwrap())
            .collect()
    }

    #[test]
    fn defaults_name_the_release_and_namespace_and_include_crds() {
        assert_eq!(
            args(&HelmSource::default(), &ChartFiles::default(), None),
            [
                "template",
                "db",
                "/c",
                "--namespace",
                "prod",
                "--include-crds"
            ]
        );
    }

    #[test]
    fn every_option_in_argo_cds_order() {
        let helm = HelmSource {
            kube_version: "1.30.0".into(),
            api_versions: vec!["monitoring.coreos.com/v1".into()],
            parameters: vec![
                HelmParameter {
                    name: "image.tag".into(),
                    value: "1.2".into(),
                    force_string: false,
                },
                HelmParameter {
                    name: "port".into(),
                    value: "80".into(),
                    force_string: true,
                },
            ],
            skip_crds: true,
            skip_tests: true,
            ..HelmSource::default()
        };
        let files = ChartFiles {
            value_files: vec!["/c/values-prod.yaml".into()],
            file_parameters: vec![("config".into(), "/c/files/app.conf".into())],
        };
        assert_eq!(
            args(&helm, &files, Some(Path::new("/tmp/p/values.yaml"))),
            [
                "template",
                "db",
                "/c",
                "--namespace",
                "prod",
                "--kube-version",
                "1.30.0",
                "--api-versions",
                "monitoring.coreos.com/v1",
                "--values",
                "/c/values-prod.yaml",
                "--values",
                "/tmp/p/values.yaml",
                "--set",
                "image.tag=1.2",
                "--set-string",
                "port=80",
                "--set-file",
                "config=/c/files/app.conf",
                "--skip-tests",
            ]
        );
    }

    #[test]
    fn values_object_wins_over_values() {
        let helm = HelmSource {
            values: "a: 1".into(),
            values_object: Some(serde_json::json!({"a": 2})),
            ..HelmSource::default()
        };
        assert_eq!(inline_values(&helm).unwrap().unwrap(), r#"{"a":2}"#);
        let helm = HelmSource {
            values: "a: 1".into(),
            ..HelmSource::default()
        };
        assert_eq!(inline_values(&helm).unwrap().unwrap(), "a: 1");
        assert_eq!(inline_values(&HelmSource::default()).unwrap(), None);
    }

    #[test]
    fn ref_value_files_stay_in_their_repository() {
        let (chart, repo) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir(repo.path().join("envs")).unwrap();
        std::fs::write(repo.path().join("envs/prod.yaml"), "a: 1").unwrap();
        let refs = BTreeMap::from([("values".to_owned(), repo.path().to_owned())]);
        let resolve = |file: &str| {
            let helm = HelmSource {
                value_files: vec![file.to_owned()],
                ..HelmSource::default()
            };
            ChartFiles::resolve(chart.path(), &helm, &refs)
                .map(|files| files.value_files)
                .map_err(|error| error.to_string())
        };
        assert_eq!(
            resolve("$values/envs/prod.yaml").unwrap(),
            [repo.path().join("envs/prod.yaml")]
        );
        let refused = [
            (
                "$other/envs/prod.yaml",
                "helm.valueFiles[0]: \"$other/envs/prod.yaml\" names $other, but no source has ref \"other\"",
            ),
            (
                "$values/envs/dev.yaml",
                "helm.valueFiles[0]: \"$values/envs/dev.yaml\" does not exist in its repository",
            ),
            (
                "$values/../escape.yaml",
                "helm.valueFiles[0]: \"../escape.yaml\" must be a relative path inside the source",
            ),
            (
                "$values//etc/passwd",
                "helm.valueFiles[0]: \"/etc/passwd\" must be a relative path inside the source",
            ),
            (
                "$values",
                "helm.valueFiles[0]: \"\" must be a relative path inside the source",
            ),
        ];
        for (file, expected) in refused {
            assert_eq!(resolve(file).unwrap_err(), expected, "{file}");
        }
    }

    #[test]
    fn value_files_stay_in_the_chart_and_missing_ones_are_named() {
        let chart = tempfile::tempdir().unwrap();
        std::fs::write(chart.path().join("prod.yaml"), "a: 1").unwrap();
        let helm = |files: &[&str], ignore| HelmSource {
            value_files: files.iter().map(|f| (*f).to_owned()).collect(),
            ignore_missing_value_files: ignore,
            ..HelmSource::default()
        };
        let resolved = ChartFiles::resolve(
            chart.path(),
            &helm(&["prod.yaml", "gone.yaml"], true),
            &BTreeMap::new(),
        );
        assert_eq!(
            resolved.unwrap().value_files,
            [chart.path().join("prod.yaml")]
        );
        let missing =
            ChartFiles::resolve(chart.path(), &helm(&["gone.yaml"], false), &BTreeMap::new());
        assert_eq!(
            missing.unwrap_err().to_string(),
            "helm.valueFiles[0]: \"gone.yaml\" does not exist in the chart"
        );
        let outside =
            ChartFiles::resolve(chart.path(), &helm(&["../x.yaml"], true), &BTreeMap::new());
        assert!(
            outside
                .unwrap_err()
                .to_string()
                .starts_with("helm.valueFiles[0]: \"../x.yaml\""),
        );
    }
}
