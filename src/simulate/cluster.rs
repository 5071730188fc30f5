//! The embedded cluster: a [`ClusterApi`] that keeps applied objects in memory and reports their
//! status as [`super::progress`] moves it over virtual time. Like an API server it makes no sync
//! decisions: it applies, returns, lists and deletes; the sync engine decides everything.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use flotilla_core::health::StatusKinds;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::sync::execute::cluster_api::{Applied, ClusterApi, ClusterError, Deleted, Propagation};
use flotilla_core::manifest::ObjectKey;
use flotilla_core::simulated_pod::{Behavior, Outcome};
use flotilla_core::sync::{FieldValidation, ResourceAction, TRACKING_ANNOTATION};

use super::clock::VirtualClock;
use super::durations::KindDurations;
use super::faults::Faults;
use super::progress::{can_fail, next_change, status_at, waiting_container};

/// How objects behave: durations per kind and injected failures.
#[derive(Debug, Clone, Default)]
pub struct ClusterBehavior {
    /// Ready-after durations by kind.
    pub durations: KindDurations,
    /// Injected failures.
    pub faults: Faults,
    /// Namespaces the cluster has before the rollout, besides the ones every cluster has
    /// ([`BUILT_IN_NAMESPACES`]). An object in any other namespace is rejected as the API server
    /// rejects it, until a sync creates that Namespace (`CreateNamespace=true` or a manifest).
    pub namespaces: Vec<String>,
}

/// The namespaces a new cluster has.
pub const BUILT_IN_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// One stored object: kept once, as last applied; the metadata the server adds and the status
/// are added when it is read.
#[derive(Debug, Clone)]
struct Stored {
    /// The object as last applied.
    applied: Value,
    /// `metadata.generation`: 1, raised when the spec changes.
    generation: i64,
    /// `metadata.creationTimestamp`, to the second.
    created: Timestamp,
    /// When its spec last changed (virtual time since the start).
    changed_at: Duration,
    /// When it was last written.
    written_at: Duration,
    behavior: Behavior,
}

/// An in-memory cluster on a virtual clock.
#[derive(Debug)]
pub struct SimCluster {
    clock: VirtualClock,
    behavior: Arc<ClusterBehavior>,
    objects: Mutex<BTreeMap<ObjectKey, Stored>>,
    /// Wakes those waiting on an object when it is written or deleted.
    writes: Mutex<HashMap<ObjectKey, Arc<Notify>>>,
}

impl SimCluster {
    /// An empty cluster.
    #[must_use]
    pub fn new(clock: VirtualClock, behavior: Arc<ClusterBehavior>) -> Self {
        Self {
            clock,
            behavior,
            objects: Mutex::new(BTreeMap::new()),
            writes: Mutex::new(HashMap::new()),
        }
    }

    fn objects(&self) -> MutexGuard<'_, BTreeMap<ObjectKey, Stored>> {
        self.objects
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The object as a client reads it now: as applied, with the server's metadata and the
    /// status as of now.
    fn read(&self, stored: &Stored) -> Value {
        let mut object = stored.applied.clone();
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.insert("generation".to_owned(), json!(stored.generation));
            metadata.insert(
                "creationTimestamp".to_owned(),
                json!(stored.created.to_string()),
            );
        }
        let elapsed = self.clock.elapsed().saturating_sub(stored.changed_at);
        if let Some(status) = status_at(&object, stored.behavior, elapsed) {
            object["status"] = status;
        }
        object
    }

    /// Wakes whoever waits on `key`.
    fn written(&self, key: &ObjectKey) {
        let writes = self
            .writes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(notify) = writes.get(key) {
            notify.notify_waiters();
        }
    }

    /// The earliest time (since the start) after `since` at which a read of one of `keys` may
    /// answer differently than at `since`; `None` when none of them will change by itself. A
    /// key that is missing, or was written after `since`, may differ at once.
    fn first_change(&self, keys: &[ObjectKey], since: Duration) -> Option<Duration> {
        let objects = self.objects();
        keys.iter()
            .filter_map(|key| {
                let Some(stored) = objects.get(key) else {
                    return Some(since);
                };
                if stored.written_at > since {
                    return Some(since);
                }
                let elapsed = since.saturating_sub(stored.changed_at);
                next_change(&stored.applied, stored.behavior, elapsed)
                    .map(|next| stored.changed_at + next)
            })
            .min()
    }

    /// How the object behaves: its annotations (and its pod template's), the kind's duration, and
    /// whether a `--fail` selector names it.
    fn behavior_of(&self, object: &Value, key: &ObjectKey) -> Result<Behavior, ClusterError> {
        let annotations = |pointer: &str| -> BTreeMap<String, String> {
            object
                .pointer(pointer)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        };
        let mut merged = annotations("/spec/template/metadata/annotations");
        let own = annotations("/metadata/annotations");
        let app = own
            .get(TRACKING_ANNOTATION)
            .and_then(|id| id.split_once(':'))
            .map(|(app, _)| app.to_owned());
        merged.extend(own);
        let mut behavior =
            Behavior::from_annotations(&merged, self.behavior.durations.of(&key.kind)).map_err(
                |error| ClusterError::Rejected {
                    code: 422,
                    reason: "Invalid".to_owned(),
                    message: format!("{key}: {error}"),
                },
            )?;
        let injected =
            app.is_some_and(|app| self.behavior.faults.fails(&app, &key.kind, &key.name));
        if injected && can_fail(&key.group, &key.kind) {
            behavior.outcome = Outcome::Fail;
        }
        Ok(behavior)
    }
}

