//! `flotilla plan PATH`: generates the manifests of a directory offline (plain manifests, a Helm
//! chart or a kustomization, see [`crate::source`]; its links must stay inside it), or of an
//! Application file's source or `sources` (`--repo URL=PATH`), and prints the
//! phases, waves and order a sync would run, with the file or tool each object came from and
//! hook, delete-policy and sync-option markers; or every validation error (each naming file and
//! object) on stderr with exit code 1. With `--project FILE`, the objects that project would
//! refuse (deployed to the in-cluster destination) are named on stderr, with exit code 1.
//! Printed in the one output vocabulary (`-o table|wide|yaml|json|name`): `wide` adds each
//! object's apiVersion, `name` lists the objects in the order they would be applied.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use serde::Serialize;

use crate::cli::command_repos::command_repos;
use crate::cli::output::{OutputFormat, Printable, object_name};
use crate::cli::sync::source::SyncSource;
use crate::repo::bounds::check_links;
use crate::source::{SourceOptions, Toolchain};
use crate::sync::application_settings::SyncOverrides;
use crate::sync::execute::ExecuteSettings;
use crate::sync::load_plan;
use flotilla_core::manifest::ObjectKey;
use flotilla_core::project::Projects;
use flotilla_core::sync::{Batch, SyncPlan, SyncTask, refused_by_project};
use flotilla_core::table::Table;

/// Arguments of `flotilla plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// A manifest directory or file, a Helm chart or a kustomization, or an Application file
    /// (its source, or each of its `sources`, read through `--repo`).
    pub path: PathBuf,
    /// Map a repoURL of an Application file to a local git repository or directory: URL=PATH
    /// (repeatable).
    #[arg(long = "repo", value_name = "URL=PATH")]
    pub repos: Vec<String>,
    /// The Application name a chart is rendered for (its default release name); the directory's
    /// name when not given.
    #[arg(long)]
    pub app: Option<String>,
    /// Destination namespace for namespaced objects that have none.
    #[arg(short, long)]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub directory: crate::cli::directory_args::DirectoryArgs,
    #[command(flatten)]
    pub project: crate::cli::project_args::ProjectArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// One apply step of the plan: a batch and its objects.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanStep<'a> {
    step: usize,
    #[serde(flatten)]
    batch: Batch,
    objects: Vec<PlanObject<'a>>,
}

/// One object of a step.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanObject<'a> {
    #[serde(flatten)]
    key: &'a ObjectKey,
    api_version: &'a str,
    file: String,
    markers: Vec<String>,
}

/// Prints the plan, or the validation errors.
///
/// # Errors
/// Output that cannot be written.
pub fn run(args: &PlanArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<ExitCode> {
    let application = args.app.clone().unwrap_or_else(|| {
        let name = args
            .path
            .canonicalize()
            .unwrap_or_else(|_| args.path.clone());
        name.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    });
    let options = SourceOptions {
        directory: args.directory.options(),
        application,
        namespace: args.namespace.clone(),
        ..SourceOptions::default()
    };
    if args.path.is_dir()
        && let Err(error) = check_links(&args.path)
    {
        eprintln!("error: {}: {error}", args.path.display());
        return Ok(ExitCode::FAILURE);
    }
    // An Application file: its sources checked out, with its own name and namespace.
    let repos = command_repos(&args.repos, toolchain)?;
    let source = SyncSource::open(&args.path, &repos)?;
    let (root, options, namespace) = if source.app().is_some() {
        let overrides = SyncOverrides {
            namespace: args.namespace.clone(),
            directory: args.directory.options(),
            ..SyncOverrides::default()
        };
        let settings = source.settings(
            &overrides,
            &ExecuteSettings::default(),
            &Projects::unchecked(),
        )?;
        let namespace = settings.execute.destination_namespace;
        (source.root.clone(), settings.source, namespace)
    } else {
        (args.path.clone(), options, args.namespace.clone())
    };
    let plan = match load_plan(toolchain, &root, &options, namespace.as_deref(), "plan") {
        Ok(plan) => plan,
        Err(errors) => {
            for error in &errors.0 {
                eprintln!("error: {error}");
            }
            eprintln!(
                "{} validation error(s); nothing would be applied",
                errors.0.len()
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    let refused = match args.project.single()? {
        Some(admission) => refused_by_project(&plan, None, &admission),
        None => Vec::new(),
    };
    let printed = Printed {
        steps: steps(&plan),
        plan: &plan,
    };
    print!("{}", args.output.print(&printed)?);
    for (_, refusal) in &refused {
        eprintln!("refused: {refusal}");
    }
    if refused.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "{} object(s) refused by the project; a sync would write nothing",
            refused.len()
        );
        Ok(ExitCode::FAILURE)
    }
}

/// The plan as `plan` prints it.
struct Printed<'a> {
    steps: Vec<PlanStep<'a>>,
    plan: &'a SyncPlan,
}

impl Printable for Printed<'_> {
    /// The steps with their objects, what is never applied, and the PreDelete and PostDelete
    /// hooks.
    fn data(&self) -> impl Serialize + '_ {
        let skipped: Vec<String> = self.plan.skipped.iter().map(ToString::to_string).collect();
        let hooks = |phase| -> Vec<String> {
            self.plan
                .deletion_hooks(phase)
                .map(|t| t.key.to_string())
                .collect()
        };
        serde_json::json!({"steps": self.steps, "skipped": skipped,
            "preDelete": hooks(flotilla_core::sync::SyncPhase::PreDelete),
            "postDelete": hooks(flotilla_core::sync::SyncPhase::PostDelete)})
    }

    fn names(&self) -> Vec<String> {
        self.steps
            .iter()
            .flat_map(|step| &step.objects)
            .map(|object| object_name(&object.key.group, &object.key.kind, &object.key.name))
            .collect()
    }

    fn table(&self, wide: bool) -> String {
        table(&self.steps, self.plan, wide)
    }
}

