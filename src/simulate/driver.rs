//! The simulation loop, the controller's loop in miniature: a RollingSync pass
//! ([`flotilla_core::rollout::advance`]) decides which Applications sync; each triggered sync runs the real
//! executor ([`run_sync`]) against its embedded cluster; when syncs end, their Applications are
//! observed (all that ended at the same moment together, as one controller pass would see them)
//! and the next pass runs — until nothing is in flight and nothing new is triggered. Before each
//! pass every Application's sync windows are evaluated at the virtual time (as the controller
//! does); a step held by a window is passed again when the window opens, a baking step when its
//! bake ends (`bakeTime`), as the controller requeues. The [`Scenario`] stands in for the world
//! around the controller: each pass gets the analysis observations and the `flotilla.dev/promote`
//! annotation it scripts, and an Application it degrades is observed Degraded from then on (until
//! a rollback syncs it back: the simulator knows one revision, so an Application's earlier one
//! is [`PREVIOUS`], and a rollback sync re-applies its objects, timed as a sync). With
//! `AllAtOnce` every
//! Application syncs at the start unless a window blocks its automated sync; then it syncs when
//! the window opens ([`all_at_once_pass`]). The loop decides nothing itself.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use futures::future::LocalBoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio::sync::watch;

use super::neighbours::Neighbours;
use crate::sync::execute::cluster_api::ClusterApi;
use crate::sync::execute::{PruneConfirmation, SyncEvent, SyncParams, run_sync};
use flotilla_core::api::application::ApplicationDestination;
use flotilla_core::api::application_set::{RolloutStrategy, StrategyType};
use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::health::{HealthChecks, HealthStatus};
use flotilla_core::manifest::ObjectKey;
use flotilla_core::project::windows::block::SEARCH_HORIZON_DAYS;
use flotilla_core::project::windows::{AppWindows, SyncKind};
use flotilla_core::rollout::external::ExternalRollout;
use flotilla_core::rollout::{
    ApplicationState, ObservedStatus, OperationState as RolloutOperation, RolloutDecision,
    RolloutInput, StepState,
};
use flotilla_core::sync::{OperationPhase, OperationState, ResourceResult, ResultStatus};
use flotilla_generators::duration::format_duration;

use super::all_at_once::all_at_once_pass;
use super::app::SimApp;
use super::clock::VirtualClock;
use super::observe::observe;
use super::scenario::Scenario;
use super::store::NeverResumedStore;
use flotilla_core::rollout::analysis::probes;

/// The revision a simulated Application ran before this rollout: where `onFailure: rollback`
/// takes it.
pub const PREVIOUS: &str = "previous";

/// Something the live view may show: at a virtual time, about an Application, and where the
/// whole rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress<'a> {
    /// Virtual time since the start.
    pub at: Duration,
    /// The Application.
    pub app: &'a str,
    /// What happened, e.g. `sync started` or `apply PreSync wave 0: Job prod/db-migrate`.
    pub text: String,
    /// The rollout at that moment.
    pub standing: Standing,
}

/// Where a whole rollout stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Standing {
    /// The first step not complete (the last when all are) and the number of steps; `None`
    /// without RollingSync.
    pub step: Option<(usize, usize)>,
    /// Applications whose sync succeeded.
    pub synced: usize,
    /// Applications in the rollout.
    pub total: usize,
}

/// The standing as the loop last set it.
struct Shared(Mutex<Standing>);

impl Shared {
    fn get(&self) -> Standing {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set(&self, standing: Standing) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = standing;
    }
}

impl Standing {
    /// The step part of `decision`: the first step not complete, of how many.
    fn step_of(decision: &RolloutDecision) -> Option<(usize, usize)> {
        let reports = &decision.step_reports;
        let current = reports
            .iter()
            .find(|report| report.state != StepState::Complete)
            .or(reports.last())?;
        Some((current.step, reports.len()))
    }
}

