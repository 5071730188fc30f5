//! Reading an ApplicationSet document from YAML or JSON text. Both `flotilla.dev/v1alpha1` and
//! Argo CD's `argoproj.io/v1alpha1` are accepted, and every field Flotilla does not know is an
//! error (an unsupported generator must never be silently dropped).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use crate::yaml::YamlError;

use super::{API_VERSION, ARGO_CD_API_VERSION, ApplicationSet, ApplicationSetSpec};

/// An ApplicationSet file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    #[error(transparent)]
    Yaml(#[from] YamlError),
    #[error(
        "{file}: apiVersion {found:?} is not supported for an ApplicationSet (use {API_VERSION} or {ARGO_CD_API_VERSION})"
    )]
    ApiVersion { file: String, found: String },
    #[error("{file}: kind {found:?} is not ApplicationSet")]
    Kind { file: String, found: String },
    #[error("{file}: ApplicationSet {name:?}: unsupported field {}: Flotilla does not implement it (check the spelling, or remove it)", fields.join(", "))]
    UnknownFields {
        file: String,
        name: String,
        fields: Vec<String>,
    },
    #[error("{file}: ApplicationSet has no metadata.name")]
    MissingName { file: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
    spec: ApplicationSetSpec,
}

/// Top-level fields that are read-only state, not configuration: ignored without complaint.
const IGNORED_TOP_LEVEL: &[&str] = &["status"];

/// Parses one ApplicationSet; `file` names the source in errors.
///
/// # Errors
/// Invalid YAML (with line and column), a wrong apiVersion or kind, unknown fields, no name.
pub fn parse_application_set(file: &str, text: &str) -> Result<ApplicationSet, DocumentError> {
    let mut unknown = Vec::new();
    let document: Document = serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_ignored::deserialize(de, |path| unknown.push(path.to_string()))
    })
    .map_err(|error| YamlError::new(file, &error))?;
    if document.api_version != API_VERSION && document.api_version != ARGO_CD_API_VERSION {
        return Err(DocumentError::ApiVersion {
            file: file.to_string(),
            found: document.api_version,
        });
    }
    if document.kind != "ApplicationSet" {
        return Err(DocumentError::Kind {
            file: file.to_string(),
            found: document.kind,
        });
    }
    let name = document
        .metadata
        .name
        .clone()
        .ok_or_else(|| DocumentError::MissingName {
            file: file.to_string(),
        })?;
    unknown.retain(|path| {
        !IGNORED_TOP_LEVEL
            .iter()
            .any(|top| path == top || path.starts_with(&format!("{top}.")))
    });
    if !unknown.is_empty() {
        return Err(DocumentError::UnknownFields {
            file: file.to_string(),
            name,
            fields: unknown,
        });
    }
    let mut application_set = ApplicationSet::new(&name, document.spec);
    application_set.metadata = document.metadata;
    Ok(application_set)
}
