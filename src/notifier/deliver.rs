//! The notifier: while this replica leads, it watches the namespace's ApplicationSets and
//! Applications (keeping only what it reads of them, [`super::watched`]), reads the
//! `flotilla-notifications` ConfigMap (and the Secret of the same name for `$key` credentials)
//! from their watches at each pass ([`super::sources`]), and delivers what the triggers ask that the ledger
//! (the ConfigMap `flotilla-notifications-state`) does not record yet. A delivery is recorded
//! right after its service answered 2xx, or after its last attempt failed, so a restart
//! (even a SIGKILL) neither repeats a delivery recorded nor loses one that was due; only one
//! killed between the answer and the record is sent again, with the same
//! `X-Flotilla-Delivery` id. Attempts are retried with exponential backoff; every outcome is an
//! Event on the object and a count in `flotilla_notifications_total`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};
use futures::{Future, FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt};

use super::argo::{ArgoMemory, project_key};
use super::post::post_json;
use super::sources::{NotificationSources, secret_text};
use super::watched::{Kept, Watched, WatchedObjects, lock, watched};
use crate::cluster::api_server::api_error::api_message;
use crate::controller::leases::leadership::Leadership;
use crate::controller::runtime::events::EventPublisher;
use crate::controller::runtime::metrics::Metrics;
use flotilla_core::api::{AppProject, Application, ApplicationSet};
use flotilla_core::controller::event_reason::EventReason;
use flotilla_core::notify::config::{NotificationConfig, SECRET, Service};
use flotilla_core::notify::ledger::{Delivery, Ledger, application_key, application_set_key};
use flotilla_core::notify::message::{body, render};
use flotilla_core::notify::occurrence::{of_application, of_application_set};

/// The ConfigMap the ledger is kept in.
pub const LEDGER: &str = "flotilla-notifications-state";
/// The field manager of the ledger's writes.
const FIELD_MANAGER: &str = "flotilla-notifications";
/// Attempts per delivery.
pub const ATTEMPTS: usize = 5;
/// The first retry's pause; each next one doubles, up to [`MAX_PAUSE`].
pub const FIRST_PAUSE: Duration = Duration::from_millis(500);
const MAX_PAUSE: Duration = Duration::from_secs(8);
/// How long changes are gathered into one pass.
const GATHER: Duration = Duration::from_millis(100);
/// How long a pass that left something undone (an Event the API server did not take or this
/// replica could not write yet, a configuration it could not read) waits before the next pass
/// tries again, when nothing changes meanwhile.
const UNFINISHED_RETRY: Duration = Duration::from_secs(5);

/// The API server did not answer a read (logged where it failed).
struct Unread;

/// Delivers the notifications of one namespace.
pub struct Notifier {
    /// The controller's client (its writes need the Lease).
    pub client: Client,
    pub namespace: String,
    pub metrics: Arc<Metrics>,
    pub events: Arc<EventPublisher>,
    pub sources: NotificationSources,
}

