//! An Application's sync and health status from its plan and the live objects: every desired
//! object (hooks aside) is Synced when it matches its live object ([`crate::sync::diff`], after taking
//! the live values of its ignored fields, `ignoreDifferences`) and OutOfSync, naming the first
//! differing field, when it differs or is missing; tracked objects no longer desired require pruning
//! and are OutOfSync unless `IgnoreExtraneous`. Health is the worst of the desired objects',
//! with the message of the worst. Pure.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::api::application::{HealthReport, ResourceStatus, SyncStatus};
use crate::api::application_set_status::SyncStatusCode;
use crate::health::{Health, HealthChecks, worst};
use crate::manifest::ObjectKey;
use crate::sync::{
    COMPARE_OPTIONS_ANNOTATION, CompareOptions, IgnoreDifferences, LiveObject, SyncOptions,
    SyncPlan, SyncTask, plan_prune, tracked,
};

use crate::api::sync_phase::SyncPhase;
use crate::sync::FIELD_MANAGER;
use crate::sync::diff::first_difference;

/// The result of comparing an Application with the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// The aggregate sync status at the compared revision.
    pub sync: SyncStatus,
    /// The aggregate health.
    pub health: HealthReport,
    /// One entry per desired object, then one per object requiring pruning.
    pub resources: Vec<ResourceStatus>,
    /// The PreDelete hooks of the source (`Kind namespace/name`).
    pub pre_delete_hooks: Vec<String>,
    /// The PostDelete hooks of the source (`Kind namespace/name`).
    pub post_delete_hooks: Vec<String>,
}

impl Comparison {
    /// Whether the Application is OutOfSync.
    #[must_use]
    pub fn out_of_sync(&self) -> bool {
        self.sync.status == SyncStatusCode::OutOfSync
    }
}

/// Compares the desired objects of `plan` (applied as `app`) with `live` (by key; absent keys are
/// missing objects), judging health by `health` and leaving out the fields `ignore` names, and
/// finds extraneous objects among `tracked`.
#[must_use]
pub fn compare(
    plan: &SyncPlan,
    app: &str,
    live: &BTreeMap<ObjectKey, Value>,
    tracked_objects: &[LiveObject],
    revision: Option<&str>,
    health: &HealthChecks,
    ignore: &IgnoreDifferences,
) -> Comparison {
    let mut resources = Vec::new();
    let mut out_of_sync = false;
    let mut healths: Vec<(&ObjectKey, Health)> = Vec::new();
    for task in plan.tasks.iter().filter(|task| task.hook.is_none()) {
        let (difference, health) = match live.get(&task.key) {
            None => (Some(String::new()), Health::missing()),
            Some(object) => {
                let desired = ignore.overlay(&task.key, &tracked(task, app), object);
                (
                    first_difference(&desired, object, FIELD_MANAGER),
                    health.assess(object),
                )
            }
        };
        let status = match difference {
            None => SyncStatusCode::Synced,
            Some(_) => SyncStatusCode::OutOfSync,
        };
        out_of_sync |= status == SyncStatusCode::OutOfSync;
        resources.push(resource_status(
            task,
            status,
            difference.unwrap_or_default(),
            Some(&health),
        ));
        healths.push((&task.key, health));
    }
    let prune = plan_prune(plan, tracked_objects, app, &SyncOptions::default());
    let extraneous = prune
        .tasks
        .iter()
        .map(|task| &task.key)
        .chain(prune.kept.iter().map(|kept| &kept.key));
    let by_key: BTreeMap<&ObjectKey, &LiveObject> =
        tracked_objects.iter().map(|o| (&o.key, o)).collect();
    for key in extraneous {
        let object = by_key.get(key);
        let ignored = object
            .and_then(|o| o.annotations.get(COMPARE_OPTIONS_ANNOTATION))
            .and_then(|text| text.parse::<CompareOptions>().ok())
            .is_some_and(|options| options.ignore_extraneous);
        out_of_sync |= !ignored;
        resources.push(ResourceStatus {
            group: key.group.clone(),
            kind: key.kind.clone(),
            namespace: key.namespace.clone().unwrap_or_default(),
            name: key.name.clone(),
            status: SyncStatusCode::OutOfSync,
            health: object.map(|o| app_health(&o.health)),
            requires_pruning: true,
            ..ResourceStatus::default()
        });
    }
    let health = worst(healths.iter().map(|(key, health)| (*key, health)));
    let sync = if out_of_sync {
        SyncStatusCode::OutOfSync
    } else {
        SyncStatusCode::Synced
    };
    Comparison {
        sync: SyncStatus::at(sync, revision),
        health: app_health(&health),
        resources,
        pre_delete_hooks: hook_names(plan, SyncPhase::PreDelete),
        post_delete_hooks: hook_names(plan, SyncPhase::PostDelete),
    }
}

