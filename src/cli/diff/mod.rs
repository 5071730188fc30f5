//! `flotilla diff PATH|APP.yaml [-n NS]`: the desired objects (loaded as `flotilla sync` loads
//! them, the Application's `ignoreDifferences` and the system-wide ones applied) against the
//! live ones, as a unified diff per object of the fields the compare looks at (like
//! `kubectl diff`; `-o diff`, the default), or in the one output vocabulary (`-o
//! table|wide|yaml|json|name`): each object with its status and changed paths, `name` only the
//! objects that differ. Exit code 0 when everything matches, 1 when something differs or is
//! missing, 2 on error. `flotilla app diff` reports the same way.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use serde::Serialize;
use serde_json::Value;

use crate::actions::compare::{compare_live, yaml};
use crate::actions::unified_diff::unified;
use crate::cli::command_repos::command_repos;
use crate::cli::output::{OutputFormat, Printable, object_name};
use crate::cli::sync::app_name::AppName;
use crate::cli::sync::source::SyncSource;
use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::source::Toolchain;
use crate::sync::application_settings::SyncOverrides;
use crate::sync::execute::ExecuteSettings;
use crate::sync::execute::cluster_api::ClusterApi;
use crate::sync::load_plan;
use flotilla_core::sync::diff::compared;
use flotilla_core::sync::tracked;
use flotilla_core::sync::{IgnoreDifferences, SyncPlan};
use flotilla_core::table::Table;

/// Arguments of `flotilla diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// A manifest directory or file, or an Application YAML.
    pub path: PathBuf,
    /// Destination namespace (default: the Application's `destination.namespace`).
    #[arg(short, long)]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub cluster: crate::cli::connect::KubeconfigArgs,
    /// Application name of the tracking annotation (as for `flotilla sync`).
    #[arg(long)]
    pub app: Option<String>,
    #[command(flatten)]
    pub directory: crate::cli::directory_args::DirectoryArgs,
    #[command(flatten)]
    pub customizations: crate::cli::customizations_args::CustomizationsArgs,
    #[command(flatten)]
    pub project: crate::cli::project_args::ProjectArgs,
    /// Map a repoURL to a local git repository or directory: URL=PATH (repeatable).
    #[arg(long = "repo", value_name = "URL=PATH")]
    pub repos: Vec<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: DiffOutput,
}

/// Output formats of `flotilla diff`: `diff`, or one of the shared vocabulary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DiffOutput {
    /// A unified diff per differing object.
    #[default]
    Diff,
    /// Every object with its status and changed paths.
    Objects(OutputFormat),
}

impl clap::ValueEnum for DiffOutput {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Self::Diff,
            Self::Objects(OutputFormat::Table),
            Self::Objects(OutputFormat::Wide),
            Self::Objects(OutputFormat::Yaml),
            Self::Objects(OutputFormat::Json),
            Self::Objects(OutputFormat::Name),
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self {
            Self::Diff => Some(
                clap::builder::PossibleValue::new("diff")
                    .help("A unified diff per differing object"),
            ),
            Self::Objects(format) => format.to_possible_value(),
        }
    }
}

/// How one desired object compares with the live one.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDiff {
    /// `group/Kind namespace/name`.
    object: String,
    /// `kind.group/name`, for `-o name`.
    #[serde(skip)]
    reference: String,
    /// `Synced`, `OutOfSync` or `Missing`.
    status: &'static str,
    /// The fields that differ, as JSON pointers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    changed_paths: Vec<String>,
    /// The unified diff (live, then desired).
    #[serde(skip)]
    text: String,
}

/// Runs the diff: exit code 0 when equal, 1 when different, 2 on error.
#[must_use]
pub fn run(args: &DiffArgs, toolchain: &Arc<Toolchain>) -> ExitCode {
    report(diff(args, toolchain), args.output)
}

