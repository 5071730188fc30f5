//! A record of what an ApplicationSet's versions held, read from a watch of it while a test
//! runs: each test says what it reads of a version, and the record keeps every distinct value in
//! order.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use flotilla_core::api::ApplicationSet;
use flotilla_core::api::application_set_status::RolloutApplicationState;
use futures::StreamExt;
use kube::runtime::watcher;

use super::TestNamespace;

/// What `read` gave of each version of the ApplicationSet `name`, without repeats in a row.
pub type Writes<T> = Arc<Mutex<Vec<T>>>;

/// Each Application's rollout state in the ApplicationSet's `status.applicationStatus`.
pub fn states(appset: ApplicationSet) -> BTreeMap<String, RolloutApplicationState> {
    appset
        .status
        .map(|s| s.application_status)
        .unwrap_or_default()
        .into_iter()
        .map(|entry| (entry.application, entry.status))
        .collect()
}

/// Watches the ApplicationSet `name` of `ns` until the task is aborted, recording what `read`
/// gives of each version (`None`: nothing to record).
pub fn record<T>(
    ns: &TestNamespace,
    name: &str,
    read: impl Fn(ApplicationSet) -> Option<T> + Send + 'static,
) -> (Writes<T>, tokio::task::JoinHandle<()>)
where
    T: PartialEq + Send + 'static,
{
    let writes: Writes<T> = Arc::default();
    let recording = Arc::clone(&writes);
    let stream = watcher(
        ns.api::<ApplicationSet>(),
        watcher::Config::default().fields(&format!("metadata.name={name}")),
    );
    let task = tokio::spawn(async move {
        let mut events = std::pin::pin!(stream);
        while let Some(event) = events.next().await {
            let Ok(watcher::Event::Apply(appset) | watcher::Event::InitApply(appset)) = event
            else {
                continue;
            };
            let Some(value) = read(appset) else {
                continue;
            };
            let mut all = recording.lock().expect("not poisoned");
            if all.last() != Some(&value) {
                all.push(value);
            }
        }
    });
    (writes, task)
}
