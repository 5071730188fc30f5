//! Reading an AppProject document from YAML or JSON text (`flotilla render|plan|sync|simulate
//! --project FILE`). Both `flotilla.dev/v1alpha1` and Argo CD's `argoproj.io/v1alpha1` are
//! accepted, and every field Flotilla does not know is an error naming the file and the field,
//! so a misspelt `syncWindows` never passes silently.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use crate::yaml::YamlError;

use super::{API_VERSION, ARGO_CD_API_VERSION, AppProject, AppProjectSpec};

/// An AppProject file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ProjectDocumentError {
    #[error(transparent)]
    Yaml(#[from] YamlError),
    #[error(
        "{file}: apiVersion {found:?} is not supported for an AppProject (use {API_VERSION} or {ARGO_CD_API_VERSION})"
    )]
    ApiVersion { file: String, found: String },
    #[error("{file}: kind {found:?} is not AppProject")]
    Kind { file: String, found: String },
    #[error("{file}: AppProject {name:?}: unsupported field {}: Flotilla does not implement it (check the spelling, or remove it)", fields.join(", "))]
    UnknownFields {
        file: String,
        name: String,
        fields: Vec<String>,
    },
    #[error("{file}: AppProject has no metadata.name")]
    MissingName { file: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: AppProjectSpec,
}

/// Parses one AppProject; `file` names the source in errors.
///
/// # Errors
/// Invalid YAML (with line and column), a wrong apiVersion or kind, unknown fields, no name.
pub fn parse_app_project(file: &str, text: &str) -> Result<AppProject, ProjectDocumentError> {
    let mut unknown = Vec::new();
    let document: Document = serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_ignored::deserialize(de, |path| unknown.push(path.to_string()))
    })
    .map_err(|error| YamlError::new(file, &error))?;
    let error_file = || file.to_owned();
    if document.api_version != API_VERSION && document.api_version != ARGO_CD_API_VERSION {
        return Err(ProjectDocumentError::ApiVersion {
            file: error_file(),
            found: document.api_version,
        });
    }
    if document.kind != "AppProject" {
        return Err(ProjectDocumentError::Kind {
            file: error_file(),
            found: document.kind,
        });
    }
    let name = document
        .metadata
        .name
        .clone()
        .ok_or_else(|| ProjectDocumentError::MissingName { file: error_file() })?;
    unknown.retain(|path| path != "status" && !path.starts_with("status."));
    if !unknown.is_empty() {
        return Err(ProjectDocumentError::UnknownFields {
            file: error_file(),
            name,
            fields: unknown,
        });
    }
    let mut project = AppProject::new(&name, document.spec);
    project.metadata = document.metadata;
    Ok(project)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::sync_window::WindowKind;

    #[test]
    fn reads_argo_cd_projects_and_refuses_unknown_fields() {
        let argo = "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata:\n  name: prod\n  namespace: argocd\nspec:\n  sourceRepos: ['*']\n  syncWindows:\n  - kind: deny\n    schedule: '0 16 * * 5'\n    duration: 64h\n    timeZone: Europe/Berlin\n    applications: ['*']\n    manualSync: true\n";
        let project = parse_app_project("prod.yaml", argo).unwrap();
        assert_eq!(project.metadata.name.as_deref(), Some("prod"));
        let window = &project.spec.sync_windows[0];
        assert_eq!(
            (window.kind, window.duration.as_str(), window.manual_sync),
            (WindowKind::Deny, "64h", true)
        );
        let cases = [
            (
                argo.replace("    manualSync: true\n", "    manualSnyc: true\n"),
                r#"prod.yaml: AppProject "prod": unsupported field spec.syncWindows.0.manualSnyc: Flotilla does not implement it (check the spelling, or remove it)"#,
            ),
            (
                argo.replace("kind: AppProject", "kind: Application"),
                r#"prod.yaml: kind "Application" is not AppProject"#,
            ),
            (
                argo.replace("argoproj.io/v1alpha1", "v1"),
                r#"prod.yaml: apiVersion "v1" is not supported for an AppProject (use flotilla.dev/v1alpha1 or argoproj.io/v1alpha1)"#,
            ),
            (
                argo.replace("  name: prod\n", ""),
                "prod.yaml: AppProject has no metadata.name",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(
                parse_app_project("prod.yaml", &text)
                    .unwrap_err()
                    .to_string(),
                message
            );
        }
    }
}
