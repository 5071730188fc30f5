//! `flotilla simulate APPSET`: renders an ApplicationSet, then runs its whole rollout —
//! RollingSync steps, each Application's waves and hooks, health gates — on embedded clusters
//! with a virtual clock. On a terminal, stderr shows one status line redrawn in place (virtual
//! time, step k/N, Applications synced); elsewhere one summary line at the end; the report goes to stdout
//! in the one output vocabulary (`-o table|wide|yaml|json|name`); `--timeline` writes a Gantt chart (SVG or HTML). Exit code 0 only when the
//! rollout completes.

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use k8s_openapi::jiff::Timestamp;

use crate::cli::output::{OutputFormat, Printable, object_name};
use crate::cli::render::{AppSetArgs, Rendered};
use crate::cli::sync::source::SyncSource;
use crate::repo::cache::RepoCache;
use crate::simulate::driver::WaitKind;
use crate::simulate::durations::{KindDuration, KindDurations};
use crate::simulate::faults::{FailSelector, Faults};
use crate::simulate::report::{Ending, Report, StepTimes, format_seconds};
use crate::simulate::scenario::{AnalysisFlag, ApproveFlag, DegradeFlag, Scenario};
use crate::simulate::status_line::{status_line, summary_line};
use crate::simulate::{AppPlan, ClusterBehavior, Progress, SimApp, Simulation, simulate, timeline};
use crate::source::{SourceOptions, Toolchain, generate};
use crate::sync::application_settings::{SyncOverrides, SyncSettings};
use crate::sync::execute::ExecuteSettings;
use flotilla_core::api::Application;
use flotilla_core::manifest::{Resource, ValidationError};
use flotilla_core::project::Projects;
use flotilla_core::project::windows::{AppTarget, Window};
use flotilla_core::rollout::decision::after_steps;
use flotilla_core::sync::SyncPlan;
use flotilla_core::table::Table;

/// Arguments of `flotilla simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub input: AppSetArgs,
    /// Make an Application (APP) or an object in one (APP/KIND/NAME) fail (repeatable).
    #[arg(long = "fail", value_name = "SELECTOR")]
    pub fail: Vec<FailSelector>,
    /// The outcome of a step's analysis: pass, fail, or pass after running that long
    /// (2=after:5m; repeatable; default pass).
    #[arg(long = "analysis", value_name = "STEP=pass|fail|after:DURATION")]
    pub analysis: Vec<AnalysisFlag>,
    /// Approve a step with approval: manual that long after the start (2@30m; repeatable).
    #[arg(long = "approve", value_name = "STEP@DURATION")]
    pub approve: Vec<ApproveFlag>,
    /// Make a synced Application Degraded that long after the start (backend-eu@12m;
    /// repeatable): its step fails, and onFailure applies.
    #[arg(long = "degrade", value_name = "APP@DURATION")]
    pub degrade: Vec<DegradeFlag>,
    /// Virtual seconds per real second (60: a minute per second).
    #[arg(long, default_value_t = 60.0, conflicts_with = "instant")]
    pub speed: f64,
    /// Do not wait: run the whole rollout as fast as possible.
    #[arg(long)]
    pub instant: bool,
    /// How long a kind takes to become ready, e.g. Job=45s (repeatable; objects may override
    /// with the sim.flotilla.dev/ready-after annotation).
    #[arg(long = "duration", value_name = "KIND=DURATION")]
    pub durations: Vec<KindDuration>,
    /// A namespace the destination clusters already have (repeatable). The embedded clusters
    /// start with only default, kube-system, kube-public and kube-node-lease, and reject objects
    /// in any other namespace until a sync creates it, as a new cluster does.
    #[arg(long = "existing-namespace", value_name = "NAMESPACE")]
    pub existing_namespaces: Vec<String>,
    #[command(flatten)]
    pub customizations: crate::cli::customizations_args::CustomizationsArgs,
    /// When the simulated rollout starts (RFC 3339, e.g. 2026-12-04T15:30:00Z; default: now):
    /// the projects' sync windows are evaluated on this virtual clock.
    #[arg(long, value_name = "TIME")]
    pub start: Option<Timestamp>,
    /// Output format of the report.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
    /// Write a Gantt chart of the rollout to FILE.svg or FILE.html.
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Another ApplicationSet file to simulate with it (repeatable; a file may also hold
    /// several): their steps may wait for each other's (dependsOn: [{applicationSet, step}]).
    #[arg(long = "with", value_name = "FILE")]
    pub with: Vec<PathBuf>,
}

