//! Waiting for a watch store's first list from many reconciles at once. kube-runtime 5's
//! `Store::wait_until_ready` wakes only the task that polled it last (its `DelayedInit` keeps a
//! `futures` oneshot receiver, which holds one waker): when several reconciles wait for the
//! first list together — every ApplicationSet of the namespace right after a start, waiting for
//! the Applications' store — all but one waited forever, and kube-runtime reconciles none of
//! those objects again while its reconcile runs. [`StoreReady`] is one wait shared by all
//! waiters, each of which it wakes.

use std::hash::Hash;

use futures::future::{BoxFuture, FutureExt, Shared};
use kube::Resource;
use kube::runtime::reflector::Store;

/// The first list of one store, awaited by any number of tasks.
#[derive(Clone)]
pub struct StoreReady(Shared<BoxFuture<'static, bool>>);

impl StoreReady {
    /// The first list of `store`.
    #[must_use]
    pub fn new<K>(store: &Store<K>) -> Self
    where
        K: Resource + Clone + Send + Sync + 'static,
        K::DynamicType: Eq + Hash + Clone + Send + Sync,
    {
        let store = store.clone();
        Self(
            async move { store.wait_until_ready().await.is_ok() }
                .boxed()
                .shared(),
        )
    }

    /// Waits for the first list: true once listed, false if the store's writer was dropped
    /// before it listed.
    pub async fn wait(&self) -> bool {
        self.0.clone().await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::{reflector, watcher};

    use super::*;

    /// How long a woken waiter may take to end (a waiter never woken costs this much).
    const BOUND: Duration = Duration::from_secs(1);

    /// Whether each of `waiters`, all polled before the first list, is woken by it.
    async fn woken<F>(waiters: Vec<F>, mut writer: reflector::store::Writer<ConfigMap>) -> Vec<bool>
    where
        F: Future<Output = bool> + Send + 'static,
    {
        let tasks: Vec<_> = waiters.into_iter().map(tokio::spawn).collect();
        // Every task waits before the list (the test runtime runs one task at a time).
        tokio::task::yield_now().await;
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let mut woken = Vec::new();
        for task in tasks {
            let ended = tokio::time::timeout(BOUND, task).await;
            woken.push(ended.is_ok_and(|listed| listed.expect("the waiter ends")));
        }
        woken
    }

    #[tokio::test]
    async fn every_waiter_is_woken_by_the_first_list() {
        let (store, writer) = reflector::store::<ConfigMap>();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let store = store.clone();
                async move { store.wait_until_ready().await.is_ok() }.boxed()
            })
            .collect();
        assert_eq!(
            woken(waiters, writer).await,
            [false, false, true],
            "kube-runtime's own wait wakes the last waiter only"
        );

        let (store, writer) = reflector::store::<ConfigMap>();
        let ready = StoreReady::new(&store);
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let ready = ready.clone();
                async move { ready.wait().await }.boxed()
            })
            .collect();
        assert_eq!(woken(waiters, writer).await, [true, true, true]);
        assert!(ready.wait().await, "and any later one at once");
    }
}
