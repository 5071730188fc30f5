//! The notifier's pass over notifications in Argo CD's format: reads `argocd-notifications-cm`
//! and `argocd-notifications-secret` (none: nothing to do; unusable: said once, as a warning and
//! an Event on the ConfigMap), plans each Application and ApplicationSet with
//! [`flotilla_core::notify::argo::plan`], sends what is due (retried with backoff), and writes
//! what was sent to the object's `notified.notifications.argoproj.io` annotation. A delivery
//! that fails for good is forgotten there, so a later pass sends it again. Between its writes
//! and the watch showing them, the notifier plans from what it wrote (by uid), never from an
//! older copy. Every outcome and problem is an Event on the object and a count in
//! `flotilla_notifications_total`; a problem is published once per process.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::deliver::Notifier;
use super::send::perform;
use super::sources::secret_text;
use super::watched::{WatchedObjects, lock};
use crate::cluster::api_server::api_error::api_message;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::event_reason::EventReason;
use flotilla_core::notify::argo::config::{CONFIG_MAP, NotificationsConfig};
use flotilla_core::notify::argo::plan::{Plan, Subject, plan};
use flotilla_core::notify::argo::state::{NOTIFIED, Notified};

/// What the notifier remembers between passes.
#[derive(Debug, Default)]
pub struct ArgoMemory {
    /// The state last written, by object uid.
    notified: BTreeMap<String, Notified>,
    /// The problems logged, and those also published as an Event, as `uid: problem`.
    logged: BTreeSet<String>,
    reported: BTreeSet<String>,
    /// The ConfigMap's error last logged, and whether its Event was written.
    config_error: Option<String>,
    config_error_published: bool,
    /// Whether the last pass left something undone (an Event the API server refused or this
    /// replica could not write yet, or a configuration it could not read): the next pass is
    /// not left to wait for a change.
    pub unfinished: bool,
}

/// The key an AppProject is kept under.
#[must_use]
pub fn project_key(name: &str) -> String {
    format!("appproject.{name}")
}

/// One object's plan, with what the pass needs to act on it.
struct Planned {
    reference: ObjectReference,
    uid: String,
    /// Its annotation's value when planned.
    annotation: Option<String>,
    plan: Plan,
}

impl Notifier {
    /// Sends what Argo CD-format notifications are due.
    pub(super) async fn argo_pass(
        &self,
        memory: &mut ArgoMemory,
        appsets: &Mutex<WatchedObjects>,
        apps: &Mutex<WatchedObjects>,
        projects: &Mutex<WatchedObjects>,
        started: Timestamp,
    ) {
        memory.unfinished = false;
        let Some((config, secret)) = self.read_argo_config(memory).await else {
            return;
        };
        let now = Timestamp::now();
        let mut planned = Vec::new();
        {
            let (appsets, apps, projects) = (lock(appsets), lock(apps), lock(projects));
            let objects = apps
                .iter()
                .map(|w| (w, true))
                .chain(appsets.iter().map(|w| (w, false)));
            // Each project's JSON once a pass, as many Applications share one.
            let mut project_json = BTreeMap::new();
            for (watched, is_app) in objects {
                let uid = watched.reference.uid.clone().unwrap_or_default();
                let object = watched.object.json();
                let project = object["spec"]["project"].as_str().and_then(|name| {
                    let key = project_key(name);
                    if !project_json.contains_key(&key) {
                        let json = projects.get(&key).map(|p| p.object.json());
                        project_json.insert(key.clone(), json);
                    }
                    project_json[&key].as_ref()
                });
                let subject = if is_app {
                    Subject::Application {
                        app: &object,
                        project,
                    }
                } else {
                    Subject::ApplicationSet {
                        appset: &object,
                        occurrences: &watched.occurrences,
                    }
                };
                let plan = plan(
                    subject,
                    memory.notified.get(&uid).cloned(),
                    &config,
                    &secret,
                    now,
                    started,
                );
                let annotation = object["metadata"]["annotations"][NOTIFIED]
                    .as_str()
                    .map(str::to_owned);
                planned.push(Planned {
                    reference: watched.reference.clone(),
                    uid,
                    annotation,
                    plan,
                });
            }
        }
        for mut object in planned {
            for problem in &object.plan.problems {
                let key = format!("{}: {problem}", object.uid);
                if memory.reported.contains(&key) {
                    continue;
                }
                if memory.logged.insert(key.clone()) {
                    tracing::warn!(object = ?object.reference.name, "notification: {problem}");
                }
                let published = self
                    .events
                    .publish(
                        &object.reference,
                        EventReason::NotificationFailed,
                        problem.clone(),
                    )
                    .await;
                if published {
                    memory.reported.insert(key);
                } else {
                    memory.unfinished = true;
                }
            }
            for send in &object.plan.sends {
                let destination = format!(
                    "{}:{}",
                    send.destination.service, send.destination.recipient
                );
                let outcome = match &send.request {
                    Ok(request) => {
                        self.retrying(&send.trigger, &destination, send.key.as_str(), || {
                            perform(request)
                        })
                        .await
                    }
                    Err(error) => Err(error.clone()),
                };
                let (result, reason, note) = match outcome {
                    Ok(attempts) => (
                        "delivered",
                        EventReason::NotificationSent,
                        format!(
                            "{} sent to {destination} (attempt {attempts})",
                            send.trigger
                        ),
                    ),
                    Err(error) => {
                        object.plan.notified.forget(&send.key);
                        (
                            "failed",
                            EventReason::NotificationFailed,
                            format!("{} to {destination}: {error}", send.trigger),
                        )
                    }
                };
                tracing::info!(key = send.key.as_str(), "notification: {note}");
                self.metrics
                    .notification(&send.trigger, &destination, result);
                self.events.publish(&object.reference, reason, note).await;
            }
            let value = object.plan.notified.to_annotation();
            let unchanged = match &object.annotation {
                Some(old) => *old == value,
                None => object.plan.notified.is_empty(),
            };
            let remembered = memory.notified.get(&object.uid) == Some(&object.plan.notified);
            if !unchanged && !remembered {
                self.write_notified(&object.reference, &value).await;
            }
            memory.notified.insert(object.uid, object.plan.notified);
        }
    }

