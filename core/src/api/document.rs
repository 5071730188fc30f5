//! Reading an ApplicationSet, Application or AppProject document from YAML or JSON text. Both
//! `flotilla.dev/v1alpha1` and Argo CD's `argoproj.io/v1alpha1` are accepted, and every field
//! Flotilla does not know is an error (an unsupported generator or project rule must never be
//! silently dropped).

use flotilla_generators::strict::{self, UnknownFields};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::yaml::YamlError;

use super::{API_VERSION, ARGO_CD_API_VERSION, AppProject, Application, ApplicationSet};

/// A document that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error(transparent)]
    Yaml(#[from] YamlError),
    #[error(
        "{file}: apiVersion {found:?} is not supported for an {kind} (use {API_VERSION} or {ARGO_CD_API_VERSION})"
    )]
    ApiVersion {
        file: String,
        kind: &'static str,
        found: String,
    },
    #[error("{file}: kind {found:?} is not {kind}")]
    Kind {
        file: String,
        kind: &'static str,
        found: String,
    },
    #[error("{file}: {kind} {name:?}: {fields}")]
    UnknownFields {
        file: String,
        kind: &'static str,
        name: String,
        fields: UnknownFields,
    },
    #[error("{file}: {kind} {name:?} has no spec")]
    MissingSpec {
        file: String,
        kind: &'static str,
        name: String,
    },
    #[error("{file}: the file is empty (no {kind} in it)")]
    Empty { file: String, kind: &'static str },
    #[error("{file}: {kind} has no metadata.name")]
    MissingName { file: String, kind: &'static str },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document<S> {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default = "Option::default")]
    spec: Option<S>,
}

/// Top-level fields that are read-only state, not configuration: ignored without complaint.
const IGNORED_TOP_LEVEL: &[&str] = &["status"];

/// Parses one ApplicationSet; `file` names the source in errors.
///
/// # Errors
/// Invalid YAML (with line and column), a wrong apiVersion or kind, unknown fields, no name.
pub fn parse_application_set(file: &str, text: &str) -> Result<ApplicationSet, DocumentError> {
    let (metadata, spec) = parse_kind(file, text, "ApplicationSet")?;
    let spec = spec.ok_or_else(|| missing_spec(file, "ApplicationSet", &metadata))?;
    let mut application_set =
        ApplicationSet::new(metadata.name.as_deref().unwrap_or_default(), spec);
    application_set.metadata = metadata;
    Ok(application_set)
}

/// Parses one Application (`flotilla sync APP.yaml`); `file` names the source in errors.
///
/// # Errors
/// Invalid YAML (with line and column), a wrong apiVersion or kind, unknown fields (an Argo CD
/// field Flotilla does not implement is refused by name), no name, no spec.
pub fn parse_application(file: &str, text: &str) -> Result<Application, DocumentError> {
    let (metadata, spec) = parse_kind(file, text, "Application")?;
    let spec = spec.ok_or_else(|| missing_spec(file, "Application", &metadata))?;
    let mut application = Application::new(metadata.name.as_deref().unwrap_or_default(), spec);
    application.metadata = metadata;
    Ok(application)
}

/// Parses one AppProject (an empty `spec` permits nothing, as in Argo CD); `file` names the
/// source in errors.
///
/// # Errors
/// Invalid YAML (with line and column), a wrong apiVersion or kind, unknown fields, no name.
pub fn parse_app_project(file: &str, text: &str) -> Result<AppProject, DocumentError> {
    let (metadata, spec) = parse_kind(file, text, "AppProject")?;
    let mut project = AppProject::new(
        metadata.name.as_deref().unwrap_or_default(),
        spec.unwrap_or_default(),
    );
    project.metadata = metadata;
    Ok(project)
}

/// The error for a document of `kind` without a `spec`.
fn missing_spec(file: &str, kind: &'static str, metadata: &ObjectMeta) -> DocumentError {
    DocumentError::MissingSpec {
        file: file.to_owned(),
        kind,
        name: metadata.name.clone().unwrap_or_default(),
    }
}

/// The metadata and spec of one document of `kind`.
fn parse_kind<S: DeserializeOwned>(
    file: &str,
    text: &str,
    kind: &'static str,
) -> Result<(ObjectMeta, Option<S>), DocumentError> {
    let blank = |line: &str| {
        let line = line.trim();
        line.is_empty() || line.starts_with('#') || line == "---" || line == "..."
    };
    if text.lines().all(blank) {
        return Err(DocumentError::Empty {
            file: file.to_owned(),
            kind,
        });
    }
    let (document, mut unknown): (Document<S>, UnknownFields) =
        serde_saphyr::with_deserializer_from_str(text, |de| strict::deserialize(de))
            .map_err(|error| YamlError::new(file, &error))?;
    if document.api_version != API_VERSION && document.api_version != ARGO_CD_API_VERSION {
        return Err(DocumentError::ApiVersion {
            file: file.to_string(),
            kind,
            found: document.api_version,
        });
    }
    if document.kind != kind {
        return Err(DocumentError::Kind {
            file: file.to_string(),
            kind,
            found: document.kind,
        });
    }
    let name = document
        .metadata
        .name
        .clone()
        .ok_or_else(|| DocumentError::MissingName {
            file: file.to_string(),
            kind,
        })?;
    unknown.0.retain(|path| {
        !IGNORED_TOP_LEVEL
            .iter()
            .any(|top| path == top || path.starts_with(&format!("{top}.")))
    });
    if !unknown.is_empty() {
        return Err(DocumentError::UnknownFields {
            file: file.to_string(),
            kind,
            name,
            fields: unknown,
        });
    }
    Ok((document.metadata, document.spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_application_with_a_field_flotilla_does_not_implement_is_refused_by_name() {
        let text = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web}\n\
                    spec:\n  project: default\n  source: {repoURL: 'https://x', path: a, name: p}\n  \
                    destination: {name: in-cluster, namespace: web}\n  info: [{name: a, value: b}]\n\
                    status: {sync: {status: Synced}}\n";
        let error = parse_application("app.yaml", text).unwrap_err();
        assert_eq!(
            error.to_string(),
            "app.yaml: Application \"web\": unsupported field spec.source.name, spec.info: \
             Flotilla does not implement it (check the spelling, or remove it)"
        );
        let known = text
            .replace(", name: p", "")
            .replace("  info: [{name: a, value: b}]\n", "");
        let application = parse_application("app.yaml", &known).unwrap();
        assert_eq!(application.metadata.name.as_deref(), Some("web"));
        assert_eq!(application.spec.source.path, "a");
        let error =
            parse_application("app.yaml", "apiVersion: v1\nkind: Application\n").unwrap_err();
        assert!(error.to_string().contains("apiVersion \"v1\""), "{error}");
    }

    #[test]
    fn scm_provider_fields_flotilla_does_not_implement_are_refused_by_name() {
        let text = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: repos}\n\
                    spec:\n  generators:\n  - scmProvider:\n      cloneProtocol: https\n      \
                    gitlab: {group: acme, allBranches: true, caRef: {configMapName: certs, key: ca}}\n      \
                    filters: [{repositoryMatch: ^app, pathsExist: [deploy]}]\n  \
                    - scmProvider: {azureDevOps: {organization: o, teamProject: p}, awsCodeCommit: {}}\n  \
                    template: {metadata: {name: x}, spec: {project: default, destination: {name: in-cluster}}}\n";
        let error = parse_application_set("repos.yaml", text).unwrap_err();
        assert_eq!(
            error.to_string(),
            "repos.yaml: ApplicationSet \"repos\": unsupported field \
             spec.generators.0.scmProvider.gitlab.caRef, spec.generators.1.scmProvider.azureDevOps, \
             spec.generators.1.scmProvider.awsCodeCommit: \
             Flotilla does not implement it (check the spelling, or remove it)"
        );
        let supported = text
            .replace(", caRef: {configMapName: certs, key: ca}", "")
            .replace("  - scmProvider: {azureDevOps: {organization: o, teamProject: p}, awsCodeCommit: {}}\n", "");
        let appset = parse_application_set("repos.yaml", &supported).unwrap();
        let generator = appset.spec.generators[0].scm_provider.as_ref().unwrap();
        assert_eq!(
            generator.gitlab.as_ref().map(|g| g.all_branches),
            Some(true)
        );
        assert_eq!(generator.filters[0].paths_exist, ["deploy"]);
    }

    #[test]
    fn project_fields_flotilla_does_not_implement_are_refused_by_name() {
        let text = "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: team}\n\
                    spec:\n  sourceRepos: ['*']\n  roles: [{name: ci}]\n  signatureKeys: [{keyID: ABC}]\n  \
                    orphanedResources: {warn: true}\n  destinationServiceAccounts: [{server: '*'}]\n  \
                    syncWindows: [{kind: deny, schedule: '0 22 * * *', duration: 1h, syncOverrun: true}]\n";
        let error = parse_app_project("team.yaml", text).unwrap_err();
        assert_eq!(
            error.to_string(),
            "team.yaml: AppProject \"team\": unsupported field spec.roles, spec.signatureKeys, \
             spec.orphanedResources, spec.destinationServiceAccounts, spec.syncWindows.0.syncOverrun: \
             Flotilla does not implement it (check the spelling, or remove it)"
        );
    }
}
