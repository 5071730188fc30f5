//! The objects the notifier watches, each kept as what it reads of them — its ledger key, the
//! reference its Events name, its occurrences now, and the object without its managed fields
//! and last-applied configuration (what Argo CD's triggers and templates read as `app`, as JSON
//! made when a pass needs it); the managed fields of a fleet's Applications were most of the
//! controller's memory, and a JSON tree of each Application kept between passes a third of it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch};
use kube::{Api, Client, Resource};

use flotilla_core::api::{AppProject, Application, ApplicationSet};
use flotilla_core::notify::occurrence::Occurrence;

/// One watched object: its ledger key, Event reference, occurrences now and the object.
#[derive(Clone, Debug)]
pub struct Watched {
    pub key: String,
    pub reference: ObjectReference,
    pub occurrences: Vec<Occurrence>,
    /// The object, without `metadata.managedFields` and the last-applied annotation.
    pub object: Kept,
}

/// A watched object as the notifier keeps it: typed, as the watch gave it (a JSON tree of it
/// is several times larger), without what the notifier never reads.
#[derive(Clone, Debug)]
pub enum Kept {
    Application(Arc<Application>),
    ApplicationSet(Arc<ApplicationSet>),
    Project(Arc<AppProject>),
    /// A kind whose object the notifier does not read.
    Nothing,
}

impl Kept {
    /// `object` without its managed fields and last-applied configuration.
    pub fn of<K: Resource + Clone>(object: &K, kept: fn(Arc<K>) -> Self) -> Self {
        let mut object = object.clone();
        let metadata = object.meta_mut();
        metadata.managed_fields = None;
        if let Some(annotations) = metadata.annotations.as_mut() {
            annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
        kept(Arc::new(object))
    }

    /// The object as JSON (`null` for [`Kept::Nothing`]).
    #[must_use]
    pub fn json(&self) -> serde_json::Value {
        let json = match self {
            Self::Application(app) => serde_json::to_value(&**app),
            Self::ApplicationSet(appset) => serde_json::to_value(&**appset),
            Self::Project(project) => serde_json::to_value(&**project),
            Self::Nothing => Ok(serde_json::Value::Null),
        };
        json.unwrap_or_default()
    }
}

/// The watched objects of one kind, by ledger key, as the last list and the changes since
/// show them.
#[derive(Debug, Default)]
pub struct WatchedObjects {
    /// Whether a first list has completed.
    listed: bool,
    objects: BTreeMap<String, Watched>,
    /// The objects of a list in progress (after a restart of the watch), replacing `objects`
    /// when it completes, as a reflector's store does.
    relisting: BTreeMap<String, Watched>,
}

impl WatchedObjects {
    /// Takes one watch event, each object reduced by `reduce`.
    pub fn apply<K>(&mut self, event: Event<K>, reduce: impl Fn(&K) -> Watched) {
        match event {
            Event::Apply(object) => {
                let watched = reduce(&object);
                self.objects.insert(watched.key.clone(), watched);
            }
            Event::Delete(object) => {
                self.objects.remove(&reduce(&object).key);
            }
            Event::Init => self.relisting.clear(),
            Event::InitApply(object) => {
                let watched = reduce(&object);
                self.relisting.insert(watched.key.clone(), watched);
            }
            Event::InitDone => {
                self.objects = std::mem::take(&mut self.relisting);
                self.listed = true;
            }
        }
    }

    /// Whether a first list has completed.
    #[must_use]
    pub fn listed(&self) -> bool {
        self.listed
    }

    /// Whether an object of this ledger key exists.
    #[must_use]
    pub fn contains(&self, key: &str) -> bool {
        self.objects.contains_key(key)
    }

    /// The object of this ledger key.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Watched> {
        self.objects.get(key)
    }

    /// The objects, by ledger key.
    pub fn iter(&self) -> impl Iterator<Item = &Watched> {
        self.objects.values()
    }
}

/// The objects of kind `K` in `namespace`, reduced by `reduce`, and the stream of their changes
/// that keeps them (nothing is watched until it is polled; failed watches are retried with
/// backoff, as a reflector's are).
pub fn watched<K>(
    client: Client,
    namespace: &str,
    reduce: fn(&K) -> Watched,
) -> (
    Arc<Mutex<WatchedObjects>>,
    impl Stream<Item = ()> + Send + 'static,
)
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let objects = Arc::new(Mutex::new(WatchedObjects::default()));
    let kept = Arc::clone(&objects);
    let api: Api<K> = Api::namespaced(client, namespace);
    let changes = watch(api, watcher::Config::default())
        .default_backoff()
        .filter_map(|event| std::future::ready(event.ok()))
        .map(move |event| lock(&kept).apply(event, reduce));
    (objects, changes)
}

/// The objects behind `objects`' lock (a panic while holding it left them whole: every change
/// is one map operation).
pub fn lock(objects: &Mutex<WatchedObjects>) -> MutexGuard<'_, WatchedObjects> {
    objects.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn config_map(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    /// Keyed by name; an object whose name starts with `bad` has an occurrence.
    fn reduce(object: &ConfigMap) -> Watched {
        let name = object.metadata.name.clone().unwrap_or_default();
        let occurrences = if name.starts_with("bad") {
            vec![Occurrence {
                trigger: flotilla_core::notify::trigger::Trigger::HealthDegraded,
                key: format!("on-health-degraded/{name}"),
                at: None,
                vars: serde_json::Map::new(),
            }]
        } else {
            Vec::new()
        };
        Watched {
            key: name,
            reference: ObjectReference::default(),
            occurrences,
            object: Kept::Nothing,
        }
    }

    #[test]
    fn a_list_then_changes_keep_the_objects_and_a_relist_replaces_them() {
        let mut objects = WatchedObjects::default();
        objects.apply(Event::Init, reduce);
        objects.apply(Event::InitApply(config_map("good")), reduce);
        objects.apply(Event::InitApply(config_map("bad-1")), reduce);
        assert!(!objects.listed(), "not listed before InitDone");
        assert!(!objects.contains("good"));
        objects.apply(Event::InitDone, reduce);
        assert!(objects.listed());
        assert!(objects.contains("good") && objects.contains("bad-1"));
        let occurring = |objects: &WatchedObjects| -> Vec<String> {
            objects
                .iter()
                .filter(|w| !w.occurrences.is_empty())
                .map(|w| w.key.clone())
                .collect()
        };
        assert_eq!(occurring(&objects), ["bad-1"]);

        objects.apply(Event::Apply(config_map("bad-2")), reduce);
        objects.apply(Event::Delete(config_map("bad-1")), reduce);
        assert!(!objects.contains("bad-1"));
        assert_eq!(occurring(&objects), ["bad-2"]);

        // A restarted watch lists again: until it is done the old objects stay; then only
        // what the new list holds.
        objects.apply(Event::Init, reduce);
        objects.apply(Event::InitApply(config_map("other")), reduce);
        assert!(objects.contains("bad-2"));
        objects.apply(Event::InitDone, reduce);
        assert!(
            objects.contains("other") && !objects.contains("bad-2") && !objects.contains("good")
        );
        assert!(objects.listed());
    }
}
