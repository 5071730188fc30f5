//! Writing one object as its [`WritePolicy`] decides: read the live object when the policy needs
//! it (or `RespectIgnoreDifferences=true` has ignored fields of the object to keep), take the live
//! values at ignored fields where the policy or the option says so, then skip, server-side apply
//! or replace; after a rejection that the policy answers with a replace (`Validate=false` and a
//! field the schema does not declare), replace it; after one it answers with a recreate
//! (`Force=true` and an immutable field), delete the object, wait until it is gone and write it
//! again.

use std::time::Duration;

use serde_json::Value;

use crate::sync::execute::cluster_api::{Applied, ClusterApi, ClusterError, Propagation};
use flotilla_core::manifest::ObjectKey;
use flotilla_core::sync::FIELD_MANAGER;
use flotilla_core::sync::{FieldValidation, ResourceAction, Write, WritePolicy};
use flotilla_generators::duration::format_duration;

use super::settings::ExecuteSettings;

/// The outcome of writing one object, with a note for its record when the write was not a
/// plain apply.
pub struct Written {
    /// What the server returned (the live object for a skipped write).
    pub result: Result<Applied, ClusterError>,
    /// E.g. `recreated (Force=true) after: … field is immutable`.
    pub note: Option<String>,
}

/// Writes `object` (identified by `key`) as `policy` says.
pub async fn write_object<C: ClusterApi>(
    cluster: &C,
    key: &ObjectKey,
    object: &Value,
    policy: WritePolicy,
    settings: &ExecuteSettings,
) -> Written {
    let ignore = &settings.ignore_differences;
    let respect = settings.respect_ignore_differences && ignore.applies_to(key);
    let live = if policy.needs_live() || respect {
        cluster.get(key).await.ok().flatten()
    } else {
        None
    };
    let kept = live.as_ref().map(|live| ignore.overlay(key, object, live));
    let compared = kept.as_ref().unwrap_or(object);
    let write = policy.write(compared, live.as_ref(), FIELD_MANAGER);
    let object = if respect { compared } else { object };
    if let (Write::Skip, Some(live)) = (write, live) {
        return Written {
            result: Ok(Applied {
                object: live,
                action: ResourceAction::Unchanged,
            }),
            note: Some("already in sync (ApplyOutOfSyncOnly=true), not applied".to_owned()),
        };
    }
    let first = send(cluster, write, object, policy.validation).await;
    let rejection = match first {
        Err(error) if policy.recreate_after_rejection(error.is_immutable_field()) => error,
        Err(error) if policy.replace_after_rejection(error.is_undeclared_field()) => {
            return Written {
                result: send(cluster, Write::Replace, object, policy.validation).await,
                note: Some(format!("replaced (Validate=false) after: {error}")),
            };
        }
        result => return Written { result, note: None },
    };
    let note = Some(format!("recreated (Force=true) after: {rejection}"));
    if let Err(error) = cluster.delete(key, Propagation::Background).await {
        return Written {
            result: Err(ClusterError::RecreateFailed {
                rejection: Box::new(rejection),
                deletion: Box::new(error),
            }),
            note,
        };
    }
    if let Err(error) = wait_until_gone(cluster, key, settings).await {
        return Written {
            result: Err(error),
            note,
        };
    }
    Written {
        result: send(cluster, write, object, policy.validation).await,
        note,
    }
}

async fn send<C: ClusterApi>(
    cluster: &C,
    write: Write,
    object: &Value,
    validation: FieldValidation,
) -> Result<Applied, ClusterError> {
    match write {
        Write::Replace => cluster.replace(object, false, validation).await,
        Write::Apply | Write::Skip => cluster.apply(object, false, validation).await,
    }
}

