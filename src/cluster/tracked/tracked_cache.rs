//! The objects of one cluster that carry the tracking annotation
//! ([`flotilla_core::sync::TRACKING_ANNOTATION`]), kept by one metadata watch per listable and watchable
//! resource type (Events aside), so that reading them costs no request, instead of a discovery
//! and a list of every type on each read. In a cluster whose Secret lists `namespaces`
//! ([`ClusterScope`]), each namespaced type is watched in each of those namespaces, and
//! cluster-scoped types only with `clusterResources: "true"`: nothing is listed or watched
//! across the cluster, so namespaced Roles suffice.
//!
//! What it owns: the discovered resource types, one watch task per type and namespace watched
//! (aborted when the cache is dropped), and, per watch, the `apiVersion`, `kind` and `metadata`
//! (without managed fields) of the objects that carry the annotation.
//!
//! How it stays correct:
//! - it starts on the first read, and a read answers only once every watched type has been listed
//!   (its watch's `InitDone`); a type whose watch fails before that fails the read, as a failed
//!   list did;
//! - types are discovered again when a read names a kind that is not watched (a CRD applied by a
//!   sync), at most every [`MISSING_KIND_RETRY`], and in any case every [`DISCOVERY_INTERVAL`];
//!   types no longer served are dropped with their objects;
//! - writes are read back: the objects the cluster applies are [`TrackedCache::record`]ed from the
//!   server's answer at once, so a read right after a sync sees them; a watch event older than the
//!   recorded object (by `resourceVersion`) does not undo it;
//! - otherwise it lags the server by a watch event, like any informer: an object deleted a moment
//!   ago may still be listed, which makes its readers delete it again or wait, never lose it.
//!
//! One Application's objects are found through an index ([`TrackedObjects`]), not by a scan.
//!
//! Every change a watch sees to a tracked object is also announced, as the object's tracking id,
//! to the subscribers of the cache's [`Touched`] channel: the controller compares the
//! Application whose id it is (or steps its running operation) from it instead of polling.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::PartialObjectMeta;
use kube::discovery::{ApiResource, Discovery, Scope, verbs};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use flotilla_core::manifest::ObjectKey;
use flotilla_core::secrets::cluster_scope::ClusterScope;
use flotilla_generators::duration::format_duration;

use super::tracked_objects::{ObjectId, Tracked, TrackedObjects, tracking_id};
use crate::cluster::api_server::api_error::{ApiError, watch_message};
use crate::cluster::api_server::request_count::{RequestCounter, RequestKind};
use crate::sync::execute::cluster_api::ClusterError;

/// How often the resource types are discovered again without a reason.
pub const DISCOVERY_INTERVAL: Duration = Duration::from_secs(60);
/// How soon a read naming an unwatched kind may discover again (the kind may not be served yet).
pub const MISSING_KIND_RETRY: Duration = Duration::from_secs(5);
/// How long a read waits for the watches to list for the first time.
const LIST_TIMEOUT: Duration = Duration::from_secs(60);

/// A resource type by group and kind (the version is the server's preferred one).
type TypeId = (String, String);

/// One watch: a type, in one namespace or (None) across the cluster.
type WatchId = (TypeId, Option<String>);

/// Where the tracking ids of changed tracked objects are announced (shared by the caches of
/// every cluster the controller uses); a subscriber that lags loses announcements, not the
/// objects' state.
pub type Touched = tokio::sync::broadcast::Sender<String>;

/// What a [`TrackedCache`] watches, as the metrics show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WatchSize {
    /// The resource types watched.
    pub resource_types: u64,
    /// The tracked objects held.
    pub objects: u64,
    /// The watch events received.
    pub events: u64,
}

/// The tracked objects of one cluster; see the module documentation.
#[derive(Default)]
pub struct TrackedCache {
    shared: Arc<Shared>,
    /// When the types were last discovered, and the types served then (watched or not); held
    /// while discovering, so one read discovers.
    discovered: tokio::sync::Mutex<Option<(Instant, BTreeSet<TypeId>)>>,
    /// What is watched: the namespaces, and whether cluster-scoped types.
    scope: ClusterScope,
}