/// How one Application fared.
#[derive(Debug, Clone)]
pub struct AppRun {
    /// Its name.
    pub name: String,
    /// Its destination cluster.
    pub destination: String,
    /// When its sync was triggered; `None` if it never was.
    pub triggered_at: Option<Duration>,
    /// Its sync operation as the executor left it.
    pub operation: Option<OperationState>,
    /// When it was last seen turning Healthy after its sync (its last wave ends the operation
    /// without waiting for health); `None` while it has not.
    pub healthy_at: Option<Duration>,
    /// What the rollout last saw of it.
    pub observed: ApplicationState,
    /// Its rollback sync (`onFailure: rollback`): when it was requested and when it ended.
    pub rollback: Option<(Duration, Option<Duration>)>,
}

/// What a step waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum WaitKind {
    /// A sync window to open.
    Window,
    /// Its bake to end (`bakeTime`): every Application Healthy, staying so.
    Bake,
    /// Someone's approval (`approval: manual`, `--approve`).
    Approval,
    /// Its analysis to pass (`analysis`, `--analysis`).
    Analysis,
    /// Its rollback to end (`onFailure: rollback`).
    Rollback,
    /// A step of another ApplicationSet (`dependsOn`), simulated with it.
    ApplicationSet,
}

/// A stretch of virtual time during which a step waited for a sync window or baked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepWait {
    /// The step (1-based).
    pub step: usize,
    /// What it waited for.
    pub kind: WaitKind,
    /// What the rollout said, e.g. `waits for window 'prod freeze' (opens Mon 08:00 UTC); ...`.
    pub reason: String,
    /// When the wait began.
    pub start: Duration,
    /// When it ended (the end of the simulation if it never did).
    pub end: Duration,
}

/// What a whole simulation did.
#[derive(Debug, Clone)]
pub struct Driven {
    /// Every Application, in name order.
    pub runs: Vec<AppRun>,
    /// When steps waited for sync windows or baked, in order.
    pub step_waits: Vec<StepWait>,
    /// The last RollingSync decision (`None` for `AllAtOnce`).
    pub decision: Option<RolloutDecision>,
    /// When the last sync ended.
    pub ended_at: Duration,
}

/// `app`'s destination as the rollout sees it: its cluster (a `server` URL, else a `name`, as
/// the Application gave it) and namespace.
fn destination_of(app: &SimApp) -> ApplicationDestination {
    let cluster = Some(app.destination.clone());
    let (server, name) = if app.destination.contains("://") {
        (cluster, None)
    } else {
        (None, cluster)
    };
    ApplicationDestination {
        server,
        name,
        namespace: app.settings.destination_namespace.clone(),
    }
}