/// Polls until the object no longer exists, at most for the operation's timeout (if any).
async fn wait_until_gone<C: ClusterApi>(
    cluster: &C,
    key: &ObjectKey,
    settings: &ExecuteSettings,
) -> Result<(), ClusterError> {
    let started = cluster.now();
    loop {
        if cluster.get(key).await?.is_none() {
            return Ok(());
        }
        let waited = Duration::try_from(cluster.now().duration_since(started)).unwrap_or_default();
        if settings.timeout.is_some_and(|timeout| waited >= timeout) {
            return Err(ClusterError::NotReady(format!(
                "{key} was deleted to be recreated (Force=true) and is still there after {}",
                format_duration(Duration::from_secs(waited.as_secs()))
            )));
        }
        cluster.sleep(settings.poll_interval).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    use super::*;
    use crate::sync::execute::cluster_api::Deleted;

    /// One object's cluster: records every call; the first write may be rejected.
    #[derive(Default)]
    struct OneObject {
        live: Mutex<Option<Value>>,
        rejection: Mutex<Option<ClusterError>>,
        calls: Mutex<Vec<&'static str>>,
    }

    impl OneObject {
        fn call(&self, name: &'static str) {
            self.calls.lock().unwrap().push(name);
        }

        fn store(&self, name: &'static str, object: &Value) -> Result<Applied, ClusterError> {
            self.call(name);
            if let Some(error) = self.rejection.lock().unwrap().take() {
                return Err(error);
            }
            let previous = self.live.lock().unwrap().replace(object.clone());
            let action = match previous {
                None => ResourceAction::Created,
                Some(_) => ResourceAction::Configured,
            };
            Ok(Applied {
                object: object.clone(),
                action,
            })
        }
    }

    impl ClusterApi for OneObject {
        async fn apply(
            &self,
            object: &Value,
            _: bool,
            _: FieldValidation,
        ) -> Result<Applied, ClusterError> {
            self.store("apply", object)
        }

        async fn replace(
            &self,
            object: &Value,
            _: bool,
            _: FieldValidation,
        ) -> Result<Applied, ClusterError> {
            self.store("replace", object)
        }

        async fn served(&self, _: &str, _: &str) -> Result<bool, ClusterError> {
            Ok(true)
        }

        async fn get(&self, _: &ObjectKey) -> Result<Option<Value>, ClusterError> {
            self.call("get");
            Ok(self.live.lock().unwrap().clone())
        }

        async fn list_tracked(&self, _: &str) -> Result<Vec<Value>, ClusterError> {
            Ok(Vec::new())
        }

        async fn delete(&self, _: &ObjectKey, _: Propagation) -> Result<Deleted, ClusterError> {
            self.call("delete");
            Ok(match self.live.lock().unwrap().take() {
                Some(_) => Deleted::Requested,
                None => Deleted::AlreadyGone,
            })
        }

        async fn pods_of(&self, _: &Value) -> Result<Vec<Value>, ClusterError> {
            Ok(Vec::new())
        }

        fn now(&self) -> Timestamp {
            Timestamp::UNIX_EPOCH
        }

        async fn status_kinds(&self) -> flotilla_core::health::StatusKinds {
            flotilla_core::health::StatusKinds::default()
        }

        async fn sleep(&self, _: Duration) {}
    }

    /// Options, whether the object is absent, the first write's rejection, the calls expected
    /// and the action recorded.
    type Case = (
        &'static str,
        bool,
        Option<ClusterError>,
        &'static [&'static str],
        Option<ResourceAction>,
    );

    fn immutable() -> ClusterError {
        ClusterError::Rejected {
            code: 422,
            reason: "Invalid".to_owned(),
            message: "spec.template: Invalid value: {}: field is immutable".to_owned(),
        }
    }

    fn undeclared() -> ClusterError {
        ClusterError::Rejected {
            code: 500,
            reason: String::new(),
            message: ".spec.colour: field not declared in schema".to_owned(),
        }
    }

    #[test]
    fn each_policy_sends_its_requests() {
        let object = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}});
        let key = ObjectKey::of_object(&object).unwrap();
        let cases: [Case; 8] = [
            (
                "",
                false,
                None,
                &["apply"],
                Some(ResourceAction::Configured),
            ),
            (
                "Replace=true",
                false,
                None,
                &["replace"],
                Some(ResourceAction::Configured),
            ),
            (
                "ApplyOutOfSyncOnly=true",
                false,
                None,
                &["get"],
                Some(ResourceAction::Unchanged),
            ),
            (
                "ApplyOutOfSyncOnly=true",
                true,
                None,
                &["get", "apply"],
                Some(ResourceAction::Created),
            ),
            (
                "Force=true",
                false,
                Some(immutable()),
                &["apply", "delete", "get", "apply"],
                Some(ResourceAction::Created),
            ),
            ("", false, Some(immutable()), &["apply"], None),
            (
                "Validate=false",
                false,
                Some(undeclared()),
                &["apply", "replace"],
                Some(ResourceAction::Configured),
            ),
            ("", false, Some(undeclared()), &["apply"], None),
        ];
        for (options, absent, rejection, calls, action) in cases {
            let cluster = OneObject::default();
            if !absent {
                *cluster.live.lock().unwrap() = Some(object.clone());
            }
            *cluster.rejection.lock().unwrap() = rejection;
            let policy = WritePolicy::of(&options.parse().unwrap());
            let written = futures::executor::block_on(write_object(
                &cluster,
                &key,
                &object,
                policy,
                &ExecuteSettings::default(),
            ));
            assert_eq!(*cluster.calls.lock().unwrap(), calls, "{options}");
            let found = written.result.as_ref().ok().map(|applied| applied.action);
            assert_eq!(found, action, "{options}");
            let note = written.note.unwrap_or_default();
            for (option, prefix) in [
                ("Force=true", "recreated (Force=true) after: "),
                ("Validate=false", "replaced (Validate=false) after: "),
            ] {
                assert_eq!(
                    note.starts_with(prefix),
                    options == option,
                    "{options}: {note}"
                );
            }
        }
    }

    #[test]
    fn ignored_fields_keep_their_live_values_only_when_respected() {
        let desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 1}});
        let mut scaled = desired.clone();
        scaled["spec"]["replicas"] = json!(4);
        let key = ObjectKey::of_object(&desired).unwrap();
        let rules = serde_json::from_value::<Vec<_>>(json!([
            {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}
        ]))
        .unwrap();
        let ignore_differences = flotilla_core::sync::IgnoreDifferences::new(
            "ignoreDifferences",
            &rules,
            &Default::default(),
        )
        .unwrap();
        // (options, respect, calls, replicas applied or kept)
        let cases = [
            ("", false, &["apply"][..], 1),
            ("", true, &["get", "apply"][..], 4),
            ("ApplyOutOfSyncOnly=true", false, &["get"][..], 4),
        ];
        for (options, respect, calls, replicas) in cases {
            let cluster = OneObject::default();
            *cluster.live.lock().unwrap() = Some(scaled.clone());
            let settings = ExecuteSettings {
                ignore_differences: ignore_differences.clone(),
                respect_ignore_differences: respect,
                ..ExecuteSettings::default()
            };
            let policy = WritePolicy::of(&options.parse().unwrap());
            let written = futures::executor::block_on(write_object(
                &cluster, &key, &desired, policy, &settings,
            ));
            assert_eq!(*cluster.calls.lock().unwrap(), calls, "{options} {respect}");
            let object = written.result.unwrap().object;
            assert_eq!(object["spec"]["replicas"], replicas, "{options} {respect}");
        }
    }
}