fn steps(plan: &SyncPlan) -> Vec<PlanStep<'_>> {
    plan.batches()
        .into_iter()
        .enumerate()
        .map(|(index, (batch, tasks))| PlanStep {
            step: index + 1,
            batch,
            objects: tasks
                .iter()
                .map(|task| PlanObject {
                    key: &task.key,
                    api_version: &task.resource.api_version,
                    file: format!(
                        "{}#{}",
                        task.resource.source.file.display(),
                        task.resource.source.document
                    ),
                    markers: markers(task),
                })
                .collect(),
        })
        .collect()
}

/// `hook=PreSync`, `delete=HookSucceeded`, `Prune=false`, `IgnoreExtraneous`, promotions.
fn markers(task: &SyncTask) -> Vec<String> {
    let mut markers = Vec::new();
    if let Some(hook) = &task.hook {
        markers.push(format!("hook={}", hook.hook_type));
        let policies: Vec<String> = hook
            .delete_policies
            .iter()
            .map(ToString::to_string)
            .collect();
        markers.push(format!("delete={}", policies.join(",")));
    }
    markers.extend(
        task.options
            .written()
            .map(|(key, value)| format!("{key}={value}")),
    );
    if task.compare.ignore_extraneous {
        markers.push("IgnoreExtraneous".to_owned());
    }
    if let Some(promotion) = &task.promotion {
        markers.push(format!(
            "moved ahead of {} (declared {} wave {})",
            promotion.ahead_of, promotion.declared_phase, promotion.declared_wave
        ));
    }
    markers
}

/// One row per object; `wide` adds its apiVersion.
fn table(steps: &[PlanStep<'_>], plan: &SyncPlan, wide: bool) -> String {
    let mut headers = vec!["STEP", "PHASE", "WAVE", "GROUP", "KIND"];
    if wide {
        headers.push("API VERSION");
    }
    headers.extend(["NAMESPACE", "NAME", "SOURCE", "MARKERS"]);
    let mut rows = Table::new(&headers);
    for step in steps {
        for object in &step.objects {
            let mut row = vec![
                step.step.to_string(),
                step.batch.phase.to_string(),
                step.batch.wave.to_string(),
                object.key.group.clone(),
                object.key.kind.clone(),
            ];
            if wide {
                row.push(object.api_version.to_owned());
            }
            row.extend([
                object.key.namespace.clone().unwrap_or_default(),
                object.key.name.clone(),
                object.file.clone(),
                object.markers.join(" "),
            ]);
            rows.row(row);
        }
    }
    let mut text = rows.render();
    if plan
        .tasks
        .iter()
        .any(|t| t.phase == flotilla_core::sync::SyncPhase::SyncFail)
    {
        text.push_str("SyncFail steps run only when the sync fails.\n");
    }
    for key in &plan.skipped {
        text.push_str(&format!("skipped (never applied): {key}\n"));
    }
    for task in &plan.on_delete {
        text.push_str(&format!(
            "{} (on Application deletion): {}\n",
            task.phase, task.key
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn shop_table() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("core/src/sync/testdata");
        let toolchain = Toolchain::default();
        let plan = load_plan(&toolchain, &root, &SourceOptions::default(), None, "plan").unwrap();
        let text = table(&steps(&plan), &plan, false);
        let expected = "\
STEP  PHASE     WAVE  GROUP  KIND        NAMESPACE  NAME         SOURCE       MARKERS
1     PreSync   0            Namespace              shop         shop.yaml#0  moved ahead of Job shop/db-migrate (declared Sync wave -2)
2     PreSync   0     batch  Job         shop       db-migrate   shop.yaml#2  hook=PreSync delete=HookSucceeded
3     Sync      -1           ConfigMap   shop       shop-config  shop.yaml#1
4     Sync      0            Service     shop       shop-api     shop.yaml#3
4     Sync      0     apps   Deployment  shop       shop-api     shop.yaml#4
5     PostSync  0     batch  Job         shop       smoke-test   shop.yaml#5  hook=PostSync delete=BeforeHookCreation
";
        assert_eq!(text, expected);
    }
}