impl Notifier {
    /// Runs until `stop` completes (or the future is dropped: the watches stop with it).
    pub async fn run(self: Arc<Self>, stop: impl Future<Output = ()>) {
        let since = Timestamp::now();
        let (appsets, appset_changes) =
            watched(self.client.clone(), &self.namespace, reduce_application_set);
        let (apps, app_changes) = watched(self.client.clone(), &self.namespace, reduce_application);
        let (projects, project_changes) =
            watched(self.client.clone(), &self.namespace, reduce_project);
        // The watches run on their own task, announcing each change.
        let (changed, mut changes) = tokio::sync::watch::channel(());
        let watching = tokio::spawn(async move {
            let mut events = std::pin::pin!(futures::stream::select(
                futures::stream::select(appset_changes, app_changes),
                project_changes
            ));
            while events.next().await.is_some() {
                changed.send_replace(());
            }
        });
        let _watching = AbortOnDrop(watching.abort_handle());
        let stop = stop.fuse();
        tokio::pin!(stop);
        // Both kinds listed first, as a pass forgets the ledger entries of absent objects.
        let listed = || lock(&appsets).listed() && lock(&apps).listed() && lock(&projects).listed();
        while !listed() {
            tokio::select! {
                () = &mut stop => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
        }
        // Delivering without the ledger would send again what was delivered: it is read first.
        let mut ledger = loop {
            match self.read_ledger().await {
                Ok(ledger) => break ledger,
                Err(Unread) => tokio::select! {
                    () = &mut stop => return,
                    () = tokio::time::sleep(UNFINISHED_RETRY) => {}
                },
            }
        };
        let mut argo = ArgoMemory::default();
        loop {
            changes.borrow_and_update();
            let finished = self.pass(&mut ledger, &appsets, &apps, since).await;
            self.argo_pass(&mut argo, &appsets, &apps, &projects, since)
                .await;
            // What a pass left undone is tried again after a while even if nothing changes.
            let retry = !finished || argo.unfinished;
            tokio::select! {
                () = &mut stop => return,
                changed = changes.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(UNFINISHED_RETRY), if retry => {}
            }
            // What arrives meanwhile is seen by the same pass.
            tokio::time::sleep(GATHER).await;
        }
    }

    /// Delivers whatever is due now; whether the pass could read its configuration (when not,
    /// nothing was delivered: a credential unread is not a credential missing).
    async fn pass(
        &self,
        ledger: &mut Ledger,
        appsets: &Mutex<WatchedObjects>,
        apps: &Mutex<WatchedObjects>,
        since: Timestamp,
    ) -> bool {
        let config = match self.read_config().await {
            Ok(Some(config)) => config,
            Ok(None) => return true,
            Err(Unread) => return false,
        };
        let Ok(credentials) = self.read_credentials().await else {
            return false;
        };
        let before = ledger.clone();
        let mut due = Vec::new();
        {
            let (appsets, apps) = (lock(appsets), lock(apps));
            ledger.retain(|key| appsets.contains(key) || apps.contains(key));
            for object in appsets.iter().chain(apps.iter()) {
                let deliveries = ledger.due(&object.key, &object.occurrences, &config, since);
                // Each event seen is an evaluation of its trigger; it fired when it is due
                // somewhere (Argo CD's argocd_notifications_trigger_eval_total).
                for occurrence in &object.occurrences {
                    let fired = deliveries.iter().any(|d| d.trigger == occurrence.trigger);
                    self.metrics
                        .trigger_evaluated(occurrence.trigger.as_str(), fired);
                }
                for delivery in deliveries {
                    due.push((delivery, object.reference.clone()));
                }
            }
        }
        for (delivery, reference) in &due {
            self.deliver(&config, &credentials, delivery, reference)
                .await;
            ledger.record(&delivery.object, &delivery.id);
            self.write_ledger(ledger).await;
        }
        if *ledger != before {
            self.write_ledger(ledger).await;
        }
        true
    }

    /// Sends `delivery` with retries; publishes and counts the outcome.
    async fn deliver(
        &self,
        config: &NotificationConfig,
        credentials: &BTreeMap<String, String>,
        delivery: &Delivery,
        reference: &ObjectReference,
    ) {
        let service = &config.services[&delivery.destination];
        let outcome = match render(&config.templates[&delivery.template], delivery) {
            Ok(message) => {
                self.attempts(service, credentials, delivery, &message)
                    .await
            }
            Err(error) => Err(format!("rendering: {error}")),
        };
        let trigger = delivery.trigger.as_str();
        match outcome {
            Ok(attempts) => {
                self.metrics
                    .notification(trigger, &delivery.destination, "delivered");
                let note = format!(
                    "{trigger} sent to {} (attempt {attempts})",
                    delivery.destination
                );
                tracing::info!(id = %delivery.id, "notification: {note}");
                self.events
                    .publish(reference, EventReason::NotificationSent, note)
                    .await;
            }
            Err(error) => {
                self.metrics
                    .notification(trigger, &delivery.destination, "failed");
                let note = format!("{trigger} to {}: {error}", delivery.destination);
                tracing::warn!(id = %delivery.id, "notification failed: {note}");
                self.events
                    .publish(reference, EventReason::NotificationFailed, note)
                    .await;
            }
        }
    }

    /// Up to [`ATTEMPTS`] POSTs of `message` to `service`, backing off between them; the number
    /// of the attempt that succeeded.
    async fn attempts(
        &self,
        service: &Service,
        credentials: &BTreeMap<String, String>,
        delivery: &Delivery,
        message: &str,
    ) -> Result<usize, String> {
        let url = resolve(&service.url, credentials)?;
        let mut headers = vec![("X-Flotilla-Delivery".to_owned(), delivery.id.clone())];
        for (name, value) in &service.headers {
            headers.push((name.clone(), resolve(value, credentials)?));
        }
        let sent = body(service, delivery, message);
        self.retrying(
            delivery.trigger.as_str(),
            &delivery.destination,
            &delivery.id,
            || post_json(&url, &headers, &sent),
        )
        .await
    }

    /// Up to [`ATTEMPTS`] of `attempt`, backing off between them and counting each retry for
    /// `trigger` to `destination` (`id` names the delivery in the log); the number of the attempt
    /// that succeeded.
    pub(super) async fn retrying<F, E>(
        &self,
        trigger: &str,
        destination: &str,
        id: &str,
        attempt: impl Fn() -> F,
    ) -> Result<usize, String>
    where
        F: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let mut pauses = ExponentialBuilder::default()
            .with_min_delay(FIRST_PAUSE)
            .with_max_delay(MAX_PAUSE)
            .with_max_times(ATTEMPTS - 1)
            .build();
        let mut number = 1;
        loop {
            match attempt().await {
                Ok(()) => return Ok(number),
                Err(error) => {
                    let Some(pause) = pauses.next() else {
                        return Err(format!("{error} (after {number} attempts)"));
                    };
                    self.metrics.notification(trigger, destination, "retried");
                    tracing::debug!(id, attempt = number, "notification attempt failed: {error}");
                    tokio::time::sleep(pause).await;
                    number += 1;
                }
            }
        }
    }

