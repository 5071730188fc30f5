//! `flotilla windows APP|APPSET [-n NS] [--project FILE]... [--at TIME]`: the sync windows that
//! apply to an Application (or to each Application of an ApplicationSet), whether each is
//! active now and when it next changes, and whether automated and manual syncs may happen —
//! with the projects read from the cluster, or from `--project` files. Printed in the one output
//! vocabulary (`-o table|wide|yaml|json|name`; `wide` adds whether manual syncs are allowed
//! during a window and its description, `name` lists the Applications).

use std::process::ExitCode;

use anyhow::Context;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::{Api, ResourceExt};

use crate::cli::output::{OutputFormat, Printable, object_name};
use crate::cli::project_args::ProjectArgs;
use flotilla_core::api::{APPLICATION_SET_LABEL, AppProject, Application};
use flotilla_core::project::Projects;
use flotilla_core::project::windows::{WindowListing, listing};

/// Arguments of `flotilla windows`.
#[derive(Debug, clap::Args)]
pub struct WindowsArgs {
    /// An Application, or an ApplicationSet (each of its Applications).
    pub name: String,
    /// Namespace (default: the kubeconfig's).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// The instant to evaluate the windows at (RFC 3339; default: now).
    #[arg(long, value_name = "TIME")]
    pub at: Option<Timestamp>,
    #[command(flatten)]
    pub projects: ProjectArgs,
    #[command(flatten)]
    pub cluster: super::connect::KubeconfigArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Reads the Applications and their projects and prints the windows.
///
/// # Errors
/// No cluster, no Application or ApplicationSet of that name, a project file or window that
/// cannot be read.
pub fn run(args: &WindowsArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    let listed = runtime.block_on(async {
        let (client, namespace) = args.cluster.client_in(args.namespace.as_deref()).await?;
        let apps: Api<Application> = Api::namespaced(client.clone(), &namespace);
        let applications = match apps.get_opt(&args.name).await? {
            Some(app) => vec![app],
            None => {
                let selector = format!("{APPLICATION_SET_LABEL}={}", args.name);
                let listed = apps.list(&ListParams::default().labels(&selector)).await?;
                if listed.items.is_empty() {
                    anyhow::bail!(
                        "no Application {0:?}, and no Applications of an ApplicationSet {0:?}, in namespace {namespace}",
                        args.name
                    );
                }
                listed.items
            }
        };
        let projects = if args.projects.projects.is_empty() {
            let api: Api<AppProject> = Api::namespaced(client, &namespace);
            let listed = api
                .list(&ListParams::default())
                .await
                .with_context(|| format!("listing the AppProjects of namespace {namespace}"))?;
            Projects::new(
                listed
                    .items
                    .into_iter()
                    .map(|project| (project.name_any(), project.spec)),
            )
        } else {
            args.projects.read()?
        };
        Ok(listing(&applications, &projects, args.at.unwrap_or_else(Timestamp::now))?)
    })?;
    print!("{}", args.output.print(&listed)?);
    Ok(ExitCode::SUCCESS)
}

impl Printable for WindowListing {
    fn data(&self) -> impl serde::Serialize + '_ {
        self
    }

    fn names(&self) -> Vec<String> {
        self.applications
            .iter()
            .map(|v| object_name(flotilla_core::api::GROUP, "Application", &v.application))
            .collect()
    }

    fn table(&self, wide: bool) -> String {
        WindowListing::table(self, wide)
    }
}
