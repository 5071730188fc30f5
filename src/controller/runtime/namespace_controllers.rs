//! The controllers of the namespaces the controller manages, one per namespace, as that set
//! changes: a namespace that appears (created after start, and matched by a glob of
//! `--application-namespaces` or `--applicationset-namespaces`) gets its controller while the
//! term runs, without a restart; one that goes away has its controller stopped. Each
//! namespace's context is made once and kept across leadership terms (its remembered compares,
//! backoff and parked syncs with it). The Application controllers
//! ([`ApplicationControllers`]) and the ApplicationSet controllers
//! ([`ApplicationSetControllers`]) are both run this way.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::stream::FuturesUnordered;
use futures::{Future, FutureExt, StreamExt};
use tokio::sync::watch;

use crate::controller::application::{self, ApplicationContext};
use crate::controller::appset::{self, AppSetContext};

/// A controller run per namespace, by its context.
pub trait NamespaceController: Send + Sync + 'static {
    /// What it reconciles, as log lines name it (`Applications`).
    const RECONCILES: &'static str;

    /// Runs the controller of this context until `stop` completes.
    fn run<S>(self: Arc<Self>, stop: S) -> impl Future<Output = ()> + Send
    where
        S: Future<Output = ()> + Send + Sync + 'static;
}

impl NamespaceController for ApplicationContext {
    const RECONCILES: &'static str = "Applications";

    fn run<S>(self: Arc<Self>, stop: S) -> impl Future<Output = ()> + Send
    where
        S: Future<Output = ()> + Send + Sync + 'static,
    {
        application::run(self, stop)
    }
}

impl NamespaceController for AppSetContext {
    const RECONCILES: &'static str = "ApplicationSets";

    fn run<S>(self: Arc<Self>, stop: S) -> impl Future<Output = ()> + Send
    where
        S: Future<Output = ()> + Send + Sync + 'static,
    {
        appset::run(self, stop)
    }
}

/// Makes the context of the controller of a namespace.
pub type MakeContext<C> = Box<dyn Fn(&str) -> C + Send + Sync>;

/// The Application controllers of the managed namespaces.
pub type ApplicationControllers = NamespaceControllers<ApplicationContext>;

/// The ApplicationSet controllers of the namespaces whose ApplicationSets are reconciled.
pub type ApplicationSetControllers = NamespaceControllers<AppSetContext>;

/// The managed namespaces (a channel following them) and how to make their controllers.
pub struct NamespaceControllers<C> {
    namespaces: watch::Receiver<Vec<String>>,
    make: MakeContext<C>,
    contexts: Mutex<BTreeMap<String, Arc<C>>>,
}

impl<C: NamespaceController> NamespaceControllers<C> {
    /// Controllers for the namespaces `namespaces` holds (and will hold), made by `make`.
    #[must_use]
    pub fn new(namespaces: watch::Receiver<Vec<String>>, make: MakeContext<C>) -> Self {
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
        let reconciles = C::RECONCILES;
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
                    tracing::info!(%namespace, "no longer managing the {reconciles} of namespace");
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
                tracing::info!(%namespace, "managing the {reconciles} of namespace");
                controllers.push(ctx.run(own_stop));
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
    fn context(&self, namespace: &str) -> Arc<C> {
        let mut contexts = self.contexts.lock().unwrap_or_else(PoisonError::into_inner);
        let ctx = contexts
            .entry(namespace.to_owned())
            .or_insert_with(|| Arc::new((self.make)(namespace)));
        Arc::clone(ctx)
    }
}