/// Runs the rollout of `apps` to its end. `clusters` holds one cluster per destination: embedded
/// ones for a simulation (with `clock` on tokio's paused time), or real ones (`clock` then runs
/// in real time) to observe the same loop on a real control plane. `application_set` names the
/// analysis Jobs; `scenario` scripts what happens around the controller; `namespace` is the
/// ApplicationSet's, and `neighbours`, when several ApplicationSets are simulated together, the
/// board of their rollouts (its steps may wait for theirs).
pub async fn drive<C: ClusterApi>(
    apps: &[SimApp],
    strategy: &RolloutStrategy,
    clusters: &BTreeMap<String, C>,
    clock: VirtualClock,
    (application_set, scenario): (&str, &Scenario),
    (namespace, board): (&str, Option<&Neighbours>),
    progress: &(dyn Fn(&Progress) + Sync),
) -> Driven {
    let mut changes = board.map(Neighbours::subscribe);
    let me = format!("{namespace}/{application_set}");
    let mut runs: Vec<AppRun> = apps
        .iter()
        .map(|app| AppRun {
            name: app.name.clone(),
            destination: app.destination.clone(),
            triggered_at: None,
            operation: None,
            healthy_at: None,
            observed: ApplicationState {
                name: app.name.clone(),
                labels: app.labels.clone(),
                exists: true,
                spec_changed: false,
                target_revisions: app.revision.iter().cloned().collect(),
                status: ObservedStatus::default(),
                sync_blocked_by: None,
                previous_revisions: vec![PREVIOUS.to_owned()],
                destination: destination_of(app),
            },
            rollback: None,
        })
        .collect();
    let index: BTreeMap<&str, usize> = apps
        .iter()
        .enumerate()
        .map(|(i, app)| (app.name.as_str(), i))
        .collect();
    let rolling = strategy.type_ == StrategyType::RollingSync;
    let mut decision: Option<RolloutDecision> = None;
    // Shared with the syncs in flight, whose events report it (a Mutex: they must be Sync).
    let standing = Shared(Mutex::new(Standing {
        total: apps.len(),
        ..Standing::default()
    }));
    let mut in_flight: FuturesUnordered<LocalBoxFuture<'_, (usize, Ended)>> =
        FuturesUnordered::new();
    let mut last_activity = Duration::ZERO;
    let mut step_waits: Vec<StepWait> = Vec::new();
    // The steps whose `--approve` the controller consumed (it removes the annotation).
    let mut approved: Vec<usize> = Vec::new();
    // The last pass left a step waiting for another ApplicationSet.
    let mut waits_for_other = false;
    loop {
        let wake_at;
        let triggered: Vec<usize> = if rolling {
            for (run, app) in runs.iter_mut().zip(apps) {
                run.observed.sync_blocked_by =
                    AppWindows::of(&app.sync_windows).block(SyncKind::Automated, clock.now());
            }
            for run in &mut runs {
                degrade(run, scenario, clock.elapsed());
            }
            let prior = decision.take().unwrap_or_default();
            let mut input = RolloutInput {
                now: clock.now(),
                strategy: strategy.clone(),
                applications: runs.iter().map(|run| run.observed.clone()).collect(),
                prior_application_status: prior.application_status,
                prior_step_status: prior.step_status,
                promote: scenario
                    .approval(clock.elapsed(), &approved)
                    .map(|a| a.step.to_string()),
                prior_rollback: prior.rollback,
                application_set: application_set.to_owned(),
                analysis: Vec::new(),
                namespace: namespace.to_owned(),
                external: Vec::new(),
            };
            if let (Some(board), Some(changes)) = (board, changes.as_mut()) {
                changes.borrow_and_update();
                input.external = board.read();
            }
            input.analysis = scenario.observe(&probes(&input), &input.prior_step_status, input.now);
            let next = flotilla_core::rollout::advance(&input);
            if let Some(board) = board {
                board.publish(namespace, application_set, published(&input, &next));
            }
            waits_for_other = next
                .step_reports
                .iter()
                .any(|r| r.state == StepState::WaitingForApplicationSet);
            approved.extend(next.approved);
            let rollback_running = next
                .rollback
                .as_ref()
                .is_some_and(|r| r.completed_at.is_none());
            let held = next
                .step_reports
                .iter()
                .find_map(|report| match report.state {
                    StepState::WindowClosed => Some((report, WaitKind::Window)),
                    StepState::Baking => Some((report, WaitKind::Bake)),
                    StepState::WaitingForApproval => Some((report, WaitKind::Approval)),
                    StepState::Analysing => Some((report, WaitKind::Analysis)),
                    StepState::WaitingForApplicationSet => Some((report, WaitKind::ApplicationSet)),
                    StepState::RolledBack
                        if rollback_running
                            && next.rollback.as_ref().is_some_and(|r| {
                                usize::try_from(r.failed_step).is_ok_and(|s| s == report.step)
                            }) =>
                    {
                        Some((report, WaitKind::Rollback))
                    }
                    _ => None,
                });
            note_wait(
                &mut step_waits,
                held.map(|(report, kind)| (report.step, kind, report.next.as_str())),
                clock.elapsed(),
            );
            standing.set(Standing {
                step: Standing::step_of(&next),
                ..standing.get()
            });
            let scripted = match held {
                Some((report, WaitKind::Approval)) => scenario
                    .next_approval(report.step, clock.elapsed())
                    .map(|at| clock.at(at)),
                Some((report, WaitKind::Analysis)) => next
                    .step_status
                    .iter()
                    .find(|r| usize::try_from(r.step).is_ok_and(|s| s == report.step))
                    .and_then(|r| r.analysis.as_ref())
                    .map(|a| scenario.verdict_at(report.step, a.started_at.0)),
                _ => None,
            };
            wake_at = match held {
                Some((_, WaitKind::Bake)) => next.wake_at,
                Some((_, WaitKind::Window)) => input.next_window_opening(),
                Some((_, WaitKind::Analysis)) => {
                    [next.wake_at, scripted].into_iter().flatten().min()
                }
                Some((_, WaitKind::Approval)) => scripted,
                Some((_, WaitKind::Rollback | WaitKind::ApplicationSet)) | None => None,
            }
            .into_iter()
            .chain(
                scenario
                    .next_degrade(clock.elapsed())
                    .map(|at| clock.at(at)),
            )
            .min();
            for request in &next.rollback_syncs {
                let Some(&i) = index.get(request.application.as_str()) else {
                    continue;
                };
                if runs[i].rollback.is_some() {
                    continue;
                }
                runs[i].rollback = Some((clock.elapsed(), None));
                runs[i].observed.status.operation_state = Some(RolloutOperation {
                    phase: OperationPhase::Running,
                    started_at: clock.now(),
                    message: String::new(),
                    revisions: request.revisions.clone(),
                });
                progress(&Progress {
                    at: clock.elapsed(),
                    app: &apps[i].name,
                    text: format!("rollback to {} triggered", request.revisions.join(",")),
                    standing: standing.get(),
                });
                if let Some(cluster) = clusters.get(&apps[i].destination) {
                    in_flight.push(Box::pin(
                        sync_one(i, &apps[i], cluster, clock, |_, _, _| {})
                            .map(|(i, operation)| (i, Ended::RolledBack(operation))),
                    ));
                }
            }
            let triggered = next
                .sync_triggered
                .iter()
                .filter_map(|name| index.get(name.as_str()).copied())
                .collect();
            decision = Some(next);
            triggered
        } else {
            let pending = runs
                .iter()
                .zip(apps)
                .enumerate()
                .filter(|(_, (run, _))| run.triggered_at.is_none())
                .map(|(i, (_, app))| {
                    let windows = AppWindows::of(&app.sync_windows);
                    (
                        i,
                        app.name.as_str(),
                        windows.block(SyncKind::Automated, clock.now()),
                    )
                });
            let pass = all_at_once_pass(pending);
            // AllAtOnce is one step.
            note_wait(
                &mut step_waits,
                pass.waiting
                    .as_deref()
                    .map(|reason| (1, WaitKind::Window, reason)),
                clock.elapsed(),
            );
            wake_at = pass.next_opening;
            pass.triggered
        };
        for i in triggered {
            let run = &mut runs[i];
            run.triggered_at = Some(clock.elapsed());
            run.observed.status.operation_state = Some(RolloutOperation {
                phase: OperationPhase::Running,
                started_at: clock.now(),
                message: String::new(),
                revisions: run.observed.target_revisions.clone(),
            });
            progress(&Progress {
                at: clock.elapsed(),
                app: &apps[i].name,
                text: "sync triggered".to_owned(),
                standing: standing.get(),
            });
            let Some(cluster) = clusters.get(&apps[i].destination) else {
                continue;
            };
            let report = |at, app: &str, text| {
                progress(&Progress {
                    at,
                    app,
                    text,
                    standing: standing.get(),
                });
            };
            in_flight.push(Box::pin(
                sync_one(i, &apps[i], cluster, clock, report)
                    .map(|(i, operation)| (i, Ended::Synced(operation))),
            ));
        }
        let wake = wake_at.map(|opens| {
            let wait = Duration::try_from(opens.duration_since(clock.now())).unwrap_or_default();
            wait.max(Duration::from_secs(1))
        });
        if let (true, true, None, Some(board), Some(changes)) = (
            waits_for_other,
            in_flight.is_empty(),
            wake,
            board,
            changes.as_mut(),
        ) {
            // Nothing left but to wait for another ApplicationSet: until one changes, or until
            // every rollout only waits.
            if board.idle(&me) {
                break;
            }
            let _ = changes.changed().await;
            if board.stalled() {
                break;
            }
            board.busy(&me);
            continue;
        }
        let ended = match wake {
            None => in_flight.next().await,
            Some(wait) if in_flight.is_empty() => {
                if waited_too_long(&step_waits, clock.elapsed()) {
                    break;
                }
                clock.sleep(wait).await;
                last_activity = clock.elapsed();
                continue;
            }
            Some(wait) => tokio::select! {
                ended = in_flight.next() => ended,
                () = clock.sleep(wait) => {
                    last_activity = clock.elapsed();
                    continue;
                }
            },
        };
        let Some(ended) = ended else {
            break;
        };
        let mut ended = vec![ended];
        while let Some(Some(also)) = in_flight.next().now_or_never() {
            ended.push(also);
        }
        for (i, ended) in ended {
            let cluster = &clusters[&apps[i].destination];
            let checks = &apps[i].settings.health;
            let operation = match ended {
                Ended::Synced(operation) => operation,
                Ended::RolledBack(operation) => {
                    last_activity = clock.elapsed();
                    let revisions = runs[i]
                        .observed
                        .status
                        .operation_state
                        .as_ref()
                        .map(|op| op.revisions.clone())
                        .unwrap_or_default();
                    let mut status = observe(cluster, &operation, checks).await;
                    if let Some(op) = status.operation_state.as_mut() {
                        op.revisions = revisions;
                    }
                    runs[i].observed.status = status;
                    runs[i].rollback = runs[i]
                        .rollback
                        .map(|(start, _)| (start, Some(clock.elapsed())));
                    progress(&Progress {
                        at: clock.elapsed(),
                        app: &apps[i].name,
                        text: format!("rollback {:?}", operation.phase),
                        standing: standing.get(),
                    });
                    continue;
                }
                Ended::Observed(status) => {
                    last_activity = clock.elapsed();
                    runs[i].healthy_at =
                        (status.health == HealthStatus::Healthy).then(|| clock.elapsed());
                    if let Some(operation) = runs[i].operation.clone()
                        && unsettled(&status)
                    {
                        in_flight.push(Box::pin(settle(
                            i, cluster, operation, checks, &status, clock,
                        )));
                    }
                    runs[i].observed.status = status;
                    continue;
                }
                Ended::Unchanged => continue,
            };
            last_activity = clock.elapsed();
            runs[i].observed.status = observe(cluster, &operation, checks).await;
            runs[i].healthy_at =
                (runs[i].observed.status.health == HealthStatus::Healthy).then(|| clock.elapsed());
            let phase = operation.phase;
            if unsettled(&runs[i].observed.status) {
                let status = &runs[i].observed.status;
                in_flight.push(Box::pin(settle(
                    i,
                    cluster,
                    operation.clone(),
                    checks,
                    status,
                    clock,
                )));
            }
            runs[i].operation = Some(operation);
            let synced = runs
                .iter()
                .filter(|run| {
                    run.operation
                        .as_ref()
                        .is_some_and(|op| op.phase == OperationPhase::Succeeded)
                })
                .count();
            standing.set(Standing {
                synced,
                ..standing.get()
            });
            progress(&Progress {
                at: clock.elapsed(),
                app: &apps[i].name,
                text: format!("sync {phase:?}"),
                standing: standing.get(),
            });
        }
    }
    note_wait(&mut step_waits, None, clock.elapsed());
    if let Some(board) = board {
        board.finished(&me);
    }
    Driven {
        runs,
        step_waits,
        decision,
        ended_at: last_activity,
    }
}

