//! The name an Application's objects are tracked under (the `<app>` of their tracking ids):
//! `<namespace>_<name>`, so Applications of the same name in different namespaces — or under
//! different controllers sharing a destination cluster — never take each other's objects for
//! their own (and never prune them). `flotilla sync` tracks by the bare name; objects it applied
//! are not the controller's. [`application_of`] reads the Application back from a tracking id.
//! Pure.

use kube::ResourceExt;

use crate::api::Application;

/// The tracking name of `app`.
#[must_use]
pub fn instance_name(app: &Application) -> String {
    format!("{}_{}", app.namespace().unwrap_or_default(), app.name_any())
}

/// The name of the Application in `namespace` whose objects carry `tracking_id` (see
/// [`crate::sync::tracking_id`]), if one of that namespace tracks them: the inverse of
/// [`instance_name`] (a namespace has no `_`).
#[must_use]
pub fn application_of<'a>(tracking_id: &'a str, namespace: &str) -> Option<&'a str> {
    let instance = tracking_id.split_once(':')?.0;
    let (in_namespace, name) = instance.split_once('_')?;
    (in_namespace == namespace && !name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApplicationSpec;

    #[test]
    fn qualified_by_namespace() {
        let mut app = Application::new("web", ApplicationSpec::default());
        app.metadata.namespace = Some("team-a".into());
        assert_eq!(instance_name(&app), "team-a_web");
    }

    #[test]
    fn tracking_ids_name_their_application() {
        let id = "team-a_web_v2:apps/Deployment:shop/web";
        assert_eq!(application_of(id, "team-a"), Some("web_v2"));
        assert_eq!(application_of(id, "team-b"), None);
        assert_eq!(
            application_of("web:apps/Deployment:shop/web", "team-a"),
            None,
            "flotilla sync's"
        );
        assert_eq!(application_of("team-a_:/ConfigMap:shop/c", "team-a"), None);
    }
}