/// Prints the objects of a diff as `output` asks: exit code 0 when everything matches, 1 when
/// something differs or is missing, 2 on error.
#[must_use]
pub fn report(objects: anyhow::Result<Vec<ObjectDiff>>, output: DiffOutput) -> ExitCode {
    match objects {
        Ok(objects) => {
            let differ = objects.iter().any(|o| o.status != "Synced");
            let printed = match output {
                DiffOutput::Objects(format) => format
                    .print(&Compared(&objects))
                    .map(|text| print!("{text}")),
                DiffOutput::Diff => {
                    objects.iter().for_each(|o| print!("{}", o.text));
                    Ok(())
                }
            };
            match printed {
                Ok(()) => ExitCode::from(u8::from(differ)),
                Err(error) => failed(&error),
            }
        }
        Err(error) => failed(&error),
    }
}

/// The compared objects, in the shared vocabulary.
struct Compared<'a>(&'a [ObjectDiff]);

impl Printable for Compared<'_> {
    fn data(&self) -> impl Serialize + '_ {
        self.0
    }

    /// The objects that differ or are missing.
    fn names(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|o| o.status != "Synced")
            .map(|o| o.reference.clone())
            .collect()
    }

    /// Each object with its status and how many fields differ; `wide` lists them.
    fn table(&self, wide: bool) -> String {
        let mut headers = vec!["OBJECT", "STATUS", "CHANGED"];
        if wide {
            headers.push("PATHS");
        }
        let mut table = Table::new(&headers);
        for object in self.0 {
            let mut row = vec![
                object.object.clone(),
                object.status.to_owned(),
                object.changed_paths.len().to_string(),
            ];
            if wide {
                row.push(object.changed_paths.join(","));
            }
            table.row(row);
        }
        table.render()
    }
}

fn failed(error: &anyhow::Error) -> ExitCode {
    eprintln!("error: {}", super::error_text(error));
    ExitCode::from(2)
}

fn diff(args: &DiffArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<Vec<ObjectDiff>> {
    let repos = command_repos(&args.repos, toolchain)?;
    let source = SyncSource::open(&args.path, &repos)?;
    let overrides = SyncOverrides {
        namespace: args.namespace.clone(),
        directory: args.directory.options(),
        ..SyncOverrides::default()
    };
    let process = args.customizations.read()?.over(ExecuteSettings::default());
    let settings = source.settings(&overrides, &process, &args.project.read()?)?;
    let namespace = settings
        .execute
        .destination_namespace
        .clone()
        .context("no destination namespace: pass --namespace")?;
    let app = AppName::choose(args.app.as_deref(), source.app(), &args.path)?.name;
    let plan = load_plan(
        toolchain,
        &source.root,
        &settings.source,
        Some(&namespace),
        "diff",
    )
    .map_err(|errors| {
        let lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("{}", lines.join("\n"))
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let cluster = KubeCluster::new(args.cluster.client().await?);
        diff_objects(&cluster, &plan, &app, &settings.execute.ignore_differences).await
    })
}

/// How each object of `plan` (tracked as Application `app`) compares with its live object in
/// `cluster`, the `ignore` rules applied; hooks are left out.
///
/// # Errors
/// A live object cannot be read.
pub async fn diff_objects(
    cluster: &KubeCluster,
    plan: &SyncPlan,
    app: &str,
    ignore: &IgnoreDifferences,
) -> anyhow::Result<Vec<ObjectDiff>> {
    let mut objects = Vec::new();
    for task in plan.tasks.iter().filter(|task| task.hook.is_none()) {
        let name = task.key.to_string();
        let reference = object_name(&task.key.group, &task.key.kind, &task.key.name);
        let live = cluster
            .get(&task.key)
            .await
            .with_context(|| format!("reading {name}"))?;
        let desired = tracked(task, app);
        objects.push(match live {
            None => {
                let (want, _) = compared(&desired, &Value::Null);
                ObjectDiff {
                    text: unified("/dev/null", &name, "", &yaml(&want)?),
                    object: name,
                    reference,
                    status: "Missing",
                    changed_paths: Vec::new(),
                }
            }
            Some(live) => {
                let (_, changed_paths, text) =
                    compare_live(&task.key, &desired, &live, ignore, Value::clone)?;
                ObjectDiff {
                    object: name,
                    reference,
                    status: if changed_paths.is_empty() {
                        "Synced"
                    } else {
                        "OutOfSync"
                    },
                    changed_paths,
                    text,
                }
            }
        });
    }
    Ok(objects)
}