/// What the other ApplicationSets of the simulation read of this one after a pass: its
/// strategy, the decided status and its Applications' labels.
fn published(input: &RolloutInput, decision: &RolloutDecision) -> ExternalRollout {
    ExternalRollout {
        strategy: Some(input.strategy.clone()),
        reported: true,
        application_status: decision.application_status.clone(),
        summary: Vec::new(),
        step_status: decision.step_status.clone(),
        rollback: decision.rollback.clone(),
        labels: input
            .applications
            .iter()
            .map(|app| (app.name.clone(), app.labels.clone()))
            .collect(),
    }
}

/// What ended among the loop's futures.
enum Ended {
    /// A sync, as the executor left it.
    Synced(OperationState),
    /// A rollback sync (`onFailure: rollback`), as the executor left it.
    RolledBack(OperationState),
    /// The health of a synced Application changed (see [`settle`]).
    Observed(ObservedStatus),
    /// It did not change within [`SETTLE_LIMIT`].
    Unchanged,
}

/// How long after its sync (or its last change) an Application whose health has not settled is
/// still watched for a change.
const SETTLE_LIMIT: Duration = Duration::from_secs(600);

/// How often such an Application's objects are read again (the controller compares on every
/// change of them; the simulated cluster skips reads that could not differ).
const SETTLE_POLL: Duration = Duration::from_secs(1);

