//! `FailOnSharedResource=true` (Application-wide): an object of the plan whose live copy is
//! tracked by another Application makes the operation fail before its first write, naming the
//! object and that Application (as Argo CD does). Another Application is one whose tracking
//! annotation — Flotilla's `flotilla.dev/tracking-id` or Argo CD's `argocd.argoproj.io/tracking-id`
//! — names an application other than this one. Argo CD's instance label is not read: Helm charts
//! set `app.kubernetes.io/instance` to their release name, which names no Application. Pure.

use serde_json::Value;

use crate::manifest::ObjectKey;

use super::tracking::TRACKING_ANNOTATION;

/// Argo CD's tracking annotation (`<app>:<group>/<kind>:<namespace>/<name>`).
pub const ARGO_CD_TRACKING_ANNOTATION: &str = "argocd.argoproj.io/tracking-id";

/// An object of the plan that another Application tracks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedObject {
    /// The object.
    pub key: ObjectKey,
    /// The other Application, as its tracking id names it (`<namespace>_<name>` for Flotilla's
    /// controller, `<name>` for Argo CD's and `flotilla sync`).
    pub application: String,
    /// The annotation that names it.
    pub annotation: &'static str,
}

impl std::fmt::Display for SharedObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let application = self.application.replacen('_', "/", 1);
        write!(
            f,
            "{} is tracked by Application {application} ({})",
            self.key, self.annotation
        )
    }
}

/// Who tracks the `live` object of `key`, when it is not `app` (the tracking name this
/// operation applies under, `<namespace>_<name>` or a bare name). Argo CD's annotation naming
/// `app` or its bare name is this Application's own (adopted from Argo CD).
#[must_use]
pub fn tracked_elsewhere(key: &ObjectKey, live: &Value, app: &str) -> Option<SharedObject> {
    let owner = |annotation: &str| {
        live.pointer("/metadata/annotations")?
            .get(annotation)?
            .as_str()?
            .split_once(':')
            .map(|(owner, _)| owner.to_owned())
    };
    let bare = app.split_once('_').map_or(app, |(_, name)| name);
    let shared = |application: String, annotation| SharedObject {
        key: key.clone(),
        application,
        annotation,
    };
    if let Some(owner) = owner(TRACKING_ANNOTATION).filter(|owner| owner != app) {
        return Some(shared(owner, TRACKING_ANNOTATION));
    }
    owner(ARGO_CD_TRACKING_ANNOTATION)
        .filter(|owner| owner != app && owner != bare)
        .map(|owner| shared(owner, ARGO_CD_TRACKING_ANNOTATION))
}

/// The failure of an operation that found `shared` objects.
#[must_use]
pub fn shared_message(shared: &[SharedObject]) -> String {
    let each: Vec<String> = shared.iter().map(ToString::to_string).collect();
    format!(
        "nothing was written: FailOnSharedResource=true and {}",
        each.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn another_applications_tracking_is_named() {
        let key = ObjectKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("prod".into()),
            name: "settings".into(),
        };
        let live = |annotation: &str, id: &str| json!({"metadata": {"name": "settings", "annotations": {annotation: id}}});
        let flotilla = |id| live(TRACKING_ANNOTATION, id);
        let argocd = |id| live(ARGO_CD_TRACKING_ANNOTATION, id);
        let cases = [
            (flotilla("team_web:/ConfigMap:prod/settings"), None),
            (
                flotilla("team_other:/ConfigMap:prod/settings"),
                Some("team_other"),
            ),
            (argocd("web:/ConfigMap:prod/settings"), None),
            (argocd("team_web:/ConfigMap:prod/settings"), None),
            (argocd("other:/ConfigMap:prod/settings"), Some("other")),
            (json!({"metadata": {"name": "settings"}}), None),
        ];
        for (live, expected) in cases {
            let found = tracked_elsewhere(&key, &live, "team_web");
            assert_eq!(
                found.as_ref().map(|s| s.application.as_str()),
                expected,
                "{live}"
            );
        }
        let found = tracked_elsewhere(
            &key,
            &flotilla("team_other:/ConfigMap:prod/settings"),
            "team_web",
        )
        .unwrap();
        assert_eq!(
            shared_message(&[found]),
            "nothing was written: FailOnSharedResource=true and ConfigMap prod/settings is tracked by \
             Application team/other (flotilla.dev/tracking-id)"
        );
    }
}