impl ClusterApi for SimCluster {
    /// The model keeps each object as last written, with no other field managers, so a
    /// replace is an apply.
    async fn replace(
        &self,
        object: &Value,
        dry_run: bool,
        validation: FieldValidation,
    ) -> Result<Applied, ClusterError> {
        self.apply(object, dry_run, validation).await
    }

    /// Built-in groups (no dot, or `*.k8s.io`) are served; a custom kind once a stored CRD
    /// defines it.
    async fn served(&self, api_version: &str, kind: &str) -> Result<bool, ClusterError> {
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        if !group.contains('.') || group.ends_with(".k8s.io") {
            return Ok(true);
        }
        Ok(self.objects().values().any(|stored| {
            let crd = &stored.applied;
            crd.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
                && crd.pointer("/spec/group").and_then(Value::as_str) == Some(group)
                && crd.pointer("/spec/names/kind").and_then(Value::as_str) == Some(kind)
        }))
    }

    /// The model has no schemas: every field is kept, whatever `validation` says.
    async fn apply(
        &self,
        object: &Value,
        dry_run: bool,
        _validation: FieldValidation,
    ) -> Result<Applied, ClusterError> {
        let key = ObjectKey::of_object(object).ok_or_else(|| ClusterError::Rejected {
            code: 422,
            reason: "Invalid".to_owned(),
            message: "the object has no apiVersion, kind or metadata.name".to_owned(),
        })?;
        let behavior = self.behavior_of(object, &key)?;
        let now = self.clock.elapsed();
        let mut objects = self.objects();
        if let Some(namespace) = key.namespace.as_deref() {
            let namespace_key = ObjectKey {
                group: String::new(),
                kind: "Namespace".to_owned(),
                namespace: None,
                name: namespace.to_owned(),
            };
            let exists = BUILT_IN_NAMESPACES.contains(&namespace)
                || self.behavior.namespaces.iter().any(|n| n == namespace)
                || objects.contains_key(&namespace_key);
            if !exists {
                return Err(ClusterError::Rejected {
                    code: 404,
                    reason: "NotFound".to_owned(),
                    message: format!("namespaces \"{namespace}\" not found"),
                });
            }
        }
        let previous = objects.get(&key);
        let (action, generation, changed_at, created) = match previous {
            None => (ResourceAction::Created, 1, now, self.clock.now()),
            Some(stored) if stored.applied == *object => {
                return Ok(Applied {
                    object: self.read(stored),
                    action: ResourceAction::Unchanged,
                });
            }
            Some(stored) if stored.applied.get("spec") == object.get("spec") => (
                ResourceAction::Configured,
                stored.generation,
                stored.changed_at,
                stored.created,
            ),
            Some(stored) => (
                ResourceAction::Configured,
                stored.generation + 1,
                now,
                stored.created,
            ),
        };
        let stored = Stored {
            applied: object.clone(),
            generation,
            created: Timestamp::from_second(created.as_second()).unwrap_or(created),
            changed_at,
            written_at: now,
            behavior,
        };
        let answer = self.read(&stored);
        if !dry_run {
            self.written(&key);
            objects.insert(key, stored);
        }
        Ok(Applied {
            object: answer,
            action,
        })
    }

