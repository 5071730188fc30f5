//! A reflector store of the objects a watch selects, kept by a background task and handed out
//! once the watch has listed them: the shape of every small informer of the controller (cluster
//! Secrets, the settings ConfigMap). The task ends with the returned [`ListedWatch`].

use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::Resource;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::task::AbortHandle;

use crate::cluster::api_server::api_error::watch_message;

/// How long [`ListedWatch::start`] waits for the first list.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The store of a running watch; the watch stops when this is dropped.
pub struct ListedWatch<K: Resource + 'static>
where
    K::DynamicType: Hash + Eq + Clone,
{
    store: Store<K>,
    task: AbortHandle,
}

impl<K> ListedWatch<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Hash + Eq + Clone + Default,
{
    /// Starts watching what `config` selects of `api` (`what` names it in logs) and waits
    /// until the watch has listed; None when it has not within [`LIST_TIMEOUT`].
    pub async fn start(api: Api<K>, config: watcher::Config, what: &'static str) -> Option<Self> {
        let (store, writer) = reflector::store();
        let events = reflector::reflector(writer, watcher(api, config)).default_backoff();
        let task = tokio::spawn(events.for_each(move |event| {
            if let Err(error) = event {
                tracing::debug!("watching {what}: {}", watch_message(error));
            }
            futures::future::ready(())
        }));
        let listed = tokio::time::timeout(LIST_TIMEOUT, store.wait_until_ready()).await;
        if matches!(listed, Ok(Ok(()))) {
            return Some(Self {
                store,
                task: task.abort_handle(),
            });
        }
        task.abort();
        None
    }

    /// The watched objects as last seen.
    #[must_use]
    pub fn store(&self) -> &Store<K> {
        &self.store
    }
}

impl<K: Resource + 'static> Drop for ListedWatch<K>
where
    K::DynamicType: Hash + Eq + Clone,
{
    fn drop(&mut self) {
        self.task.abort();
    }
}
