//! One Argo CD object as its `flotilla.dev` equivalent: read strictly, as Flotilla reads files
//! (a field Flotilla does not implement refuses the object, by name), then the same name, the
//! target namespace, the labels, annotations and finalizers, and the same `spec`. Argo CD's
//! `status`, its server-set metadata and kubectl's last-applied annotation are not copied.

use serde_json::{Map, Value, json};

use crate::api::document::{parse_app_project, parse_application, parse_application_set};
use crate::api::unrendered_fields::unrendered_unknown_fields;
use crate::api::{API_VERSION, ARGO_CD_API_VERSION};
use crate::controller::application::deletion::RESOURCE_FINALIZERS;
use flotilla_generators::strict::UnknownFields;

use super::ImportKind;

/// The parts of an object that importing copies (JSON pointers), compared to tell an update
/// from an unchanged object.
pub const COPIED: [&str; 4] = [
    "/metadata/labels",
    "/metadata/annotations",
    "/metadata/finalizers",
    "/spec",
];

/// kubectl's record of what it applied last: it describes the `argoproj.io` object, not ours.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// An object that is not imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// Not an Argo CD AppProject, ApplicationSet or Application: an input error.
    #[error(
        "{file}: {kind} {name:?} ({api_version}) is not an Argo CD AppProject, ApplicationSet or Application ({ARGO_CD_API_VERSION})"
    )]
    NotImportable {
        /// Where it was read.
        file: String,
        api_version: String,
        kind: String,
        name: String,
    },
    /// An Argo CD object Flotilla cannot take as it is: reported, never written.
    #[error("{reason}")]
    Refused {
        kind: ImportKind,
        name: String,
        reason: String,
    },
}

/// An imported object.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub kind: ImportKind,
    pub name: String,
    /// The `flotilla.dev` object.
    pub object: Value,
}

