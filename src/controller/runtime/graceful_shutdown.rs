//! Graceful shutdown of a kube-runtime controller that may not have listed yet. Its runner holds
//! every reconcile until the controller's store has listed, and `graceful_shutdown_on` stops
//! reading the watch that would list it: a controller stopped before its first list waits
//! forever (kube-runtime 5's `Runner` stays pending once its scheduler has ended while the store
//! is not ready). Nothing has been reconciled then, so [`run_gracefully`] ends it at once. A
//! sharded replica restarts its Application controllers whenever its slots change, so a stop
//! (SIGTERM) right after a change met an unlisted controller, and the replica never exited.

use std::hash::Hash;

use futures::{Future, FutureExt};
use kube::Resource;
use kube::runtime::reflector::Store;

/// Runs `reconciling` (a controller's run that shuts down gracefully on `stop`) to its end, or
/// ends it as soon as `stop` completes if `store` (the controller's) has not listed by then.
pub async fn run_gracefully<K>(
    reconciling: impl Future<Output = ()>,
    store: &Store<K>,
    stop: impl Future<Output = ()>,
) where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    let unlisted = async {
        stop.await;
        if store.wait_until_ready().now_or_never().is_some() {
            // Listed: the graceful shutdown lets its running reconciles finish.
            std::future::pending::<()>().await;
        }
    };
    futures::pin_mut!(reconciling, unlisted);
    futures::future::select(reconciling, unlisted).await;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::controller::{Action, Controller};
    use kube::runtime::reflector::{self, store::Writer};
    use kube::runtime::watcher;

    use super::*;

    /// A controller whose watch has not listed (its stream yields nothing yet), stopped at
    /// once, the store its runner waits for and that store's writer (kept, as the stopped
    /// watch keeps it); `listed` marks the store listed first.
    fn stopped_controller(
        listed: bool,
    ) -> (
        impl Future<Output = ()>,
        Store<ConfigMap>,
        Writer<ConfigMap>,
    ) {
        let (store, mut writer) = reflector::store::<ConfigMap>();
        if listed {
            writer.apply_watcher_event(&watcher::Event::InitDone);
        }
        let trigger = futures::stream::pending::<Result<ConfigMap, watcher::Error>>();
        let reconciling = Controller::for_stream(trigger, store.clone())
            .graceful_shutdown_on(std::future::ready(()))
            .run(
                |_: Arc<ConfigMap>, _: Arc<()>| async {
                    Ok::<_, std::convert::Infallible>(Action::await_change())
                },
                |_, _, _| Action::await_change(),
                Arc::new(()),
            )
            .for_each(|_| async {});
        (reconciling, store, writer)
    }

    const BOUND: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn a_controller_stopped_before_it_listed_ends_at_once() {
        let (reconciling, _store, _writer) = stopped_controller(false);
        assert!(
            tokio::time::timeout(BOUND, reconciling).await.is_err(),
            "kube-runtime's graceful shutdown alone waits for the first list forever"
        );
        let (reconciling, store, _writer) = stopped_controller(false);
        let ended = run_gracefully(reconciling, &store, std::future::ready(()));
        assert!(tokio::time::timeout(BOUND, ended).await.is_ok());
    }

    #[tokio::test]
    async fn a_listed_controller_ends_through_its_graceful_shutdown() {
        let (reconciling, store, _writer) = stopped_controller(true);
        assert!(store.wait_until_ready().now_or_never().is_some());
        // Listed, it is left to its graceful shutdown, which ends it.
        let ended = run_gracefully(reconciling, &store, std::future::ready(()));
        assert!(tokio::time::timeout(BOUND, ended).await.is_ok());
    }
}
