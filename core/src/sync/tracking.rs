//! Which live objects an Application manages: the annotation `flotilla.dev/tracking-id`, written
//! on every applied object as `<app>:<group>/<kind>:<namespace>/<name>` (Argo CD's annotation
//! tracking format). An object is managed only when the id names this Application *and* the
//! object itself, so copies of a manifest (which carry a foreign identity) are never pruned.
//! Every object is applied under one field manager, whose managed fields tell what we set.

use std::collections::BTreeMap;

use crate::manifest::ObjectKey;

/// The field manager of every apply.
pub const FIELD_MANAGER: &str = "flotilla";

/// The tracking annotation.
pub const TRACKING_ANNOTATION: &str = "flotilla.dev/tracking-id";

/// The tracking id of an object managed by `app`.
#[must_use]
pub fn tracking_id(app: &str, key: &ObjectKey) -> String {
    format!(
        "{app}:{}/{}:{}/{}",
        key.group,
        key.kind,
        key.namespace.as_deref().unwrap_or(""),
        key.name
    )
}

/// Whether a live object with these annotations is managed by `app`.
#[must_use]
pub fn is_managed_by(app: &str, key: &ObjectKey, annotations: &BTreeMap<String, String>) -> bool {
    annotations
        .get(TRACKING_ANNOTATION)
        .is_some_and(|id| *id == tracking_id(app, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_app_and_object() {
        let key = ObjectKey {
            group: "apps".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "api".into(),
        };
        assert_eq!(tracking_id("shop", &key), "shop:apps/Deployment:shop/api");
        let annotated =
            |id: &str| BTreeMap::from([(TRACKING_ANNOTATION.to_owned(), id.to_owned())]);
        assert!(is_managed_by(
            "shop",
            &key,
            &annotated("shop:apps/Deployment:shop/api")
        ));
        assert!(!is_managed_by(
            "other",
            &key,
            &annotated("shop:apps/Deployment:shop/api")
        ));
        assert!(!is_managed_by(
            "shop",
            &key,
            &annotated("shop:apps/Deployment:shop/copied")
        ));
        assert!(!is_managed_by("shop", &key, &BTreeMap::new()));
    }
}
