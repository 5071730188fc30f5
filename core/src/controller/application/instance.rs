//! The name an Application's objects are tracked under (the `<app>` of their tracking ids):
//! `<namespace>_<name>`, so Applications of the same name in different namespaces — or under
//! different controllers sharing a destination cluster — never take each other's objects for
//! their own (and never prune them). `flotilla sync` tracks by the bare name; objects it applied
//! are not the controller's. Pure.

use kube::ResourceExt;

use crate::api::Application;

/// The tracking name of `app`.
#[must_use]
pub fn instance_name(app: &Application) -> String {
    format!("{}_{}", app.namespace().unwrap_or_default(), app.name_any())
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
}