    /// The configuration, or `None` when there is none or it is unusable (logged).
    async fn read_config(&self) -> Result<Option<NotificationConfig>, Unread> {
        let data = match self.sources.config.current().await {
            Ok(None) => return Ok(None),
            Ok(Some(found)) => found.data.clone().unwrap_or_default(),
            Err(error) => {
                tracing::warn!("reading {error}");
                return Err(Unread);
            }
        };
        Ok(NotificationConfig::parse(&data)
            .inspect_err(|error| tracing::warn!("notifications are off: {error}"))
            .ok())
    }

    /// The credentials Secret's keys (none when it does not exist).
    async fn read_credentials(&self) -> Result<BTreeMap<String, String>, Unread> {
        secret_text(&self.sources.secret).await.map_err(|error| {
            tracing::warn!("reading {error}");
            Unread
        })
    }

    /// The ledger (empty when there is none yet).
    async fn read_ledger(&self) -> Result<Ledger, Unread> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        match api.get_opt(LEDGER).await {
            Ok(found) => Ok(Ledger::from_data(
                &found.and_then(|c| c.data).unwrap_or_default(),
            )),
            Err(error) => {
                tracing::warn!("reading ConfigMap {LEDGER}: {}", api_message(&error));
                Err(Unread)
            }
        }
    }

    async fn write_ledger(&self, ledger: &Ledger) {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let applied = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": LEDGER},
            "data": ledger.to_data(),
        });
        let written = api
            .patch(
                LEDGER,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(applied),
            )
            .await;
        if let Err(error) = written {
            tracing::warn!("writing ConfigMap {LEDGER}: {}", api_message(&error));
        }
    }
}

/// An ApplicationSet as the notifier keeps it.
fn reduce_application_set(appset: &ApplicationSet) -> Watched {
    Watched {
        key: application_set_key(&appset.name_any()),
        reference: appset.object_ref(&()),
        occurrences: of_application_set(appset),
        object: Kept::of(appset, Kept::ApplicationSet),
    }
}

/// An Application as the notifier keeps it.
fn reduce_application(app: &Application) -> Watched {
    Watched {
        key: application_key(&app.namespace().unwrap_or_default(), &app.name_any()),
        reference: app.object_ref(&()),
        occurrences: of_application(app),
        object: Kept::of(app, Kept::Application),
    }
}

/// An AppProject as the notifier keeps it (for its subscriptions and `appProject`).
fn reduce_project(project: &AppProject) -> Watched {
    Watched {
        key: project_key(&project.name_any()),
        reference: project.object_ref(&()),
        occurrences: Vec::new(),
        object: Kept::of(project, Kept::Project),
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `notifier` whenever this replica leads (per `leadership`), until `shutdown` completes.
pub async fn run_while_leading(
    notifier: Arc<Notifier>,
    leadership: Leadership,
    shutdown: impl Future<Output = ()>,
) {
    let shutdown = shutdown.fuse();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            () = leadership.acquired() => {}
        }
        tokio::select! {
            () = &mut shutdown => return,
            () = leadership.lost() => {}
            () = Arc::clone(&notifier).run(std::future::pending()) => {}
        }
    }
}

/// `value`, or the credential it names as `$key`.
fn resolve(value: &str, credentials: &BTreeMap<String, String>) -> Result<String, String> {
    match value.strip_prefix('$') {
        Some(key) => credentials
            .get(key)
            .cloned()
            .ok_or_else(|| format!("key {key:?} is not in Secret {SECRET}")),
        None => Ok(value.to_owned()),
    }
}
