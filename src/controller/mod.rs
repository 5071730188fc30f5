//! The controller: reconciles ApplicationSets into Applications, and Applications into their
//! destination clusters (the Applications of its namespace and of the namespaces it manages
//! besides, one Application controller each, [`runtime::namespace_controllers`]) while holding
//! a Lease. The decisions live in the pure cores of crate flotilla-core
//! ([`flotilla_core::controller`]); these folders are the I/O shell: the two reconcilers
//! ([`appset`], [`application`]), the Leases and the membership that say when and on what this
//! replica acts ([`leases`]), the HTTP clients generators and analyses use ([`http_clients`]),
//! and what every controller runs on ([`runtime`]: Events, metrics, shutdown). [`run`] ties them
//! together — or [`run_sharded`], where several replicas share the Applications.

pub mod application;
pub mod appset;
pub mod http_clients;
pub mod leases;
pub mod runtime;

use std::sync::Arc;
use std::time::Duration;

use futures::future::FusedFuture;
use futures::{Future, FutureExt};

use leases::lease_lock::{LeaseError, LeaseLock};
use leases::member_lease::{MemberError, MemberLeases};
use runtime::metrics::Metrics;
use runtime::namespace_controllers::{ApplicationControllers, ApplicationSetControllers};

/// How long a stopping replica waits for its running reconciles before it exits anyway: then
/// it leaves its Leases to expire, as a killed replica does (a request it dropped may still
/// land, so nobody may take over at once), instead of releasing them. Below the 30 s a Pod
/// gets between SIGTERM and SIGKILL.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

/// Completes [`SHUTDOWN_GRACE`] from now when `stopping`; never otherwise.
async fn grace(stopping: bool) {
    if stopping {
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    } else {
        futures::future::pending::<()>().await;
    }
}

/// Runs the ApplicationSet and Application controllers whenever this replica holds the Lease,
/// until `shutdown` completes; then lets running reconciles finish (running syncs stop, to be
/// resumed by the next leader; at most [`SHUTDOWN_GRACE`]) and releases the Lease. The moment the Lease is not renewed by
/// its renew deadline, or is found taken, the controllers are cancelled outright (in-flight
/// requests dropped); writes leaving after that are refused by the [`leases::leadership::WriteGate`]
/// when the clients carry it.
///
/// # Errors
/// The Lease could not be released at shutdown.
pub async fn run(
    metrics: Arc<Metrics>,
    appsets: ApplicationSetControllers,
    applications: ApplicationControllers,
    lease: LeaseLock,
    shutdown: impl Future<Output = ()>,
) -> Result<(), LeaseError> {
    lead(&metrics, &appsets, Some(&applications), lease, shutdown).await
}

