//! The tracking `flotilla import` reports Flotilla taking over: each live object Argo CD lists
//! in an Application's `status.resources`, and whether it carries Argo CD's tracking for that
//! Application — its `argocd.argoproj.io/tracking-id` annotation, its `app.kubernetes.io/instance`
//! label, or both. Flotilla's first sync adopts the objects its manifests name in place whatever
//! they carry, and writes its own tracking id, which the report gives.

use serde::Serialize;
use serde_json::Value;

use crate::manifest::ObjectKey;
use crate::sync::{ARGO_CD_TRACKING_ANNOTATION, tracking_id};

/// Argo CD's instance label (its `label` and `annotation+label` tracking methods).
pub const ARGO_CD_INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

/// What a live object carries of Argo CD's tracking for the Application.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "found", rename_all = "camelCase")]
pub enum Tracking {
    /// Argo CD's tracking annotation names the Application.
    Annotation,
    /// Argo CD's instance label names the Application.
    Label,
    /// Both.
    AnnotationAndLabel,
    /// Neither (another Application's, or none): adopted all the same if the manifests name it.
    Untracked,
    /// Not on the cluster: Flotilla's first sync creates it.
    Missing,
    /// The destination could not be read.
    NotRead { reason: String },
}

impl std::fmt::Display for Tracking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Annotation => write!(f, "annotation {ARGO_CD_TRACKING_ANNOTATION}"),
            Self::Label => write!(f, "label {ARGO_CD_INSTANCE_LABEL}"),
            Self::AnnotationAndLabel => write!(
                f,
                "annotation {ARGO_CD_TRACKING_ANNOTATION} and label {ARGO_CD_INSTANCE_LABEL}"
            ),
            Self::Untracked => f.write_str("no Argo CD tracking for this Application"),
            Self::Missing => f.write_str("not found: the first sync creates it"),
            Self::NotRead { reason } => write!(f, "not read: {reason}"),
        }
    }
}

/// A live object of an imported Application.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrackedObject {
    /// The Application's name.
    pub application: String,
    pub object: ObjectKey,
    pub tracking: Tracking,
    /// The `flotilla.dev/tracking-id` Flotilla's first sync writes on it.
    pub flotilla_tracking_id: String,
}

impl TrackedObject {
    /// The object `key` of the Application `name`, imported into `namespace`, with `tracking`.
    #[must_use]
    pub fn new(name: &str, namespace: &str, key: ObjectKey, tracking: Tracking) -> Self {
        Self {
            application: name.to_owned(),
            flotilla_tracking_id: tracking_id(&format!("{namespace}_{name}"), &key),
            object: key,
            tracking,
        }
    }
}

/// The objects Argo CD lists in the Application `document`'s `status.resources`.
#[must_use]
pub fn tracked_resources(document: &Value) -> Vec<ObjectKey> {
    let Some(resources) = document
        .pointer("/status/resources")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    resources
        .iter()
        .filter_map(|resource| {
            let text = |field: &str| resource.get(field).and_then(Value::as_str);
            Some(ObjectKey {
                group: text("group").unwrap_or_default().to_owned(),
                kind: text("kind")?.to_owned(),
                namespace: text("namespace")
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned),
                name: text("name")?.to_owned(),
            })
        })
        .collect()
}

/// What `live` (None: not found) carries of Argo CD's tracking for the Application `name` of
/// namespace `namespace` (Argo CD names it `name`, or `namespace_name` outside its own
/// namespace).
#[must_use]
pub fn tracking_of(live: Option<&Value>, name: &str, namespace: &str) -> Tracking {
    let Some(live) = live else {
        return Tracking::Missing;
    };
    let qualified = format!("{namespace}_{name}");
    let names_it = |owner: &str| owner == name || owner == qualified;
    let annotation = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ARGO_CD_TRACKING_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|id| id.split_once(':'))
        .is_some_and(|(owner, _)| names_it(owner));
    let label = live
        .pointer("/metadata/labels")
        .and_then(|l| l.get(ARGO_CD_INSTANCE_LABEL))
        .and_then(Value::as_str)
        .is_some_and(names_it);
    match (annotation, label) {
        (true, true) => Tracking::AnnotationAndLabel,
        (true, false) => Tracking::Annotation,
        (false, true) => Tracking::Label,
        (false, false) => Tracking::Untracked,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn argo_cd_tracking_is_read_from_the_annotation_and_the_label() {
        let live = |annotation: &str, label: &str| {
            json!({"metadata": {"annotations": {ARGO_CD_TRACKING_ANNOTATION: annotation},
                                "labels": {ARGO_CD_INSTANCE_LABEL: label}}})
        };
        let cases = [
            (
                live("web:/ConfigMap:shop/a", "web"),
                Tracking::AnnotationAndLabel,
            ),
            (
                live("argocd_web:/ConfigMap:shop/a", "x"),
                Tracking::Annotation,
            ),
            (live("other:/ConfigMap:shop/a", "web"), Tracking::Label),
            (
                live("other:/ConfigMap:shop/a", "other"),
                Tracking::Untracked,
            ),
            (json!({"metadata": {}}), Tracking::Untracked),
        ];
        for (object, expected) in cases {
            assert_eq!(
                tracking_of(Some(&object), "web", "argocd"),
                expected,
                "{object}"
            );
        }
        assert_eq!(tracking_of(None, "web", "argocd"), Tracking::Missing);
    }

    #[test]
    fn the_objects_are_argo_cds_status_resources() {
        let app = json!({"status": {"resources": [
            {"version": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "a", "status": "Synced"},
            {"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole", "name": "r"},
        ]}});
        let keys = tracked_resources(&app);
        assert_eq!(keys.len(), 2);
        assert_eq!(keys[0].to_string(), "ConfigMap shop/a");
        assert_eq!(keys[1].group, "rbac.authorization.k8s.io");
        let tracked = TrackedObject::new("web", "flotilla", keys[0].clone(), Tracking::Label);
        assert_eq!(
            tracked.flotilla_tracking_id,
            "flotilla_web:/ConfigMap:shop/a"
        );
    }
}