/// What the watch tasks write and the readers read.
#[derive(Default)]
struct Shared {
    types: Mutex<BTreeMap<WatchId, Watched>>,
    /// Bumped whenever a type lists or fails, for readers waiting on the first lists.
    changed: watch::Sender<u64>,
    touched: Option<Touched>,
    /// Watch events received, for the metrics.
    events: AtomicU64,
}

/// One watched type.
struct Watched {
    /// Whether the watch has listed every object once.
    listed: bool,
    /// The last failure of the watch before it listed.
    failure: Option<String>,
    objects: TrackedObjects,
    task: AbortHandle,
}

impl Drop for TrackedCache {
    fn drop(&mut self) {
        for watched in lock(&self.shared.types).values() {
            watched.task.abort();
        }
    }
}

impl TrackedCache {
    /// A cache that watches what `scope` manages and announces changed tracked objects to
    /// `touched`.
    #[must_use]
    pub fn announcing(touched: Touched, scope: ClusterScope) -> Self {
        Self {
            shared: Arc::new(Shared {
                touched: Some(touched),
                ..Shared::default()
            }),
            discovered: tokio::sync::Mutex::default(),
            scope,
        }
    }

    /// The tracked objects (`apiVersion`, `kind`, `metadata`) whose tracking id starts with
    /// `<app>:`. `kinds` are the kinds the caller expects to
    /// exist (group, kind); one that is not watched yet makes the types be discovered again.
    ///
    /// # Errors
    /// Discovery fails, or a type's watch fails or does not list within a minute.
    pub async fn read(
        &self,
        client: &Client,
        counter: &RequestCounter,
        app: &str,
        kinds: &[TypeId],
    ) -> Result<Vec<Value>, ClusterError> {
        self.discover_if_due(client, counter, kinds).await?;
        let mut changes = self.shared.changed.subscribe();
        let deadline = tokio::time::Instant::now() + LIST_TIMEOUT;
        loop {
            if let Some(answer) = self.answer(app) {
                return answer;
            }
            let waited = tokio::time::timeout_at(deadline, changes.changed()).await;
            if !matches!(waited, Ok(Ok(()))) {
                let types = lock(&self.shared.types);
                let waiting = types
                    .iter()
                    .filter(|(_, watched)| !watched.listed)
                    .map(|(id, _)| watch_name(id));
                return Err(ClusterError::NotReady(format!(
                    "the watches of {} have not listed within {}",
                    waiting.collect::<Vec<_>>().join(", "),
                    format_duration(LIST_TIMEOUT)
                )));
            }
        }
    }

    /// Records an object the server just returned from a write, if it carries the annotation
    /// and its type is watched (a type not watched yet lists it when its watch starts).
    pub fn record(&self, object: &Value) {
        let Some(key) = ObjectKey::of_object(object) else {
            return;
        };
        let Some(metadata) = object.get("metadata") else {
            return;
        };
        let mut types = lock(&self.shared.types);
        let type_id = (key.group, key.kind);
        let watch = [key.namespace.clone(), None]
            .into_iter()
            .map(|namespace| (type_id.clone(), namespace))
            .find(|id| types.contains_key(id));
        if let Some(watched) = watch.and_then(|id| types.get_mut(&id)) {
            let object = json!({
                "apiVersion": object.get("apiVersion"),
                "kind": object.get("kind"),
                "metadata": without_managed_fields(metadata.clone()),
            });
            watched.apply((key.namespace, key.name), &object);
        }
    }

    /// Every tracked object of `app`, or None while a type has not listed (without failing).
    fn answer(&self, app: &str) -> Option<Result<Vec<Value>, ClusterError>> {
        let types = lock(&self.shared.types);
        let mut tracked = Vec::new();
        for (id, watched) in types.iter() {
            if !watched.listed {
                return Some(Err(ClusterError::NotReady(format!(
                    "watching {}: {}",
                    watch_name(id),
                    watched.failure.as_ref()?
                ))));
            }
            tracked.extend(watched.objects.of_app(app).cloned());
        }
        Some(Ok(tracked))
    }

