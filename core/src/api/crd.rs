//! The CustomResourceDefinitions of Flotilla's resources, as `flotilla crd` prints them and as they
//! are committed under `deploy/crds/`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, ValidationRule,
};
use kube::CustomResourceExt;

use super::{AppProject, Application, ApplicationSet};

/// Every CRD, in a stable order, each with the file name it has under `deploy/crds/`.
#[must_use]
pub fn all() -> Vec<(&'static str, CustomResourceDefinition)> {
    vec![
        ("applications.flotilla.dev.yaml", application()),
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

/// The rule the API server checks (CEL) before it stores an Application: a destination names its
/// cluster by `server` or by `name`, not both — the controller would refuse it anyway
/// (`DestinationError::Both`), and Argo CD refuses it too; `kubectl apply` now says so at once.
/// Only on Applications: an ApplicationSet's template may leave one of the two empty only once
/// rendered.
const DESTINATION_RULE: &str =
    "!(has(self.server) && self.server != '' && has(self.name) && self.name != '')";

/// The Application CRD, with [`DESTINATION_RULE`] on `spec.destination`.
fn application() -> CustomResourceDefinition {
    let mut crd = Application::crd();
    for version in &mut crd.spec.versions {
        let destination = version
            .schema
            .as_mut()
            .and_then(|schema| schema.open_api_v3_schema.as_mut())
            .and_then(|root| root.properties.as_mut()?.get_mut("spec"))
            .and_then(|spec| spec.properties.as_mut()?.get_mut("destination"));
        if let Some(destination) = destination {
            destination.x_kubernetes_validations = Some(vec![ValidationRule {
                rule: DESTINATION_RULE.to_owned(),
                message: Some("destination sets both server and name; set one".to_owned()),
                ..ValidationRule::default()
            }]);
        }
    }
    crd
}