/// The deletion hooks of `phase` in `plan`, as status lists them.
fn hook_names(plan: &SyncPlan, phase: SyncPhase) -> Vec<String> {
    plan.deletion_hooks(phase)
        .map(|t| t.key.to_string())
        .collect()
}

fn app_health(health: &Health) -> HealthReport {
    HealthReport {
        status: health.status,
        message: health.message.clone(),
    }
}

fn resource_status(
    task: &SyncTask,
    status: SyncStatusCode,
    first_difference: String,
    health: Option<&Health>,
) -> ResourceStatus {
    let api_version = task
        .resource
        .body
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = api_version.rsplit('/').next().unwrap_or_default();
    ResourceStatus {
        group: task.key.group.clone(),
        version: version.to_owned(),
        kind: task.key.kind.clone(),
        namespace: task.key.namespace.clone().unwrap_or_default(),
        name: task.key.name.clone(),
        status,
        first_difference,
        health: health.map(app_health),
        hook: false,
        requires_pruning: false,
        sync_wave: task.wave,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::health::HealthStatus;
    use crate::manifest::{Resource, Source};
    use crate::sync::TRACKING_ANNOTATION;

    fn plan(objects: &[Value]) -> SyncPlan {
        let resources = objects
            .iter()
            .map(|body| {
                Resource::from_value(
                    body.clone(),
                    Source {
                        file: "m.yaml".into(),
                        document: 0,
                    },
                )
                .unwrap()
            })
            .collect();
        SyncPlan::build(resources, "op").unwrap()
    }

    fn config_map(name: &str, value: &str, annotations: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "n", "annotations": annotations}, "data": {"k": value}})
    }

    fn applied(name: &str, value: &str) -> Value {
        config_map(
            name,
            value,
            json!({TRACKING_ANNOTATION: format!("app:/ConfigMap:n/{name}")}),
        )
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: name.into(),
        }
    }

    fn deployment(ready: bool) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "d", "namespace": "n", "generation": 1,
                            "annotations": {TRACKING_ANNOTATION: "app:apps/Deployment:n/d"}},
               "spec": {"replicas": 1},
               "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                          "availableReplicas": if ready { 1 } else { 0 }}})
    }

    #[test]
    fn synced_out_of_sync_missing_and_extraneous() {
        let desired = plan(&[
            config_map("same", "1", json!({})),
            config_map("changed", "2", json!({})),
            config_map("absent", "1", json!({})),
        ]);
        let live = BTreeMap::from([
            (key("same"), applied("same", "1")),
            (key("changed"), applied("changed", "1")),
        ]);
        let extra =
            LiveObject::from_object(&applied("old", "1"), &HealthChecks::default()).unwrap();
        let result = compare(
            &desired,
            "app",
            &live,
            &[extra],
            Some("abc"),
            &HealthChecks::default(),
            &IgnoreDifferences::default(),
        );
        let statuses: Vec<(&str, &str, &str, bool)> = result
            .resources
            .iter()
            .map(|r| {
                let difference = r.first_difference.as_str();
                (
                    r.name.as_str(),
                    r.status.as_str(),
                    difference,
                    r.requires_pruning,
                )
            })
            .collect();
        assert_eq!(
            statuses,
            [
                ("absent", "OutOfSync", "", false),
                ("changed", "OutOfSync", "/data/k", false),
                ("same", "Synced", "", false),
                ("old", "OutOfSync", "", true)
            ]
        );
        assert_eq!(
            result.sync,
            SyncStatus {
                status: SyncStatusCode::OutOfSync,
                revision: "abc".into(),
                revisions: Vec::new(),
            }
        );
        assert_eq!(result.health.status, HealthStatus::Missing);
    }

    #[test]
    fn synced_when_everything_matches_and_ignored_extraneous_objects_do_not_count() {
        let desired = plan(&[config_map("same", "1", json!({}))]);
        let live = BTreeMap::from([(key("same"), applied("same", "1"))]);
        let mut ignored = applied("old", "1");
        ignored["metadata"]["annotations"][COMPARE_OPTIONS_ANNOTATION] = json!("IgnoreExtraneous");
        let extra = LiveObject::from_object(&ignored, &HealthChecks::default()).unwrap();
        let result = compare(
            &desired,
            "app",
            &live,
            &[extra],
            None,
            &HealthChecks::default(),
            &IgnoreDifferences::default(),
        );
        assert_eq!(result.sync.status, SyncStatusCode::Synced);
        assert!(result.resources[1].requires_pruning);
        assert_eq!(result.health.status, HealthStatus::Healthy);
        assert!(!result.out_of_sync());
    }

    #[test]
    fn health_is_the_worst_with_its_message_and_hooks_are_left_out() {
        let mut hook = config_map("hook", "1", json!({"argocd.argoproj.io/hook": "PreSync"}));
        hook["kind"] = json!("ConfigMap");
        let cleanup = config_map(
            "cleanup",
            "1",
            json!({"argocd.argoproj.io/hook": "PostDelete"}),
        );
        let mut wanted = deployment(true);
        wanted["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("annotations");
        wanted.as_object_mut().unwrap().remove("status");
        let backup = config_map(
            "backup",
            "1",
            json!({"argocd.argoproj.io/hook": "PreDelete"}),
        );
        let desired = plan(&[
            wanted,
            config_map("same", "1", json!({})),
            hook,
            cleanup,
            backup,
        ]);
        let deployment_key = ObjectKey {
            group: "apps".into(),
            kind: "Deployment".into(),
            namespace: Some("n".into()),
            name: "d".into(),
        };
        for (ready, health) in [
            (true, HealthStatus::Healthy),
            (false, HealthStatus::Progressing),
        ] {
            let live = BTreeMap::from([
                (key("same"), applied("same", "1")),
                (deployment_key.clone(), deployment(ready)),
            ]);
            let result = compare(
                &desired,
                "app",
                &live,
                &[],
                None,
                &HealthChecks::default(),
                &IgnoreDifferences::default(),
            );
            assert_eq!(result.resources.len(), 2, "no hook");
            assert_eq!(result.post_delete_hooks, ["ConfigMap n/cleanup"]);
            assert_eq!(result.pre_delete_hooks, ["ConfigMap n/backup"]);
            assert_eq!(result.sync.status, SyncStatusCode::Synced, "{ready}");
            assert_eq!(result.health.status, health);
            if !ready {
                assert!(!result.health.message.is_empty());
            }
        }
    }

    #[test]
    fn ignored_fields_do_not_make_an_object_out_of_sync() {
        let desired = plan(&[config_map("changed", "2", json!({}))]);
        let live = BTreeMap::from([(key("changed"), applied("changed", "1"))]);
        let rules: Vec<crate::api::application::ResourceIgnoreDifferences> =
            serde_json::from_value(json!([{"kind": "ConfigMap", "jsonPointers": ["/data/k"]}]))
                .unwrap();
        let ignore =
            IgnoreDifferences::new("ignoreDifferences", &rules, &Default::default()).unwrap();
        let result = compare(
            &desired,
            "app",
            &live,
            &[],
            None,
            &HealthChecks::default(),
            &ignore,
        );
        assert_eq!(result.sync.status, SyncStatusCode::Synced);
        assert_eq!(result.resources[0].first_difference, "");
    }
}