    /// Discovers the types (watching new ones, dropping gone ones) on the first read, after
    /// [`DISCOVERY_INTERVAL`], or when `kinds` names an unwatched kind.
    async fn discover_if_due(
        &self,
        client: &Client,
        counter: &RequestCounter,
        kinds: &[TypeId],
    ) -> Result<(), ClusterError> {
        let mut discovered = self.discovered.lock().await;
        let due = discovered.as_ref().is_none_or(|(at, served)| {
            let missing = kinds.iter().any(|kind| !served.contains(kind));
            at.elapsed() >= DISCOVERY_INTERVAL || (missing && at.elapsed() >= MISSING_KIND_RETRY)
        });
        if !due {
            return Ok(());
        }
        let discovery = Discovery::new(client.clone())
            .run()
            .await
            .map_err(|error| ClusterError::unavailable("discovery", ApiError::from(error)))?;
        let versions: usize = discovery.groups().map(|g| g.versions().count()).sum();
        counter.add(RequestKind::Discovery, 2 + versions as u64);
        let mut served = BTreeMap::new();
        for group in discovery.groups() {
            for (resource, capabilities) in group.recommended_resources() {
                let usable = capabilities.supports_operation(verbs::LIST)
                    && capabilities.supports_operation(verbs::WATCH)
                    && resource.kind != "Event";
                if usable {
                    let id = (resource.group.clone(), resource.kind.clone());
                    served.insert(id, (resource, capabilities.scope == Scope::Namespaced));
                }
            }
        }
        let mut types = lock(&self.shared.types);
        types.retain(|(id, _), watched| {
            let kept = served.contains_key(id);
            if !kept {
                watched.task.abort();
            }
            kept
        });
        for (id, (resource, namespaced)) in &served {
            for namespace in self.watched_namespaces(*namespaced) {
                let watch_id = (id.clone(), namespace.clone());
                if types.contains_key(&watch_id) {
                    continue;
                }
                counter.add(RequestKind::List, 1);
                let api = match &namespace {
                    Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
                    None => Api::all_with(client.clone(), resource),
                };
                let task = tokio::spawn(watch_type(
                    Arc::clone(&self.shared),
                    watch_id.clone(),
                    api,
                    resource.clone(),
                    *namespaced,
                ));
                types.insert(
                    watch_id,
                    Watched {
                        listed: false,
                        failure: None,
                        objects: TrackedObjects::default(),
                        task: task.abort_handle(),
                    },
                );
            }
        }
        *discovered = Some((Instant::now(), served.into_keys().collect()));
        Ok(())
    }

    /// What the watches hold now: the resource types watched, the tracked objects they hold,
    /// and the watch events received so far.
    #[must_use]
    pub fn size(&self) -> WatchSize {
        let types = lock(&self.shared.types);
        let kinds: BTreeSet<&TypeId> = types.keys().map(|(type_id, _)| type_id).collect();
        WatchSize {
            resource_types: kinds.len() as u64,
            objects: types.values().map(|w| w.objects.kept() as u64).sum(),
            events: self.shared.events.load(Ordering::Relaxed),
        }
    }

    /// Where a type is watched: across the cluster (None), in each managed namespace, or (a
    /// cluster-scoped type the scope does not manage) nowhere.
    fn watched_namespaces(&self, namespaced: bool) -> Vec<Option<String>> {
        match self.scope.watched_namespaces() {
            Some(namespaces) if namespaced => namespaces.iter().cloned().map(Some).collect(),
            Some(_) if !self.scope.manages_cluster_resources() => Vec::new(),
            _ => vec![None],
        }
    }
}

impl Watched {
    /// Stores `object` unless a newer version of it is stored; forgets it when it no longer
    /// carries the annotation.
    fn apply(&mut self, id: ObjectId, object: &Value) {
        let resource_version = resource_version(object);
        if self
            .objects
            .get(&id)
            .is_some_and(|stored| stored.resource_version > resource_version)
        {
            return;
        }
        if tracking_id(object).is_empty() {
            self.objects.remove(&id);
        } else {
            self.objects.insert(
                id,
                Tracked {
                    resource_version,
                    object: object.clone(),
                },
            );
        }
    }