/// Why a sharded controller could not leave cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ShardedError {
    #[error(transparent)]
    Lease(#[from] LeaseError),
    #[error(transparent)]
    Member(#[from] MemberError),
}

/// Runs a sharded replica until `shutdown` completes: the ApplicationSet controller whenever
/// this replica holds the leader Lease (one decider for every RollingSync), and the Application
/// controllers, restricted to this replica's Applications, whenever its member Lease gives it
/// slots (see [`leases::member_lease`]). The Application controllers are restarted whenever the slots
/// change, so a slot given away has no reconcile left running before its release is written.
/// At shutdown both stop and the Leases are released.
///
/// # Errors
/// A Lease could not be released at shutdown.
pub async fn run_sharded(
    metrics: Arc<Metrics>,
    appsets: ApplicationSetControllers,
    applications: ApplicationControllers,
    lease: LeaseLock,
    members: MemberLeases,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ShardedError> {
    let shutdown = shutdown.shared();
    let (led, owned) = futures::future::join(
        lead(&metrics, &appsets, None, lease, shutdown.clone()),
        own(&applications, &members, shutdown),
    )
    .await;
    led?;
    owned?;
    Ok(())
}

/// Runs the Application controllers on this replica's slots as they change, until `shutdown`;
/// then lets running reconciles finish and leaves the membership.
async fn own(
    applications: &ApplicationControllers,
    members: &MemberLeases,
    shutdown: impl Future<Output = ()>,
) -> Result<(), MemberError> {
    let ownership = members.ownership();
    let rounds = members.run().fuse();
    let shutdown = shutdown.fuse();
    tokio::pin!(rounds, shutdown);
    loop {
        let (slots, generation) = ownership.current();
        // Every controller of an older generation has been dropped.
        ownership.stopped_before(generation);
        if slots.is_empty() {
            tokio::select! {
                () = &mut shutdown => break,
                () = ownership.changed_from(generation) => continue,
                never = &mut rounds => match never {},
            }
        }
        tracing::info!(
            slots = slots.len(),
            "reconciling the Applications of these slots"
        );
        let (stop, stopped) = futures::channel::oneshot::channel::<()>();
        let stopped = stopped.map(drop).shared();
        let controller = applications.run(stopped).fuse();
        tokio::pin!(controller);
        let changed = tokio::select! {
            () = &mut shutdown => false,
            () = ownership.changed_from(generation) => true,
            () = &mut controller => true,
            never = &mut rounds => match never {},
        };
        if !changed {
            let _ = stop.send(());
            let finished = tokio::select! {
                () = &mut controller => true,
                () = ownership.changed_from(generation) => true,
                () = grace(true) => false,
                never = &mut rounds => match never {},
            };
            if !finished {
                tracing::warn!(
                    grace = ?SHUTDOWN_GRACE,
                    "shutting down with reconciles still running; the member Lease is left to expire"
                );
                return Ok(());
            }
            break;
        }
    }
    tracing::info!("shutting down; leaving the membership");
    members.release().await
}

/// Runs the ApplicationSet controller (and `applications`, when given) whenever this replica
/// holds the Lease; see [`run`].
async fn lead(
    metrics: &Metrics,
    appsets: &ApplicationSetControllers,
    applications: Option<&ApplicationControllers>,
    lease: LeaseLock,
    shutdown: impl Future<Output = ()>,
) -> Result<(), LeaseError> {
    let leadership = lease.leadership();
    let identity = lease.identity();
    let campaign = lease.campaign().fuse();
    let shutdown = shutdown.fuse();
    tokio::pin!(campaign, shutdown);
    // When this replica last stopped acting because it lost the Lease, until it leads again.
    let mut lost_at = None;
    loop {
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            () = leadership.acquired() => {}
            never = &mut campaign => match never {},
        }
        tracing::info!(%identity, "leading");
        metrics.set_leader(true);
        if let Some(stopped) = lost_at.take() {
            tokio::select! {
                () = lease.report_regained(stopped) => {}
                never = &mut campaign => match never {},
            }
        }
        let (stop, stopped) = futures::channel::oneshot::channel::<()>();
        let stopped = stopped.map(drop).shared();
        let mut controller = Box::pin(
            futures::future::join(appsets.run(stopped.clone()), async {
                if let Some(applications) = applications {
                    applications.run(stopped.clone()).await;
                }
            })
            .map(drop)
            .fuse(),
        );
        let mut lost = tokio::select! {
            () = &mut shutdown => false,
            () = leadership.lost() => true,
            () = &mut controller => false,
            never = &mut campaign => match never {},
        };
        // Stop taking new work; while the Lease is still ours, let running reconciles finish.
        let _ = stop.send(());
        let mut overran = false;
        if !lost && !controller.is_terminated() {
            lost = tokio::select! {
                () = &mut controller => false,
                () = leadership.lost() => true,
                () = grace(shutdown.is_terminated()) => {
                    overran = true;
                    false
                }
                never = &mut campaign => match never {},
            };
        }
        drop(controller);
        metrics.set_leader(false);
        if lost {
            tracing::warn!(
                %identity,
                "stopped acting: the Lease was not renewed by its renew deadline or is held by another replica"
            );
            metrics.leadership_lost();
            lost_at = Some(k8s_openapi::jiff::Timestamp::now());
        }
        if overran {
            tracing::warn!(
                grace = ?SHUTDOWN_GRACE,
                "shutting down with reconciles still running; the Lease is left to expire"
            );
            return Ok(());
        }
        if shutdown.is_terminated() {
            tracing::info!("shutting down; releasing the Lease");
            return lease.release().await;
        }
    }
}
