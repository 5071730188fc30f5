//! `flotilla simulate`: the real pipeline — RollingSync passes, the wave/hook executor, the
//! health rules — run against embedded clusters on a virtual clock, with a report of what
//! happened when. Only the cluster ([`cluster::SimCluster`]), the clock and the operation store
//! are simulated; every decision comes from the same code the controller and `flotilla sync`
//! use.

pub mod all_at_once;
pub mod app;
pub mod clock;
pub mod cluster;
pub mod driver;
pub mod durations;
pub mod faults;
pub mod neighbours;
pub mod observe;
pub mod progress;
pub mod report;
pub mod scenario;
pub mod status_line;
pub mod store;
pub mod timeline;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;

use flotilla_core::api::application_set::RolloutStrategy;
use flotilla_core::manifest::ValidationErrors;

pub use app::{AppPlan, PlanBuilder, SimApp};
pub use cluster::{ClusterBehavior, SimCluster};
pub use driver::{Progress, Standing};
pub use report::Report;
pub use scenario::Scenario;

use clock::VirtualClock;

/// Everything one simulation needs.
pub struct Simulation {
    /// The generated Applications.
    pub apps: Vec<SimApp>,
    /// The ApplicationSet's strategy (`AllAtOnce` when it has none).
    pub strategy: RolloutStrategy,
    /// Durations and injected failures.
    pub behavior: ClusterBehavior,
    /// Virtual seconds per real second; `None` runs as fast as possible (`--instant`).
    pub speed: Option<f64>,
    /// The virtual clock's start (sync windows are evaluated on it).
    pub start: Timestamp,
    /// The ApplicationSet's name (it names analysis Jobs).
    pub application_set: String,
    /// The ApplicationSet's namespace (where its steps' `dependsOn` look for other
    /// ApplicationSets), if the file gives one.
    pub namespace: String,
    /// Analysis outcomes, approvals and degraded Applications (`--analysis`, `--approve`,
    /// `--degrade`).
    pub scenario: Scenario,
}

/// Why a simulation could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// An Application's manifests do not build a sync plan.
    #[error("Application {app}: {errors}")]
    Plan {
        /// The Application.
        app: String,
        /// Its validation errors.
        errors: ValidationErrors,
    },
    /// A `--fail` selector names no generated Application.
    #[error("--fail {selector}: no Application {app:?}; the ApplicationSet generates: {known}")]
    UnknownApp {
        /// The selector.
        selector: String,
        /// The Application it names.
        app: String,
        /// The generated names.
        known: String,
    },
    /// A `--fail` selector names nothing in its Application that can fail.
    #[error("--fail {selector}: {reason}")]
    NothingToFail {
        /// The selector.
        selector: String,
        /// What is wrong.
        reason: String,
    },
    /// A `--degrade` names no generated Application.
    #[error("--degrade {flag}: no Application {app:?}; the ApplicationSet generates: {known}")]
    UnknownDegraded {
        /// The flag.
        flag: String,
        /// The Application it names.
        app: String,
        /// The generated names.
        known: String,
    },
    /// An `--analysis` or `--approve` names a step that has no `analysis` or no
    /// `approval: manual`.
    #[error("{flag}: step {step} {problem}")]
    UnscriptableStep {
        /// The flag as given.
        flag: &'static str,
        /// The step, 1-based.
        step: usize,
        /// What the step lacks.
        problem: &'static str,
    },
    /// The runtime could not be built.
    #[error("cannot start the simulation runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// Checks every plan builds and every `--fail` selector names something that can fail; the
/// plans built are kept for the syncs ([`AppPlan::keep`]).
///
/// # Errors
/// The first Application whose plan does not build, or the first selector that names nothing.
pub fn validate(simulation: &Simulation) -> Result<(), SimulateError> {
    let mut plans = Vec::with_capacity(simulation.apps.len());
    let mut by_name = BTreeMap::new();
    for (i, app) in simulation.apps.iter().enumerate() {
        let plan = app
            .plan
            .for_operation("validate")
            .map_err(|errors| SimulateError::Plan {
                app: app.name.clone(),
                errors,
            })?;
        plans.push(plan);
        by_name.insert(app.name.as_str(), i);
    }
    for selector in &simulation.behavior.faults.0 {
        let Some(plan) = by_name.get(selector.app.as_str()).map(|&i| &plans[i]) else {
            let known: Vec<&str> = by_name.keys().copied().collect();
            return Err(SimulateError::UnknownApp {
                selector: selector.to_string(),
                app: selector.app.clone(),
                known: known.join(", "),
            });
        };
        let fails = |task: &&flotilla_core::sync::SyncTask| {
            progress::can_fail(&task.key.group, &task.key.kind)
                && selector
                    .object
                    .as_ref()
                    .is_none_or(|(kind, name)| task.key.kind == *kind && task.key.name == *name)
        };
        if !plan.tasks.iter().any(|task| fails(&task)) {
            let objects: Vec<String> = plan
                .tasks
                .iter()
                .filter(|t| progress::can_fail(&t.key.group, &t.key.kind))
                .map(|t| format!("{}/{}", t.key.kind, t.key.name))
                .collect();
            return Err(SimulateError::NothingToFail {
                selector: selector.to_string(),
                reason: format!(
                    "no workload, Job or Pod of that name in {} (it has: {})",
                    selector.app,
                    if objects.is_empty() {
                        "none".to_owned()
                    } else {
                        objects.join(", ")
                    }
                ),
            });
        }
    }
    validate_scenario(simulation, &by_name)?;
    for (app, plan) in simulation.apps.iter().zip(plans) {
        app.plan.keep(plan);
    }
    Ok(())
}

