//! Watches on the kinds clusterDecisionResource generators read: the first time a generation
//! lists a kind, a watch on that kind in the namespace starts, and every change of one of its
//! objects (a new decision in its status) asks the ApplicationSet controller to reconcile every
//! ApplicationSet again. The watches outlive a leadership term; each change goes to the trigger
//! of the controller running now, if any.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::runtime::Handle;

/// The decision kinds watched in one namespace, and where their changes go.
pub struct DecisionWatches {
    client: Client,
    namespace: String,
    watched: Mutex<BTreeSet<String>>,
    trigger: Mutex<Option<UnboundedSender<()>>>,
}

impl DecisionWatches {
    /// No watch yet, no controller to tell.
    #[must_use]
    pub fn new(client: Client, namespace: String) -> Self {
        Self {
            client,
            namespace,
            watched: Mutex::default(),
            trigger: Mutex::default(),
        }
    }

    /// From now on, changes go to `trigger` (the running controller's).
    pub fn notify(&self, trigger: UnboundedSender<()>) {
        *self.trigger.lock().unwrap_or_else(PoisonError::into_inner) = Some(trigger);
    }

    /// Starts watching `resource` on `runtime` unless it is watched already.
    pub fn ensure(self: &Arc<Self>, resource: &ApiResource, runtime: &Handle) {
        let key = format!("{}/{}", resource.api_version, resource.plural);
        if !self
            .watched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key)
        {
            return;
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &self.namespace, resource);
        let watches = Arc::clone(self);
        runtime.spawn(async move {
            let mut changes = watcher(api, watcher::Config::default())
                .default_backoff()
                .touched_objects()
                .boxed();
            while let Some(change) = changes.next().await {
                if change.is_ok() {
                    watches.changed();
                }
            }
        });
    }

    fn changed(&self) {
        let trigger = self.trigger.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(trigger) = trigger.as_ref() {
            // A controller that stopped has dropped its receiver; the next one replaces it.
            let _ = trigger.unbounded_send(());
        }
    }
}