    /// Forgets the object unless a newer version of it (recreated since) is stored.
    fn delete(&mut self, id: &ObjectId, resource_version: u64) {
        if self
            .objects
            .get(id)
            .is_some_and(|stored| stored.resource_version <= resource_version)
        {
            self.objects.remove(id);
        }
    }
}

/// Follows one type's metadata watch into the shared state until aborted.
async fn watch_type(
    shared: Arc<Shared>,
    id: WatchId,
    api: Api<PartialObjectMeta<DynamicObject>>,
    resource: ApiResource,
    namespaced: bool,
) {
    let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(events);
    let mut listing = TrackedObjects::default();
    while let Some(event) = events.next().await {
        let as_value = |meta: PartialObjectMeta<DynamicObject>| {
            let mut metadata = meta.metadata;
            metadata.managed_fields = None;
            if !namespaced {
                metadata.namespace = None;
            }
            let object_id = (
                metadata.namespace.clone(),
                metadata.name.clone().unwrap_or_default(),
            );
            let object = json!({
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                "metadata": metadata,
            });
            (object_id, object)
        };
        if event.is_ok() {
            shared.events.fetch_add(1, Ordering::Relaxed);
        }
        let mut types = lock(&shared.types);
        let Some(watched) = types.get_mut(&id) else {
            return;
        };
        match event {
            Ok(Event::Init) => listing = TrackedObjects::default(),
            Ok(Event::InitApply(meta)) => {
                let (object_id, object) = as_value(meta);
                if !tracking_id(&object).is_empty() {
                    let resource_version = resource_version(&object);
                    listing.insert(
                        object_id,
                        Tracked {
                            resource_version,
                            object,
                        },
                    );
                }
            }
            Ok(Event::InitDone) => {
                watched.objects = std::mem::take(&mut listing);
                watched.listed = true;
                watched.failure = None;
                drop(types);
                shared.changed.send_modify(|n| *n += 1);
            }
            Ok(Event::Apply(meta)) => {
                let (object_id, object) = as_value(meta);
                announce(shared.touched.as_ref(), &object);
                watched.apply(object_id, &object);
            }
            Ok(Event::Delete(meta)) => {
                let (object_id, object) = as_value(meta);
                announce(shared.touched.as_ref(), &object);
                watched.delete(&object_id, resource_version(&object));
            }
            Err(error) => {
                let error = watch_message(error);
                tracing::debug!(watch = %watch_name(&id), "watch: {error}");
                if !watched.listed {
                    watched.failure = Some(error);
                    drop(types);
                    shared.changed.send_modify(|n| *n += 1);
                }
            }
        }
    }
}

/// `kind.group`, and ` in namespace NS` for a watch of one namespace.
fn watch_name(((group, kind), namespace): &WatchId) -> String {
    match namespace {
        Some(namespace) => format!("{kind}.{group} in namespace {namespace}"),
        None => format!("{kind}.{group}"),
    }
}

/// Announces a changed object's tracking id, if it has one and someone listens.
fn announce(touched: Option<&Touched>, object: &Value) {
    let id = tracking_id(object);
    if let Some(touched) = touched.filter(|t| !id.is_empty() && t.receiver_count() > 0) {
        let _ = touched.send(id.to_owned());
    }
}