/// The `flotilla.dev` equivalent of `document` (read from `source`, which errors name), in
/// `namespace`.
///
/// # Errors
/// [`ConvertError::NotImportable`] for anything but Argo CD's three kinds;
/// [`ConvertError::Refused`] for a field Flotilla does not implement, an object without a name,
/// or a finalizer Flotilla does not run (it would keep the object from ever being deleted).
pub fn convert(source: &str, document: &Value, namespace: &str) -> Result<Converted, ConvertError> {
    let text = |pointer: &str| {
        document
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (api_version, kind_name, name) =
        (text("/apiVersion"), text("/kind"), text("/metadata/name"));
    let kind = ImportKind::of(&kind_name)
        .filter(|_| api_version == ARGO_CD_API_VERSION)
        .ok_or_else(|| ConvertError::NotImportable {
            file: source.to_owned(),
            api_version,
            kind: kind_name,
            name: name.clone(),
        })?;
    let refused = |reason: String| ConvertError::Refused {
        kind,
        name: name.clone(),
        reason,
    };
    let json = document.to_string();
    // What the schema keeps free-form in an ApplicationSet (templatePatch, generator overrides,
    // nested generators) is read strictly too, as `render` and the controller read it.
    let parsed = match kind {
        ImportKind::AppProject => {
            parse_app_project(source, &json).map(|_| UnknownFields::default())
        }
        ImportKind::ApplicationSet => parse_application_set(source, &json)
            .map(|appset| unrendered_unknown_fields(&appset.spec)),
        ImportKind::Application => {
            parse_application(source, &json).map(|_| UnknownFields::default())
        }
    };
    parsed
        .map_err(|error| refused(error.to_string()))?
        .refuse()
        .map_err(|fields| refused(format!("{source}: {} {name:?}: {fields}", kind.kind())))?;
    let metadata = document.get("metadata").cloned().unwrap_or_default();
    let finalizers: Vec<&str> = metadata
        .get("finalizers")
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let foreign: Vec<&str> = finalizers
        .iter()
        .copied()
        .filter(|f| kind != ImportKind::Application || !RESOURCE_FINALIZERS.contains(f))
        .collect();
    if !foreign.is_empty() {
        return Err(refused(format!(
            "{source}: {} {name:?}: metadata.finalizers: {} not run by Flotilla (the object could never be deleted); remove {}",
            kind.kind(),
            foreign.join(", "),
            if foreign.len() == 1 { "it" } else { "them" },
        )));
    }
    let mut annotations = metadata
        .get("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.remove(LAST_APPLIED);
    let mut meta = Map::new();
    meta.insert("name".into(), json!(name));
    meta.insert("namespace".into(), json!(namespace));
    for (key, value) in [
        ("labels", metadata.get("labels").cloned()),
        ("annotations", Some(Value::Object(annotations))),
        ("finalizers", metadata.get("finalizers").cloned()),
    ] {
        if let Some(value) = value.filter(|v| !super::is_empty(v)) {
            meta.insert(key.into(), value);
        }
    }
    let spec = document.get("spec").cloned().unwrap_or_else(|| json!({}));
    Ok(Converted {
        kind,
        name,
        object: json!({
            "apiVersion": API_VERSION,
            "kind": kind.kind(),
            "metadata": meta,
            "spec": spec,
        }),
    })
}

/// The Argo CD ApplicationSet that generated the Application `document`, from its owner
/// references.
#[must_use]
pub fn generated_by(document: &Value) -> Option<String> {
    document
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|owner| {
            owner.get("kind").and_then(Value::as_str) == Some("ApplicationSet")
                && owner
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("argoproj.io/"))
        })?
        .get("name")?
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn application() -> Value {
        json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {
                "name": "web", "namespace": "argocd", "uid": "u1", "resourceVersion": "7",
                "labels": {"team": "a"},
                "annotations": {LAST_APPLIED: "{}", "notified": "yes"},
                "finalizers": ["resources-finalizer.argocd.argoproj.io"],
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
                                     "name": "fleet", "uid": "u0"}],
            },
            "spec": {
                "project": "default",
                "source": {"repoURL": "https://git.example/a.git", "path": "web"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": "web"},
            },
            "status": {"sync": {"status": "Synced"}},
        })
    }

    #[test]
    fn an_application_keeps_its_name_labels_finalizers_and_spec() {
        let app = application();
        let converted = convert("namespace argocd", &app, "flotilla").unwrap();
        assert_eq!(converted.kind, ImportKind::Application);
        assert_eq!(
            converted.object,
            json!({
                "apiVersion": "flotilla.dev/v1alpha1",
                "kind": "Application",
                "metadata": {
                    "name": "web", "namespace": "flotilla", "labels": {"team": "a"},
                    "annotations": {"notified": "yes"},
                    "finalizers": ["resources-finalizer.argocd.argoproj.io"],
                },
                "spec": app["spec"],
            })
        );
        assert_eq!(generated_by(&app).as_deref(), Some("fleet"));
    }

    #[test]
    fn a_template_patch_adding_a_field_flotilla_does_not_implement_is_refused() {
        let appset = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": "cmp"},
            "spec": {"generators": [{"list": {"elements": [{"name": "a"}]}}],
                "templatePatch": "spec:\n  source:\n    name: '{{ .plugin }}'\n",
                "template": {"metadata": {"name": "{{name}}"}, "spec": {"project": "default",
                    "source": {"repoURL": "https://x", "path": "{{name}}"},
                    "destination": {"name": "in-cluster", "namespace": "x"}}}}});
        let error = convert("appsets.yaml", &appset, "argocd").unwrap_err();
        assert_eq!(
            error.to_string(),
            "appsets.yaml: ApplicationSet \"cmp\": unsupported field spec.templatePatch: \
             spec.source.name: Flotilla does not implement it (check the spelling, or remove it)"
        );
    }

    #[test]
    fn unsupported_fields_and_foreign_finalizers_are_refused_by_name() {
        let mut info = application();
        info["spec"]["info"] = json!([{"name": "a", "value": "b"}]);
        let error = convert("namespace argocd", &info, "argocd").unwrap_err();
        assert_eq!(
            error.to_string(),
            "namespace argocd: Application \"web\": unsupported field spec.info: Flotilla does not \
             implement it (check the spelling, or remove it)"
        );
        let mut project = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
            "metadata": {"name": "team", "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
            "spec": {"sourceRepos": ["*"]},
        });
        let error = convert("projects.yaml", &project, "argocd").unwrap_err();
        assert_eq!(
            error.to_string(),
            "projects.yaml: AppProject \"team\": metadata.finalizers: \
             resources-finalizer.argocd.argoproj.io not run by Flotilla (the object could never \
             be deleted); remove it"
        );
        project["apiVersion"] = json!("flotilla.dev/v1alpha1");
        assert!(matches!(
            convert("projects.yaml", &project, "argocd"),
            Err(ConvertError::NotImportable { .. })
        ));
    }
}