/// Checks every `--degrade` names a generated Application, every `--analysis` a step with an
/// `analysis` and every `--approve` a step with `approval: manual`.
fn validate_scenario(
    simulation: &Simulation,
    by_name: &BTreeMap<&str, usize>,
) -> Result<(), SimulateError> {
    let scenario = &simulation.scenario;
    if let Some(flag) = scenario
        .degrades
        .iter()
        .find(|d| !by_name.contains_key(d.app.as_str()))
    {
        return Err(SimulateError::UnknownDegraded {
            flag: flag.to_string(),
            app: flag.app.clone(),
            known: by_name.keys().copied().collect::<Vec<_>>().join(", "),
        });
    }
    let steps = simulation
        .strategy
        .rolling_sync
        .as_ref()
        .map_or(&[][..], |rolling| &rolling.steps);
    let step = |n: usize| steps.get(n.wrapping_sub(1));
    for flag in &scenario.analysis {
        if step(flag.step).is_none_or(|s| s.analysis.is_none()) {
            return Err(SimulateError::UnscriptableStep {
                flag: "--analysis",
                step: flag.step,
                problem: "has no analysis",
            });
        }
    }
    for flag in &scenario.approvals {
        if step(flag.step).is_none_or(|s| s.approval.is_none()) {
            return Err(SimulateError::UnscriptableStep {
                flag: "--approve",
                step: flag.step,
                problem: "has no approval: manual",
            });
        }
    }
    Ok(())
}

/// Validates, then runs the whole rollout on a paused current-thread runtime and reports it.
///
/// # Errors
/// See [`validate`]; or the runtime cannot be built.
pub fn simulate(
    simulation: &Simulation,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Report, SimulateError> {
    validate(simulation)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    Ok(runtime.block_on(run(simulation, progress)))
}

/// Validates each, then runs their rollouts together on one virtual clock — a step may wait for
/// a step of another of them — and reports each, in order.
///
/// # Errors
/// See [`validate`]; or the runtime cannot be built.
pub fn simulate_together(
    simulations: &[Simulation],
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Vec<Report>, SimulateError> {
    for simulation in simulations {
        validate(simulation)?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    let start = simulations.first().map_or_else(Timestamp::now, |s| s.start);
    let speed = simulations.first().and_then(|s| s.speed);
    let board = neighbours::Neighbours::new(simulations.len());
    Ok(runtime.block_on(async {
        let clock = VirtualClock::start(start);
        let together = futures::future::join_all(
            simulations
                .iter()
                .map(|s| run_on(s, clock, Some(&board), progress)),
        );
        match speed {
            Some(speed) => {
                tokio::select! {
                    reports = together => reports,
                    never = clock::pace(speed) => match never {},
                }
            }
            None => together.await,
        }
    }))
}

async fn run(simulation: &Simulation, progress: &(dyn Fn(&Progress) + Sync)) -> Report {
    let clock = VirtualClock::start(simulation.start);
    let driven = async { run_on(simulation, clock, None, progress).await };
    match simulation.speed {
        Some(speed) => {
            tokio::select! {
                report = driven => report,
                never = clock::pace(speed) => match never {},
            }
        }
        None => driven.await,
    }
}

/// The rollout of `simulation` on `clock`, with its `neighbours` when several are simulated
/// together, reported.
async fn run_on(
    simulation: &Simulation,
    clock: VirtualClock,
    neighbours: Option<&neighbours::Neighbours>,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Report {
    let behavior = Arc::new(simulation.behavior.clone());
    let clusters: BTreeMap<String, SimCluster> = simulation
        .apps
        .iter()
        .map(|app| {
            (
                app.destination.clone(),
                SimCluster::new(clock, Arc::clone(&behavior)),
            )
        })
        .collect();
    let strategy = &simulation.strategy;
    let driven = driver::drive(
        &simulation.apps,
        strategy,
        &clusters,
        clock,
        (&simulation.application_set, &simulation.scenario),
        (&simulation.namespace, neighbours),
        progress,
    )
    .await;
    report::build(&driven, &clock, &format!("{:?}", strategy.type_))
}
