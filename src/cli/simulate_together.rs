//! `flotilla simulate A --with B` (or a file of several ApplicationSets): their rollouts run
//! together on one virtual clock, a step waiting for a step of another as the controller would
//! ([`crate::simulate::simulate_together`]); the report is each ApplicationSet's, then every
//! step of every one in the order they ran. Exit code 0 only when every rollout completes.

use std::process::ExitCode;
use std::sync::Arc;

use serde::Serialize;

use super::output::{Printable, object_name};
use super::simulate::{LoadedSources, SimulateArgs, simulation_of, table};
use crate::simulate::report::{Ending, Report, format_seconds};
use crate::simulate::simulate_together;
use crate::source::Toolchain;
use flotilla_core::table::Table;

/// The reports of ApplicationSets simulated together.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Together {
    /// Each ApplicationSet's report, in the order given.
    pub application_sets: Vec<Named>,
    /// Every step that ran, of every ApplicationSet, by start.
    pub order: Vec<Ran>,
}

/// One ApplicationSet's report.
#[derive(Debug, Serialize)]
pub struct Named {
    pub name: String,
    pub report: Report,
}

/// One step of one ApplicationSet, when it ran.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ran {
    pub application_set: String,
    /// `Step 1 (database)`.
    pub step: String,
    pub start: f64,
    pub end: Option<f64>,
}

impl Together {
    /// `reports` by ApplicationSet name, with the steps in the order they started.
    #[must_use]
    pub fn new(reports: Vec<(String, Report)>) -> Self {
        let mut order: Vec<Ran> = reports
            .iter()
            .flat_map(|(name, report)| {
                report.steps.iter().filter_map(|step| {
                    Some(Ran {
                        application_set: name.clone(),
                        step: step.title(),
                        start: step.start?,
                        end: step.end,
                    })
                })
            })
            .collect();
        order.sort_by(|a, b| {
            a.start
                .total_cmp(&b.start)
                .then_with(|| a.application_set.cmp(&b.application_set))
                .then_with(|| a.step.cmp(&b.step))
        });
        Self {
            application_sets: reports
                .into_iter()
                .map(|(name, report)| Named { name, report })
                .collect(),
            order,
        }
    }

    /// Whether every rollout completed.
    #[must_use]
    pub fn complete(&self) -> bool {
        self.application_sets
            .iter()
            .all(|named| named.report.ending == Ending::Complete)
    }
}

impl Printable for Together {
    fn data(&self) -> impl Serialize + '_ {
        self
    }

    fn names(&self) -> Vec<String> {
        self.application_sets
            .iter()
            .flat_map(|named| &named.report.applications)
            .map(|app| object_name(flotilla_core::api::GROUP, "Application", &app.name))
            .collect()
    }

    fn table(&self, _wide: bool) -> String {
        let mut text = String::new();
        for named in &self.application_sets {
            text.push_str(&format!("ApplicationSet {}\n", named.name));
            text.push_str(&table(&named.report));
            text.push('\n');
        }
        text.push_str("Order across ApplicationSets:\n");
        let mut rows = Table::new(&["START", "END", "APPLICATIONSET", "STEP"]);
        for ran in &self.order {
            rows.row(vec![
                format_seconds(ran.start),
                ran.end.map_or_else(|| "-".to_owned(), format_seconds),
                ran.application_set.clone(),
                ran.step.clone(),
            ]);
        }
        text.push_str(&rows.render());
        text
    }
}

/// Simulates every ApplicationSet `args` names together and prints their report.
///
/// # Errors
/// One does not render or cannot be simulated, or a flag that scripts one ApplicationSet's
/// rollout (`--fail`, `--analysis`, `--approve`, `--degrade`, `--timeline`) is given.
pub fn run(args: &SimulateArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<ExitCode> {
    let scripting = [
        ("--fail", !args.fail.is_empty()),
        ("--analysis", !args.analysis.is_empty()),
        ("--approve", !args.approve.is_empty()),
        ("--degrade", !args.degrade.is_empty()),
        ("--timeline", args.timeline.is_some()),
    ];
    let given: Vec<&str> = scripting
        .iter()
        .filter(|(_, given)| *given)
        .map(|(flag, _)| *flag)
        .collect();
    if let Some((last, first)) = given.split_last() {
        let named = if first.is_empty() {
            format!("{last} is")
        } else {
            format!("{} and {last} are", first.join(", "))
        };
        anyhow::bail!(
            "{named} not applied when several ApplicationSets are simulated together: they script one ApplicationSet's rollout; simulate that one alone with them"
        );
    }
    let rendered = args.input.render_each(&args.with, toolchain)?;
    let mut sources = LoadedSources::default();
    let simulations = rendered
        .iter()
        .map(|rendered| simulation_of(args, rendered, &mut sources))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let reports = simulate_together(&simulations, &|_| {})?;
    let together = Together::new(
        simulations
            .into_iter()
            .map(|simulation| simulation.application_set)
            .zip(reports)
            .collect(),
    );
    print!("{}", args.output.print(&together)?);
    Ok(if together.complete() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
