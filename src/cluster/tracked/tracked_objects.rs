//! The tracked objects of one resource type, kept by object and indexed by the Application whose
//! tracking id they carry, so that reading one Application's objects costs a lookup instead of a
//! scan of every object of the type (a scan per compare was most of an idle controller's CPU).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use flotilla_core::sync::TRACKING_ANNOTATION;

/// An object of one type by namespace and name.
pub type ObjectId = (Option<String>, String);

/// One object carrying the tracking annotation.
#[derive(Debug, Clone, PartialEq)]
pub struct Tracked {
    pub resource_version: u64,
    /// `apiVersion`, `kind` and `metadata`.
    pub object: Value,
}

/// The tracked objects of one type; see the module documentation.
#[derive(Debug, Default)]
pub struct TrackedObjects {
    objects: HashMap<ObjectId, Tracked>,
    /// The objects of each Application (the part of the tracking id before its first `:`).
    by_app: HashMap<String, HashSet<ObjectId>>,
}

impl TrackedObjects {
    pub fn get(&self, id: &ObjectId) -> Option<&Tracked> {
        self.objects.get(id)
    }

    /// Stores `tracked` as the object `id`, replacing what was stored.
    pub fn insert(&mut self, id: ObjectId, tracked: Tracked) {
        self.remove(&id);
        self.by_app
            .entry(app_of(&tracked.object).to_owned())
            .or_default()
            .insert(id.clone());
        self.objects.insert(id, tracked);
    }

    pub fn remove(&mut self, id: &ObjectId) {
        let Some(removed) = self.objects.remove(id) else {
            return;
        };
        let app = app_of(&removed.object);
        if let Some(ids) = self.by_app.get_mut(app) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_app.remove(app);
            }
        }
    }

    /// The objects whose tracking id starts with `<app>:`.
    pub fn of_app<'a>(&'a self, app: &str) -> impl Iterator<Item = &'a Value> {
        self.by_app
            .get(app)
            .into_iter()
            .flatten()
            .filter_map(|id| self.objects.get(id))
            .map(|tracked| &tracked.object)
    }

    /// How many objects are kept.
    #[must_use]
    pub fn kept(&self) -> usize {
        self.objects.len()
    }

    /// Every object kept (the tests' view).
    #[cfg(test)]
    pub fn all(&self) -> impl Iterator<Item = &Value> {
        self.objects.values().map(|tracked| &tracked.object)
    }
}

/// The object's tracking id, or "" without one.
pub fn tracking_id(object: &Value) -> &str {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(TRACKING_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The Application part of the object's tracking id (`<app>:<group>/<kind>:<namespace>/<name>`).
fn app_of(object: &Value) -> &str {
    let id = tracking_id(object);
    id.split_once(':').map_or(id, |(app, _)| app)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tracked(name: &str, app: &str) -> Tracked {
        Tracked {
            resource_version: 1,
            object: json!({"metadata": {"name": name, "annotations": {
                TRACKING_ANNOTATION: format!("{app}:/ConfigMap:ns/{name}")
            }}}),
        }
    }

    fn names<'a>(objects: impl Iterator<Item = &'a Value>) -> Vec<&'a str> {
        let mut names: Vec<&str> = objects
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        names.sort_unstable();
        names
    }

    fn id(name: &str) -> ObjectId {
        (Some("ns".into()), name.into())
    }

    #[test]
    fn indexes_objects_by_application_through_replacements_and_removals() {
        let mut objects = TrackedObjects::default();
        objects.insert(id("a"), tracked("a", "ns_web"));
        objects.insert(id("b"), tracked("b", "ns_web"));
        objects.insert(id("c"), tracked("c", "ns_web2"));
        assert_eq!(names(objects.of_app("ns_web")), ["a", "b"]);
        assert_eq!(names(objects.of_app("ns_web2")), ["c"]);
        assert_eq!(names(objects.of_app("ns_we")), Vec::<&str>::new());
        objects.insert(id("b"), tracked("b", "ns_web2"));
        assert_eq!(
            names(objects.of_app("ns_web")),
            ["a"],
            "b moved to another Application"
        );
        assert_eq!(names(objects.of_app("ns_web2")), ["b", "c"]);
        objects.remove(&id("a"));
        assert_eq!(names(objects.of_app("ns_web")), Vec::<&str>::new());
        assert!(!objects.by_app.contains_key("ns_web"), "no empty entries");
        assert_eq!(names(objects.all()), ["b", "c"]);
    }
}
