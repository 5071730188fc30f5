//! The controller: reconciles ApplicationSets into Applications, and Applications into their
//! destination clusters, in one namespace while holding a Lease. The decisions live in the pure
//! [`appset`] and [`application`] cores; the files beside them are the I/O shell
//! ([`appset_reconciler`], [`rollout`], [`application_reconciler`], [`sync_job`],
//! [`status_store`], [`events`], [`leader`], [`readiness`], [`metrics`], [`endpoint`]) and [`run`]
//! ties them together.

pub mod application;
pub mod application_reconciler;
pub mod appset;
pub mod appset_reconciler;
pub mod endpoint;
pub mod events;
pub mod leader;
pub mod metrics;
pub mod readiness;
pub mod rollout;
pub mod status_store;
pub mod sync_job;

use std::sync::Arc;

use futures::future::FusedFuture;
use futures::{Future, FutureExt};

use application_reconciler::ApplicationContext;
use appset_reconciler::AppSetContext;
use leader::{LeaseError, LeaseLock};

/// Runs the ApplicationSet and Application controllers whenever this replica holds the Lease,
/// until `shutdown` completes; then lets running reconciles finish (running syncs stop, to be
/// resumed by the next leader) and releases the Lease.
///
/// # Errors
/// The Lease cannot be read or written.
pub async fn run(
    ctx: Arc<AppSetContext>,
    applications: Arc<ApplicationContext>,
    lease: LeaseLock,
    shutdown: impl Future<Output = ()>,
) -> Result<(), LeaseError> {
    let shutdown = shutdown.fuse();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            acquired = lease.acquire() => acquired?,
        }
        tracing::info!(identity = %lease.config().identity, "leading");
        ctx.metrics.set_leader(true);
        let (stop, stopped) = futures::channel::oneshot::channel::<()>();
        let stopped = stopped.map(drop).shared();
        let controller = futures::future::join(
            appset_reconciler::run(Arc::clone(&ctx), stopped.clone()),
            application_reconciler::run(Arc::clone(&applications), stopped),
        )
        .map(drop)
        .fuse();
        tokio::pin!(controller);
        let shutting_down = tokio::select! {
            () = &mut shutdown => true,
            () = lease.hold() => false,
            () = &mut controller => false,
        };
        // Stop taking new work and let running reconciles finish (a no-op if it already ended).
        let _ = stop.send(());
        if !controller.is_terminated() {
            controller.await;
        }
        ctx.metrics.set_leader(false);
        if shutting_down {
            tracing::info!("shutting down; releasing the Lease");
            return lease.release().await;
        }
        tracing::warn!("lost the Lease; waiting to lead again");
    }
}