/// Whether an Application's health after its sync may still change by itself: its final wave
/// ends the operation without waiting for health (as Argo CD's), so objects still Progressing
/// or Missing are watched, as the controller's watch-driven compare does.
fn unsettled(status: &ObservedStatus) -> bool {
    status.sync == SyncStatusCode::Synced
        && matches!(
            status.health,
            HealthStatus::Progressing | HealthStatus::Missing
        )
}

/// Observes Application `index` (synced by `operation`) again whenever its objects may have
/// changed, until its health or message differs from `was` or [`SETTLE_LIMIT`] passed.
fn settle<'a, C: ClusterApi>(
    index: usize,
    cluster: &'a C,
    operation: OperationState,
    checks: &'a HealthChecks,
    was: &ObservedStatus,
    clock: VirtualClock,
) -> impl Future<Output = (usize, Ended)> + 'a {
    let (health, message) = (was.health, was.health_message.clone());
    async move {
        let keys: Vec<ObjectKey> = operation
            .resources
            .iter()
            .filter(|r| r.hook_type.is_none() && r.status != ResultStatus::Pruned)
            .map(ResourceResult::key)
            .collect();
        let start = clock.elapsed();
        loop {
            let waited = clock.elapsed().saturating_sub(start);
            if waited >= SETTLE_LIMIT {
                return (index, Ended::Unchanged);
            }
            cluster
                .wait_for_change(&keys, cluster.now(), SETTLE_POLL, SETTLE_LIMIT - waited)
                .await;
            let now = observe(cluster, &operation, checks).await;
            if now.health != health || now.health_message != message {
                return (index, Ended::Observed(now));
            }
        }
    }
}

