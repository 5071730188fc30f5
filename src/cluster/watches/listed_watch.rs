//! A reflector store of the objects a watch selects, kept by a background task and handed out
//! once the watch has listed them: the shape of every small informer of the controller (cluster
//! Secrets, the settings ConfigMap). The task ends with the returned [`ListedWatch`]. A failing
//! watch is logged at WARN as it fails (a refused list names the verb and resource), and a watch
//! that has not listed in time is an error carrying the last of those failures.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::Resource;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::task::AbortHandle;

use crate::cluster::api_server::api_error::watch_message;
use flotilla_generators::duration::format_duration;

/// How long [`ListedWatch::start`] waits for the first list.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The watch has not listed within [`LIST_TIMEOUT`]; `last` is the last failure it met (a
/// refused list: `... cannot list resource "secrets" ...`), if any.
#[derive(Debug, thiserror::Error)]
#[error(
    "the watch has not listed within {}{}",
    format_duration(LIST_TIMEOUT),
    last.as_ref().map(|last| format!(": {last}")).unwrap_or_default()
)]
pub struct NotListed {
    pub last: Option<String>,
}

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
    /// until the watch has listed.
    ///
    /// # Errors
    /// The watch has not listed within [`LIST_TIMEOUT`].
    pub async fn start(
        api: Api<K>,
        config: watcher::Config,
        what: &'static str,
    ) -> Result<Self, NotListed> {
        let (store, writer) = reflector::store();
        let events = reflector::reflector(writer, watcher(api, config)).default_backoff();
        let last = Arc::new(Mutex::new(None));
        let failed = Arc::clone(&last);
        let task = tokio::spawn(events.for_each(move |event| {
            if let Err(error) = event {
                let message = watch_message(error);
                tracing::warn!("watching {what}: {message}");
                *failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(message);
            }
            futures::future::ready(())
        }));
        let listed = tokio::time::timeout(LIST_TIMEOUT, store.wait_until_ready()).await;
        if matches!(listed, Ok(Ok(()))) {
            return Ok(Self {
                store,
                task: task.abort_handle(),
            });
        }
        task.abort();
        let last = last.lock().unwrap_or_else(PoisonError::into_inner).take();
        Err(NotListed { last })
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