    async fn get(&self, key: &ObjectKey) -> Result<Option<Value>, ClusterError> {
        Ok(self.objects().get(key).map(|stored| self.read(stored)))
    }

    async fn list_tracked(&self, app: &str) -> Result<Vec<Value>, ClusterError> {
        Ok(self
            .objects()
            .values()
            .filter(|stored| {
                stored
                    .applied
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(TRACKING_ANNOTATION))
                    .and_then(Value::as_str)
                    .and_then(|id| id.split_once(':'))
                    .is_some_and(|(tracked_by, _)| tracked_by == app)
            })
            .map(|stored| self.read(stored))
            .collect())
    }

    async fn delete(
        &self,
        key: &ObjectKey,
        _propagation: Propagation,
    ) -> Result<Deleted, ClusterError> {
        Ok(match self.objects().remove(key) {
            Some(_) => {
                self.written(key);
                Deleted::Requested
            }
            None => Deleted::AlreadyGone,
        })
    }

    async fn pods_of(&self, workload: &Value) -> Result<Vec<Value>, ClusterError> {
        let Some(key) = ObjectKey::of_object(workload) else {
            return Ok(Vec::new());
        };
        let objects = self.objects();
        let Some(stored) = objects.get(&key) else {
            return Ok(Vec::new());
        };
        if stored.behavior.outcome == Outcome::Healthy || key.kind == "Job" {
            return Ok(Vec::new());
        }
        Ok(vec![json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": format!("{}-0", key.name), "namespace": key.namespace},
            "status": {"phase": "Running",
                       "containerStatuses": [waiting_container(stored.behavior.outcome)]},
        })])
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The kinds of the applied CRDs with a version declaring a status subresource.
    async fn status_kinds(&self) -> StatusKinds {
        StatusKinds::new(self.objects().values().filter_map(|stored| {
            let crd = &stored.applied;
            let declares = crd.get("kind").and_then(Value::as_str)
                == Some("CustomResourceDefinition")
                && crd
                    .pointer("/spec/versions")
                    .and_then(Value::as_array)
                    .is_some_and(|versions| {
                        versions
                            .iter()
                            .any(|v| v.pointer("/subresources/status").is_some())
                    });
            let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str);
            declares
                .then(|| {
                    Some((
                        text("/spec/group")?.to_owned(),
                        text("/spec/names/kind")?.to_owned(),
                    ))
                })
                .flatten()
        }))
    }

    async fn sleep(&self, duration: Duration) {
        self.clock.sleep(duration).await;
    }

    /// Sleeps to the first `interval` boundary at which a read of `keys` may differ from one at
    /// `since` (a status moving on, see [`next_change`]), or at which `limit` has passed; a
    /// write to one of `keys` meanwhile ends the wait at the next boundary.
    async fn wait_for_change(
        &self,
        keys: &[ObjectKey],
        since: Timestamp,
        interval: Duration,
        limit: Duration,
    ) {
        if keys.is_empty() {
            return self.clock.sleep(interval).await;
        }
        let start = self.clock.elapsed();
        let boundary = |after: Duration| {
            if interval.is_zero() {
                return interval;
            }
            let steps = after.as_nanos().div_ceil(interval.as_nanos()).max(1);
            interval.saturating_mul(u32::try_from(steps).unwrap_or(u32::MAX))
        };
        let change = self.first_change(keys, self.clock.offset(since));
        let wait = boundary(change.map_or(limit, |at| limit.min(at.saturating_sub(start))));
        let notifies: Vec<Arc<Notify>> = {
            let mut writes = self
                .writes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            keys.iter()
                .map(|key| Arc::clone(writes.entry(key.clone()).or_default()))
                .collect()
        };
        let written = futures::future::select_all(notifies.iter().map(|n| Box::pin(n.notified())));
        tokio::select! {
            () = self.clock.sleep(wait) => {}
            _ = written => {
                let since_start = self.clock.elapsed().saturating_sub(start);
                self.clock.sleep(boundary(since_start) - since_start).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The behaviour of a cluster that has the namespaces these tests write to.
    fn with_namespaces() -> Arc<ClusterBehavior> {
        Arc::new(ClusterBehavior {
            namespaces: ["prod", "a", "b", "c"].map(str::to_owned).to_vec(),
            ..ClusterBehavior::default()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn an_object_in_a_namespace_the_cluster_lacks_is_rejected_until_it_is_created() {
        let clock = VirtualClock::start(Timestamp::from_second(0).unwrap());
        let cluster = SimCluster::new(clock, Arc::default());
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "shop"}});
        let error = cluster
            .apply(&config, false, FieldValidation::Strict)
            .await
            .unwrap_err();
        assert!(error.is_not_found(), "{error}");
        assert_eq!(
            error.to_string(),
            "namespaces \"shop\" not found (HTTP 404 NotFound)"
        );
        let default = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "default"}});
        cluster
            .apply(&default, false, FieldValidation::Strict)
            .await
            .unwrap();
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}});
        cluster
            .apply(&namespace, false, FieldValidation::Strict)
            .await
            .unwrap();
        cluster
            .apply(&config, false, FieldValidation::Strict)
            .await
            .unwrap();
    }
    use flotilla_core::health::HealthStatus;
    use flotilla_core::simulated_pod::{FAIL_ANNOTATION, READY_AFTER_ANNOTATION};
    use flotilla_core::sync::LiveObject;

    fn job(namespace: &str, annotations: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "migrate", "namespace": namespace, "annotations": annotations},
               "spec": {"template": {"metadata": {"annotations": {READY_AFTER_ANNOTATION: "4s"}}}}})
    }

    fn health(object: &Value) -> HealthStatus {
        LiveObject::from_object(object, &flotilla_core::health::HealthChecks::default())
            .map(|l| l.health.status)
            .unwrap()
    }

    async fn live(cluster: &SimCluster, object: &Value) -> Option<Value> {
        let key = ObjectKey::of_object(object).unwrap();
        cluster.get(&key).await.unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn applies_keep_objects_and_move_their_status_over_virtual_time() {
        let clock = VirtualClock::start(Timestamp::UNIX_EPOCH);
        let cluster = SimCluster::new(clock, with_namespaces());
        let object = job(
            "prod",
            json!({TRACKING_ANNOTATION: "db:batch/Job:prod/migrate"}),
        );
        let created = cluster
            .apply(&object, false, FieldValidation::Strict)
            .await
            .unwrap();
        assert_eq!(created.action, ResourceAction::Created);
        assert_eq!(created.object["metadata"]["generation"], 1);
        assert_eq!(health(&created.object), HealthStatus::Progressing);
        let again = cluster
            .apply(&object, false, FieldValidation::Strict)
            .await
            .unwrap();
        assert_eq!(again.action, ResourceAction::Unchanged);

        clock.sleep(Duration::from_secs(4)).await;
        assert_eq!(
            health(&live(&cluster, &object).await.unwrap()),
            HealthStatus::Healthy
        );
        assert_eq!(cluster.list_tracked("db").await.unwrap().len(), 1);
        assert!(cluster.list_tracked("web").await.unwrap().is_empty());

        let mut changed = object.clone();
        changed["spec"]["backoffLimit"] = json!(0);
        let configured = cluster
            .apply(&changed, false, FieldValidation::Strict)
            .await
            .unwrap();
        assert_eq!(configured.action, ResourceAction::Configured);
        assert_eq!(configured.object["metadata"]["generation"], 2);
        assert_eq!(
            health(&configured.object),
            HealthStatus::Progressing,
            "restarted"
        );

        let key = ObjectKey::of_object(&object).unwrap();
        let delete = |key| cluster.delete(key, Propagation::Background);
        assert_eq!(delete(&key).await, Ok(Deleted::Requested));
        assert_eq!(delete(&key).await, Ok(Deleted::AlreadyGone));
        assert_eq!(live(&cluster, &object).await, None);

        let dry = cluster
            .apply(&object, true, FieldValidation::Strict)
            .await
            .unwrap();
        assert_eq!(dry.action, ResourceAction::Created);
        assert_eq!(
            live(&cluster, &object).await,
            None,
            "a dry run stores nothing"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn failures_come_from_annotations_and_selectors() {
        let clock = VirtualClock::start(Timestamp::UNIX_EPOCH);
        let behavior = ClusterBehavior {
            faults: Faults(vec!["db/Job/migrate".parse().unwrap()]),
            ..(*with_namespaces()).clone()
        };
        let cluster = SimCluster::new(clock, Arc::new(behavior));
        let cases = [
            (
                job("a", json!({TRACKING_ANNOTATION: "db:batch/Job:a/migrate"})),
                HealthStatus::Degraded,
            ),
            (
                job("b", json!({FAIL_ANNOTATION: "true"})),
                HealthStatus::Degraded,
            ),
            (
                job("c", json!({TRACKING_ANNOTATION: "web:batch/Job:c/migrate"})),
                HealthStatus::Healthy,
            ),
        ];
        for (object, _) in &cases {
            cluster
                .apply(object, false, FieldValidation::Strict)
                .await
                .unwrap();
        }
        clock.sleep(Duration::from_secs(4)).await;
        for (object, expected) in &cases {
            let live = live(&cluster, object).await.unwrap();
            assert_eq!(health(&live), *expected, "{}", object["metadata"]);
        }
        let bad = job("d", json!({READY_AFTER_ANNOTATION: "soon"}));
        let error = cluster
            .apply(&bad, false, FieldValidation::Strict)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains(READY_AFTER_ANNOTATION),
            "{error}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn failing_workloads_show_their_pods_problem() {
        let clock = VirtualClock::start(Timestamp::UNIX_EPOCH);
        let cluster = SimCluster::new(clock, with_namespaces());
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "api", "namespace": "prod",
                         "annotations": {FAIL_ANNOTATION: "true"}},
            "spec": {"replicas": 1}});
        cluster
            .apply(&deployment, false, FieldValidation::Strict)
            .await
            .unwrap();
        let pods = cluster.pods_of(&deployment).await.unwrap();
        let health = flotilla_core::health::with_pod_problems(
            flotilla_core::health::Health::new(HealthStatus::Progressing, ""),
            &pods,
        );
        assert_eq!(health.message, "pod api-0 CrashLoopBackOff");
    }

    #[tokio::test(start_paused = true)]
    async fn waits_end_at_the_first_poll_that_can_see_a_change() {
        let clock = VirtualClock::start(Timestamp::UNIX_EPOCH);
        let cluster = Arc::new(SimCluster::new(clock, with_namespaces()));
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "api", "namespace": "prod"}, "spec": {"replicas": 2}});
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "prod"}, "data": {"a": "1"}});
        for object in [&deployment, &config] {
            cluster
                .apply(object, false, FieldValidation::Strict)
                .await
                .unwrap();
        }
        let key = |object| ObjectKey::of_object(object).unwrap();
        let poll = Duration::from_millis(300);
        let limit = Duration::from_secs(600);
        let wait = |keys: Vec<ObjectKey>, since: Timestamp, limit: Duration| {
            let cluster = Arc::clone(&cluster);
            async move {
                let start = clock.elapsed();
                cluster.wait_for_change(&keys, since, poll, limit).await;
                clock.elapsed() - start
            }
        };
        let ms = Duration::from_millis;
        // One replica of two is ready after 10 s (the 34th poll), both after 20 s.
        assert_eq!(
            wait(vec![key(&deployment)], clock.now(), limit).await,
            ms(10_200)
        );
        assert_eq!(
            wait(vec![key(&deployment)], clock.now(), limit).await,
            ms(9_900)
        );
        // Nothing moves any more: the wait lasts until the limit, rounded up to a poll.
        assert_eq!(
            wait(vec![key(&deployment)], clock.now(), ms(1_000)).await,
            ms(1_200)
        );
        // Read before a change that happened since: the next poll.
        let stale = clock.at(Duration::ZERO);
        assert_eq!(wait(vec![key(&deployment)], stale, limit).await, poll);
        // A missing object may appear at any time.
        let mut missing = key(&config);
        missing.name = "absent".to_owned();
        assert_eq!(wait(vec![missing], clock.now(), limit).await, poll);
        // A write during the wait ends it at the next poll.
        let waiter = tokio::spawn(wait(vec![key(&config)], clock.now(), limit));
        clock.sleep(ms(1_000)).await;
        let mut changed = config.clone();
        changed["data"]["a"] = json!("2");
        cluster
            .apply(&changed, false, FieldValidation::Strict)
            .await
            .unwrap();
        assert_eq!(waiter.await.unwrap(), ms(1_200));
    }
}