/// Observes `run` Degraded if the scenario degrades it by `elapsed`, once it synced and unless
/// it was rolled back since.
fn degrade(run: &mut AppRun, scenario: &Scenario, elapsed: Duration) {
    let Some(since) = scenario.degraded(&run.name, elapsed) else {
        return;
    };
    if run.operation.is_none() || run.rollback.is_some() {
        return;
    }
    let status = &mut run.observed.status;
    status.health = HealthStatus::Degraded;
    status.health_message = format!("degraded at {} (--degrade)", format_duration(since));
    run.healthy_at = None;
}

/// Whether the wait in progress began more than the windows' search horizon ago: the windows
/// never let the step proceed (say, two Applications whose allow windows never overlap).
fn waited_too_long(waits: &[StepWait], now: Duration) -> bool {
    let horizon = Duration::from_secs(u64::try_from(SEARCH_HORIZON_DAYS).unwrap_or(28) * 86_400);
    waits
        .last()
        .is_some_and(|wait| wait.end == Duration::MAX && now.saturating_sub(wait.start) > horizon)
}

/// Records the start of a step's wait for a window or its bake (`held`: the held step, what
/// for and why), or the end of the wait in progress when no step is held now.
fn note_wait(waits: &mut Vec<StepWait>, held: Option<(usize, WaitKind, &str)>, now: Duration) {
    let open = waits.last_mut().filter(|wait| wait.end == Duration::MAX);
    match (open, held) {
        (Some(wait), Some((step, kind, _))) if wait.step == step && wait.kind == kind => {}
        (open, held) => {
            if let Some(wait) = open {
                wait.end = now;
            }
            if let Some((step, kind, reason)) = held {
                waits.push(StepWait {
                    step,
                    kind,
                    reason: reason.to_owned(),
                    start: now,
                    end: Duration::MAX,
                });
            }
        }
    }
}

