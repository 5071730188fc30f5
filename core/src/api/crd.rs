//! The CustomResourceDefinitions of Flotilla's resources, as `flotilla crd` prints them and as they
//! are committed under `deploy/crds/`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use super::{AppProject, Application, ApplicationSet};

/// Every CRD, in a stable order, each with the file name it has under `deploy/crds/`.
#[must_use]
pub fn all() -> Vec<(&'static str, CustomResourceDefinition)> {
    vec![
        ("applications.flotilla.dev.yaml", Application::crd()),
        ("applicationsets.flotilla.dev.yaml", ApplicationSet::crd()),
        ("appprojects.flotilla.dev.yaml", AppProject::crd()),
    ]
}

/// One CRD as a YAML document.
///
/// # Errors
/// Serialization failures.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_saphyr::SerializeError> {
    serde_saphyr::to_string(crd)
}
