//! The ApplicationSet watches of every namespace this controller manages, shared between the
//! namespaces' controllers ([`WatchedNamespaces`]): a step waiting for an ApplicationSet of
//! another managed namespace reads it from that namespace's watch, and that namespace's
//! controller tells the others each change it sees, so the waiting ApplicationSet is reconciled
//! as soon as the step it waits for completes — no further watch of the API server, and none
//! beyond the namespaces this controller may read (an ApplicationSet of a namespace no Flotilla
//! controller of this process manages is read from the API server at each pass instead).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use kube::ResourceExt;
use kube::runtime::reflector::Store;

use crate::controller::runtime::store_ready::StoreReady;
use flotilla_core::api::ApplicationSet;

/// One namespace's watch: its store, its first list, and where the changes other namespaces
/// see are sent.
struct Watch {
    store: Store<ApplicationSet>,
    ready: StoreReady,
    changes: UnboundedSender<ApplicationSet>,
}

/// The running controllers' watches of their namespaces' ApplicationSets, by namespace.
#[derive(Default)]
pub struct WatchedNamespaces {
    watches: Mutex<BTreeMap<String, Watch>>,
}

impl WatchedNamespaces {
    /// Registers `store`, the watch of `namespace`'s ApplicationSets by its controller that
    /// starts now (replacing an earlier term's); returns the changes of other namespaces'
    /// ApplicationSets, which the controller maps to its ApplicationSets waiting for them. The
    /// registration ends when the receiver is dropped.
    pub fn register(
        &self,
        namespace: &str,
        store: Store<ApplicationSet>,
    ) -> UnboundedReceiver<ApplicationSet> {
        let (changes, received) = unbounded();
        let ready = StoreReady::new(&store);
        self.watches().insert(
            namespace.to_owned(),
            Watch {
                store,
                ready,
                changes,
            },
        );
        received
    }

    /// The watch of `namespace`'s ApplicationSets once it has listed, if a controller of this
    /// process runs there.
    pub async fn store(&self, namespace: &str) -> Option<Store<ApplicationSet>> {
        let (store, ready) = {
            let watches = self.watches();
            let watch = watches.get(namespace).filter(|w| !w.changes.is_closed())?;
            (watch.store.clone(), watch.ready.clone())
        };
        ready.wait().await.then_some(store)
    }

    /// Tells the controllers of the other namespaces that `changed` changed.
    pub fn changed(&self, changed: &ApplicationSet) {
        let namespace = changed.namespace().unwrap_or_default();
        let mut watches = self.watches();
        watches.retain(|_, w| !w.changes.is_closed());
        for (other, watch) in watches.iter() {
            if *other != namespace {
                let _ = watch.changes.unbounded_send(changed.clone());
            }
        }
    }

    fn watches(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Watch>> {
        self.watches.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