/// One Application's sync with the real executor, started fresh (see [`NeverResumedStore`]).
async fn sync_one<C: ClusterApi>(
    index: usize,
    app: &SimApp,
    cluster: &C,
    clock: VirtualClock,
    progress: impl Fn(Duration, &str, String) + Sync,
) -> (usize, OperationState) {
    let store = NeverResumedStore;
    let (_terminate, cancel) = watch::channel(false);
    // Nobody confirms a `Prune=confirm` prune in a simulation: the sync waits for it as the
    // controller's does when nobody runs `flotilla app confirm-prune`, until its timeout.
    let (_approve, approved) = watch::channel(None);
    let request = SyncParams {
        app: &app.name,
        revision: app.revision.as_deref(),
        dry_run: false,
        prune_confirmation: PruneConfirmation::Watched(&approved),
    };
    let events = |event: &SyncEvent| {
        let text = match event {
            SyncEvent::Step(step) => step.clone(),
            SyncEvent::Retrying { attempt, after, .. } => {
                format!("retry {attempt} in {}", format_duration(*after))
            }
            // Reported by the loop, once it has counted the Application's end.
            SyncEvent::Finished(_) | SyncEvent::Waiting(_) | SyncEvent::Resumed { .. } => return,
        };
        progress(clock.elapsed(), &app.name, text);
    };
    let plan = |operation_id: &str| app.plan.for_operation(operation_id);
    let result = run_sync(
        cluster,
        &store,
        &plan,
        &request,
        &app.settings,
        cancel,
        &events,
    )
    .await;
    let state = result.unwrap_or_else(|error| OperationState {
        revisions: Vec::new(),
        phase: OperationPhase::Failed,
        message: error.to_string(),
        revision: app.revision.clone(),
        operation_id: app.name.clone(),
        failure: None,
        started_at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            clock.now(),
        )),
        finished_at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            clock.now(),
        )),
        resources: Vec::new(),
    });
    (index, state)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    use super::*;
    use crate::simulate::app::AppPlan;
    use crate::simulate::cluster::{ClusterBehavior, SimCluster};
    use crate::sync::execute::ExecuteSettings;
    use flotilla_core::manifest::{ObjectKey, ScopeTable, assign_namespaces, parse_documents};
    use flotilla_core::sync::{
        FieldValidation, SYNC_OPTIONS_ANNOTATION, SyncPlan, TRACKING_ANNOTATION, tracking_id,
    };

    #[tokio::test(start_paused = true)]
    async fn a_prune_confirm_object_waits_as_in_the_controller_until_the_timeout() {
        let clock = VirtualClock::start(Timestamp::from_second(0).unwrap());
        let behavior = ClusterBehavior {
            namespaces: vec!["shop".to_owned()],
            ..ClusterBehavior::default()
        };
        let cluster = SimCluster::new(clock, Arc::new(behavior));
        let critical = ObjectKey {
            group: String::new(),
            kind: "ConfigMap".to_owned(),
            namespace: Some("shop".to_owned()),
            name: "critical".to_owned(),
        };
        let previous = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "critical", "namespace": "shop", "annotations": {
                TRACKING_ANNOTATION: tracking_id("web", &critical),
                SYNC_OPTIONS_ANNOTATION: "Prune=confirm"}}});
        cluster
            .apply(&previous, false, FieldValidation::Strict)
            .await
            .unwrap();
        let plan = |operation_id: &str| {
            let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n";
            let (mut resources, _) = parse_documents(Path::new("kept.yaml"), yaml);
            assign_namespaces(&mut resources, &ScopeTable::default(), Some("shop"));
            SyncPlan::build(resources, operation_id)
        };
        let app = SimApp {
            name: "web".to_owned(),
            labels: BTreeMap::new(),
            destination: "in-cluster".to_owned(),
            revision: None,
            settings: ExecuteSettings {
                prune: true,
                timeout: Some(Duration::from_secs(60)),
                ..ExecuteSettings::default()
            },
            plan: AppPlan::new(Box::new(plan), true),
            sync_windows: Vec::new(),
        };
        let (_, state) = sync_one(0, &app, &cluster, clock, |_, _, _| {}).await;
        assert_eq!(
            (state.phase, state.message.as_str()),
            (
                OperationPhase::Failed,
                "timed out after 1m0s before: prune wave 0: waiting for pruning confirmation of ConfigMap shop/critical (Prune=confirm)"
            )
        );
        assert!(
            cluster.get(&critical).await.unwrap().is_some(),
            "not pruned"
        );
    }
}