/// `metadata.resourceVersion` as a number (0 when absent or not a number).
fn resource_version(object: &Value) -> u64 {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn without_managed_fields(mut metadata: Value) -> Value {
    if let Some(map) = metadata.as_object_mut() {
        map.remove("managedFields");
    }
    metadata
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_core::sync::TRACKING_ANNOTATION;

    fn object(name: &str, resource_version: &str, id: Option<&str>) -> Value {
        let mut annotations = serde_json::Map::new();
        if let Some(id) = id {
            annotations.insert(TRACKING_ANNOTATION.into(), id.into());
        }
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name, "namespace": "ns", "resourceVersion": resource_version,
            "annotations": annotations,
        }})
    }

    fn watched() -> Watched {
        let task = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .spawn(async {})
            .abort_handle();
        Watched {
            listed: true,
            failure: None,
            objects: TrackedObjects::default(),
            task,
        }
    }

    fn id(name: &str) -> ObjectId {
        (Some("ns".into()), name.into())
    }

    #[test]
    fn newer_versions_win_and_untracked_objects_are_forgotten() {
        let mut watched = watched();
        watched.apply(id("a"), &object("a", "10", Some("x:/ConfigMap:ns/a")));
        watched.apply(id("a"), &object("a", "9", None));
        assert!(
            watched.objects.get(&id("a")).is_some(),
            "an older event is ignored"
        );
        watched.delete(&id("a"), 9);
        assert!(
            watched.objects.get(&id("a")).is_some(),
            "a delete of an older version"
        );
        watched.apply(id("a"), &object("a", "11", None));
        assert!(
            watched.objects.get(&id("a")).is_none(),
            "the annotation was removed"
        );
        watched.apply(id("b"), &object("b", "12", Some("x:/ConfigMap:ns/b")));
        watched.delete(&id("b"), 13);
        assert_eq!(watched.objects.all().count(), 0);
    }

    #[test]
    fn a_namespaced_cluster_is_watched_namespace_by_namespace() {
        let cache = |namespaces: &[&str], cluster_resources| TrackedCache {
            scope: ClusterScope {
                namespaces: namespaces.iter().map(|n| (*n).to_owned()).collect(),
                cluster_resources,
            },
            shared: Arc::default(),
            discovered: tokio::sync::Mutex::default(),
        };
        let everywhere = cache(&[], false);
        assert_eq!(everywhere.watched_namespaces(true), [None]);
        assert_eq!(everywhere.watched_namespaces(false), [None]);
        let listed = cache(&["a", "b"], false);
        assert_eq!(
            listed.watched_namespaces(true),
            [Some("a".to_owned()), Some("b".to_owned())]
        );
        assert!(
            listed.watched_namespaces(false).is_empty(),
            "no cluster-scoped watch"
        );
        assert_eq!(cache(&["a"], true).watched_namespaces(false), [None]);
    }

    #[test]
    fn reads_select_by_application_and_wait_for_every_list() {
        let cache = TrackedCache::default();
        let mut first = watched();
        first.apply(id("a"), &object("a", "1", Some("ns_web:/ConfigMap:ns/a")));
        first.apply(id("b"), &object("b", "2", Some("ns_web2:/ConfigMap:ns/b")));
        lock(&cache.shared.types).insert((("".into(), "ConfigMap".into()), None), first);
        let names = |answer: Option<Result<Vec<Value>, ClusterError>>| -> Vec<String> {
            let mut names: Vec<String> = answer
                .unwrap()
                .unwrap()
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(cache.answer("ns_web")), ["a"]);
        assert_eq!(names(cache.answer("ns_web2")), ["b"]);
        assert!(names(cache.answer("ns")).is_empty());
        let mut unlisted = watched();
        unlisted.listed = false;
        lock(&cache.shared.types).insert((("apps".into(), "Deployment".into()), None), unlisted);
        assert!(
            cache.answer("ns_web").is_none(),
            "waits for the Deployments"
        );
        lock(&cache.shared.types)
            .get_mut(&(("apps".to_owned(), "Deployment".to_owned()), None))
            .unwrap()
            .failure = Some("forbidden".into());
        assert!(matches!(
            cache.answer("ns_web"),
            Some(Err(ClusterError::NotReady(message))) if message.contains("forbidden")
        ));
        cache.record(&object("c", "3", Some("ns_web:/ConfigMap:ns/c")));
        assert_eq!(
            lock(&cache.shared.types)[&(("".to_owned(), "ConfigMap".to_owned()), None)]
                .objects
                .all()
                .count(),
            3
        );
    }
}