/// Runs the simulation and prints its report.
///
/// # Errors
/// The ApplicationSet does not render, a source is unavailable or invalid, a `--fail` selector
/// names nothing, or the timeline cannot be written.
pub fn run(args: &SimulateArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<ExitCode> {
    if !args.with.is_empty() || args.input.holds_several()? {
        return super::simulate_together::run(args, toolchain);
    }
    let view = LiveView::new();
    let report = simulate_from_args(args, toolchain, &|progress| view.show(progress))?;
    view.finish(&report);
    if let Some(path) = &args.timeline {
        write_timeline(path, &report)?;
    }
    print!("{}", args.output.print(&report)?);
    Ok(if report.ending == Ending::Complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Renders the ApplicationSet `args` name and simulates its rollout.
///
/// # Errors
/// See [`run`].
pub fn simulate_from_args(
    args: &SimulateArgs,
    toolchain: &Arc<Toolchain>,
    progress: &(dyn Fn(&Progress) + Sync),
) -> anyhow::Result<Report> {
    let rendered = args.input.render(toolchain)?;
    let mut sources = LoadedSources::default();
    let simulation = simulation_of(args, &rendered, &mut sources)?;
    Ok(simulate(&simulation, progress)?)
}

/// The simulation of the rendered ApplicationSet `rendered` as `args` ask; a source already in
/// `sources` is not read again.
///
/// # Errors
/// A source is unavailable or invalid, or a project's sync windows cannot be read.
pub(crate) fn simulation_of(
    args: &SimulateArgs,
    rendered: &Rendered,
    sources: &mut LoadedSources,
) -> anyhow::Result<Simulation> {
    let process = args.customizations.read()?.over(ExecuteSettings::default());
    let apps = rendered
        .applications
        .iter()
        .map(|application| {
            let mut app = sim_app(
                application,
                (&rendered.repos, &rendered.projects),
                sources,
                &process,
            )?;
            app.sync_windows = applying_windows(&rendered.projects, application)?;
            Ok(app)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Simulation {
        apps,
        strategy: rendered.appset.spec.strategy.clone().unwrap_or_default(),
        behavior: ClusterBehavior {
            durations: KindDurations::with(&args.durations),
            faults: Faults(args.fail.clone()),
            namespaces: args.existing_namespaces.clone(),
        },
        speed: (!args.instant).then_some(args.speed),
        start: args.start.unwrap_or_else(Timestamp::now),
        application_set: rendered.appset.metadata.name.clone().unwrap_or_default(),
        namespace: rendered
            .appset
            .metadata
            .namespace
            .clone()
            .unwrap_or_default(),
        scenario: Scenario {
            analysis: args.analysis.clone(),
            approvals: args.approve.clone(),
            degrades: args.degrade.clone(),
        },
    })
}

/// Writes the chart as SVG, or as HTML when the file name ends in `.html`/`.htm`.
///
/// # Errors
/// The file cannot be written.
pub fn write_timeline(path: &std::path::Path, report: &Report) -> anyhow::Result<()> {
    let html = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    let text = if html {
        timeline::html(report)
    } else {
        timeline::svg(report)
    };
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Source directories already read, shared by the Applications that sync the same one (a
/// fleet's Applications usually differ only in their destination, and the Applications of one
/// commit read one checkout): one copy of their manifests in memory, by source directory (in a
/// commit's checkout: the revision and `path`) and options.
#[derive(Default)]
pub struct LoadedSources {
    loaded: HashMap<PathBuf, Vec<(SourceOptions, Arc<Loaded>)>>,
}

/// A source's resources and errors, as [`generate`] makes them.
type Loaded = (Vec<Resource>, Vec<ValidationError>);

impl LoadedSources {
    fn get(&mut self, toolchain: &Toolchain, root: &Path, options: &SourceOptions) -> Arc<Loaded> {
        let options = options.inputs(root);
        let same = self.loaded.entry(root.to_owned()).or_default();
        if let Some((_, loaded)) = same.iter().find(|(o, _)| *o == options) {
            return Arc::clone(loaded);
        }
        let loaded = Arc::new(generate(toolchain, root, &options));
        same.push((options, Arc::clone(&loaded)));
        loaded
    }
}

/// One generated Application as the simulation takes it: its source's manifests, namespace and
/// sync policy, as `flotilla sync` would read them; a source already in `sources` is not read
/// again.
///
/// # Errors
/// The source is unavailable or its sync policy invalid.
pub fn sim_app(
    application: &Application,
    (repos, projects): (&RepoCache, &Projects),
    sources: &mut LoadedSources,
    process: &ExecuteSettings,
) -> anyhow::Result<SimApp> {
    let name = application.metadata.name.clone().unwrap_or_default();
    let source = SyncSource::of_rendered(application, repos)?;
    let destination = &application.spec.destination;
    let SyncSettings {
        execute: settings,
        source: options,
        ..
    } = source.settings(&SyncOverrides::default(), process, projects)?;
    let namespace = settings.destination_namespace.clone();
    let revision = source.revision.clone();
    let loaded = sources.get(repos.toolchain(), &source.root, &options);
    let same_for_every_operation = !SyncPlan::depends_on_operation(&loaded.0);
    let plan = move |operation_id: &str| {
        SyncPlan::from_loaded((*loaded).clone(), namespace.as_deref(), operation_id)
    };
    Ok(SimApp {
        labels: application
            .metadata
            .labels
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect(),
        destination: destination
            .server
            .clone()
            .or_else(|| destination.name.clone())
            .unwrap_or_default(),
        name,
        revision,
        settings,
        plan: AppPlan::new(Box::new(plan), same_for_every_operation),
        sync_windows: Vec::new(),
    })
}

/// The sync windows of `application`'s project (from `--project`) that apply to it; none when
/// its project is not among them.
///
/// # Errors
/// A window of its project cannot be used.
pub fn applying_windows(
    projects: &Projects,
    application: &Application,
) -> anyhow::Result<Vec<Window>> {
    let Ok(project) = projects.get(&application.spec.project) else {
        return Ok(Vec::new());
    };
    let windows = projects
        .memos()
        .windows(&application.spec.project, &project.sync_windows)?;
    Ok(windows
        .applying_to(&AppTarget::of(application))
        .windows()
        .iter()
        .map(|window| (*window).clone())
        .collect())
}

/// What stderr shows while the simulation runs: on a terminal one status line redrawn in place
/// (at most every [`REDRAW`] of real time, and once more at the end); otherwise nothing until
/// the summary line.
struct LiveView {
    terminal: bool,
    width: usize,
    /// The latest line and when a line was last drawn.
    shown: std::sync::Mutex<(String, Option<std::time::Instant>)>,
}

/// How often the status line is redrawn at most.
const REDRAW: std::time::Duration = std::time::Duration::from_millis(100);

impl LiveView {
    fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            width: terminal_width().unwrap_or(100).saturating_sub(1).max(20),
            shown: std::sync::Mutex::new((String::new(), None)),
        }
    }

    fn show(&self, progress: &Progress) {
        if !self.terminal {
            return;
        }
        let mut shown = self
            .shown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        shown.0 = status_line(progress, self.width);
        if shown.1.is_none_or(|at| at.elapsed() >= REDRAW) {
            eprint!("\r\x1b[2K{}", shown.0);
            shown.1 = Some(std::time::Instant::now());
        }
    }

    /// The last status line, kept on screen; or the summary line when stderr is not a terminal.
    fn finish(&self, report: &Report) {
        if self.terminal {
            let shown = self
                .shown
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !shown.0.is_empty() {
                eprintln!("\r\x1b[2K{}", shown.0);
            }
        } else {
            eprintln!("{}", summary_line(report));
        }
    }
}

/// The columns of the terminal on stderr, if it is one that says.
fn terminal_width() -> Option<usize> {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes a `winsize` into the struct it is given, which lives across the
    // call; on a descriptor that is not a terminal it fails and writes nothing.
    #[allow(
        unsafe_code,
        reason = "the terminal's width is only known through ioctl"
    )]
    let done = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &raw mut size) };
    (done == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

impl Printable for Report {
    fn data(&self) -> impl serde::Serialize + '_ {
        self
    }

    fn names(&self) -> Vec<String> {
        self.applications
            .iter()
            .map(|app| object_name(flotilla_core::api::GROUP, "Application", &app.name))
            .collect()
    }

    fn table(&self, wide: bool) -> String {
        report_text(self, wide)
    }
}

/// The report as text: summary, one row per Application, steps, critical path, what blocked.
#[must_use]
pub fn table(report: &Report) -> String {
    report_text(report, false)
}

/// [`table`]; `wide` adds each Application's destination and its operation's message.
fn report_text(report: &Report, wide: bool) -> String {
    let mut text = format!(
        "Strategy:  {}\nResult:    {:?}\nTotal:     {} (virtual time)\n",
        report.strategy,
        report.ending,
        format_seconds(report.total_seconds)
    );
    if let Some(condition) = &report.condition {
        text.push_str(&format!("Condition: {condition}\n"));
    }
    text.push('\n');
    let when = |t: Option<f64>| t.map(format_seconds).unwrap_or_else(|| "-".to_owned());
    let mut headers = vec![
        "STEP",
        "APPLICATION",
        "START",
        "END",
        "HEALTHY",
        "RESULT",
        "PHASES",
    ];
    if wide {
        headers.extend(["DESTINATION", "MESSAGE"]);
    }
    let mut rows = Table::new(&headers);
    for app in &report.applications {
        let phases: Vec<String> = app
            .segments
            .iter()
            .map(|s| {
                let mark = if s.failed { " FAILED" } else { "" };
                format!("{} {}{mark}", s.label, format_seconds(s.end - s.start))
            })
            .collect();
        let mut row = vec![
            app.step.map_or("-".to_owned(), |s| s.to_string()),
            app.name.clone(),
            when(app.start),
            when(app.end),
            when(app.healthy),
            app.result.clone(),
            phases.join(", "),
        ];
        if wide {
            row.extend([app.destination.clone(), app.message.clone()]);
        }
        rows.row(row);
    }
    text.push_str(&rows.render());
    text.push_str("\nSteps:\n");
    for step in &report.steps {
        let title = match (&step.name, &step.after) {
            (None, None) => step.step.to_string(),
            _ => step.title(),
        };
        text.push_str(&format!(
            "  {}: {} to {} ({} Application(s)) {}\n",
            title,
            when(step.start),
            when(step.end),
            step.applications.len(),
            step.state
        ));
    }
    if !report.critical_path.is_empty() {
        let links: Vec<String> = report
            .critical_path
            .iter()
            .map(|l| {
                format!(
                    "{} (step {}, {} to {}, longest {})",
                    l.application,
                    l.step,
                    format_seconds(l.start),
                    format_seconds(l.end),
                    l.longest
                )
            })
            .collect();
        text.push_str(&format!("\nCritical path: {}\n", links.join(" -> ")));
    }
    let lanes = parallel_lanes(&report.steps);
    if !lanes.is_empty() {
        text.push_str(&format!("Parallel lanes: {}\n", lanes.join("; ")));
    }
    for (kind, heading) in [
        (WaitKind::Window, "Sync windows"),
        (WaitKind::Bake, "Bakes"),
        (WaitKind::Approval, "Approvals"),
        (WaitKind::Analysis, "Analyses"),
        (WaitKind::Rollback, "Rollbacks"),
        (WaitKind::ApplicationSet, "Other ApplicationSets"),
    ] {
        let waits: Vec<_> = report
            .step_waits
            .iter()
            .filter(|w| w.kind == kind)
            .collect();
        if waits.is_empty() {
            continue;
        }
        text.push_str(&format!("\n{heading}:\n"));
        for wait in waits {
            text.push_str(&format!(
                "  step {} {} to {}: {}\n",
                wait.step,
                format_seconds(wait.start),
                format_seconds(wait.end),
                wait.reason
            ));
        }
    }
    if !report.blocked.is_empty() {
        text.push_str("\nBlocked:\n");
        for blocked in &report.blocked {
            text.push_str(&format!("  {}: {}\n", blocked.application, blocked.reason));
        }
    }
    text
}

/// In a step graph, the steps that wait for the same steps and so run side by side:
/// `after step 1: 2 (backend-eu) ∥ 3 (backend-us)`; nothing for a list.
fn parallel_lanes(steps: &[StepTimes]) -> Vec<String> {
    let mut by_after: BTreeMap<&[usize], Vec<&StepTimes>> = BTreeMap::new();
    for step in steps {
        if let Some(after) = &step.after {
            by_after.entry(after.as_slice()).or_default().push(step);
        }
    }
    by_after
        .into_iter()
        .filter(|(_, lane)| lane.len() > 1)
        .map(|(after, lane)| {
            let start = after_steps(after);
            let steps: Vec<String> = lane
                .iter()
                .map(|s| match &s.name {
                    Some(name) => format!("{} ({name})", s.step),
                    None => s.step.to_string(),
                })
                .collect();
            format!("{start}: {}", steps.join(" ∥ "))
        })
        .collect()
}