    /// The ConfigMap and Secret, when the ConfigMap exists and is usable.
    async fn read_argo_config(
        &self,
        memory: &mut ArgoMemory,
    ) -> Option<(NotificationsConfig, BTreeMap<String, String>)> {
        let map = match self.sources.argo_config.current().await {
            Ok(found) => found?,
            Err(error) => {
                tracing::warn!("reading {error}");
                memory.unfinished = true;
                return None;
            }
        };
        let secret = match secret_text(&self.sources.argo_secret).await {
            Ok(secret) => secret,
            Err(error) => {
                tracing::warn!("reading {error}");
                memory.unfinished = true;
                return None;
            }
        };
        match NotificationsConfig::parse(&map.data.clone().unwrap_or_default(), &secret) {
            Ok(config) => {
                memory.config_error = None;
                Some((config, secret))
            }
            Err(error) => {
                let text = error.to_string();
                if memory.config_error.as_ref() != Some(&text) {
                    tracing::warn!("notifications in Argo CD's format are off: {text}");
                    memory.config_error = Some(text.clone());
                    memory.config_error_published = false;
                }
                if !memory.config_error_published {
                    let reference = ObjectReference {
                        api_version: Some("v1".into()),
                        kind: Some("ConfigMap".into()),
                        name: Some(CONFIG_MAP.into()),
                        namespace: Some(self.namespace.clone()),
                        uid: map.metadata.uid.clone(),
                        ..ObjectReference::default()
                    };
                    memory.config_error_published = self
                        .events
                        .publish(&reference, EventReason::NotificationFailed, text)
                        .await;
                    memory.unfinished |= !memory.config_error_published;
                }
                None
            }
        }
    }

    /// Writes `value` to the annotation of the object `reference` names.
    async fn write_notified(&self, reference: &ObjectReference, value: &str) {
        let name = reference.name.clone().unwrap_or_default();
        let patch: Patch<Value> =
            Patch::Merge(json!({"metadata": {"annotations": {NOTIFIED: value}}}));
        let params = PatchParams::default();
        let written = if reference.kind.as_deref() == Some("ApplicationSet") {
            let api: Api<ApplicationSet> = Api::namespaced(self.client.clone(), &self.namespace);
            api.patch(&name, &params, &patch).await.map(drop)
        } else {
            let api: Api<Application> = Api::namespaced(self.client.clone(), &self.namespace);
            api.patch(&name, &params, &patch).await.map(drop)
        };
        if let Err(error) = written {
            tracing::warn!(
                "writing annotation {NOTIFIED} of {name}: {}",
                api_message(&error)
            );
        }
    }
}
