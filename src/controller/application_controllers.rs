//! The Application controllers of the namespaces the controller manages, one per namespace, as
//! that set changes: a namespace that appears (created after start, and matched by an
//! `--application-namespaces` glob) gets its controller while the term runs, without a restart;
//! one that goes away has its controller stopped. Each namespace's context is made once and kept
//! across leadership terms (its remembered compares, backoff and parked syncs with it).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::stream::FuturesUnordered;
use futures::{Future, FutureExt, StreamExt};
use tokio::sync::watch;

use super::application_reconciler::{self, ApplicationContext};

/// Makes the context of the Application controller of a namespace.
pub type MakeContext = Box<dyn Fn(&str) -> ApplicationContext + Send + Sync>;

/// The managed namespaces (a channel following them) and how to make their controllers.
pub struct ApplicationControllers {
    namespaces: watch::Receiver<Vec<String>>,
    make: MakeContext,
    contexts: Mutex<BTreeMap<String, Arc<ApplicationContext>>>,
}

impl ApplicationControllers {
    /// Controllers for the namespaces `namespaces` holds (and will hold), made by `make`.
    #[must_use]
    pub fn new(namespaces: watch::Receiver<Vec<String>>, make: MakeContext) -> Self {
        Self {
            namespaces,
            make,
            contexts: Mutex::default(),
        }
    }

    /// Runs the controller of every managed namespace until `stop` completes, starting one for
    /// each namespace that appears and stopping the one of each namespace that goes; returns
    /// once every controller has finished.
    pub async fn run<S>(&self, stop: S)
    where
        S: Future<Output = ()> + Clone + Unpin + Send + Sync + 'static,
    {
        let mut namespaces = self.namespaces.clone();
        let mut following = true;
        // Dropping a namespace's sender stops its controller.
        let mut running: BTreeMap<String, futures::channel::oneshot::Sender<()>> = BTreeMap::new();
        let mut controllers = FuturesUnordered::new();
        let mut stopped = stop.clone().fuse();
        loop {
            let wanted = namespaces.borrow_and_update().clone();
            running.retain(|namespace, _| {
                let kept = wanted.contains(namespace);
                if !kept {
                    tracing::info!(%namespace, "no longer managing the Applications of namespace");
                }
                kept
            });
            for namespace in wanted {
                if running.contains_key(&namespace) {
                    continue;
                }
                let (leave, left) = futures::channel::oneshot::channel::<()>();
                let own_stop = futures::future::select(stop.clone(), left.map(drop)).map(drop);
                let ctx = self.context(&namespace);
                tracing::info!(%namespace, "managing the Applications of namespace");
                controllers.push(application_reconciler::run(ctx, own_stop));
                running.insert(namespace, leave);
            }
            tokio::select! {
                changed = namespaces.changed(), if following => following = changed.is_ok(),
                () = &mut stopped => break,
                Some(()) = controllers.next() => {}
            }
        }
        while controllers.next().await.is_some() {}
    }

    /// The context of `namespace`'s controller, made on first use.
    fn context(&self, namespace: &str) -> Arc<ApplicationContext> {
        let mut contexts = self.contexts.lock().unwrap_or_else(PoisonError::into_inner);
        let ctx = contexts
            .entry(namespace.to_owned())
            .or_insert_with(|| Arc::new((self.make)(namespace)));
        Arc::clone(ctx)
    }
}
