//! `flotilla app resources NAME`: the objects the Application manages as its last comparison
//! found them (`status.resources`), with their sync and health, as `argocd app resources`
//! lists them; `-o wide` adds the wave, whether it is a hook or waits to be pruned, and the
//! health message.

use std::process::ExitCode;

use kube::Api;

use crate::cli::missing::get_named;
use crate::cli::output::{OutputFormat, Printable, object_name};
use flotilla_core::api::application::{Application, ResourceStatus};
use flotilla_core::manifest::ObjectKey;
use flotilla_core::table::Table;

/// Arguments of `flotilla app resources`.
#[derive(Debug, clap::Args)]
pub struct ResourcesArgs {
    /// The Application.
    pub app: String,
    /// Only the objects that wait to be pruned (no longer in the source).
    #[arg(long)]
    pub orphaned: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Prints the Application's managed objects.
///
/// # Errors
/// No such Application, or it cannot be read.
pub async fn resources(api: &Api<Application>, args: &ResourcesArgs) -> anyhow::Result<ExitCode> {
    let app = get_named(api, &args.app).await?;
    let resources: Vec<ResourceStatus> = app
        .status
        .map(|status| status.resources)
        .unwrap_or_default()
        .into_iter()
        .filter(|resource| !args.orphaned || resource.requires_pruning)
        .collect();
    print!("{}", args.output.print(&Resources(&resources))?);
    Ok(ExitCode::SUCCESS)
}

/// The key of the managed object `resource` (no namespace when it is cluster-scoped).
pub(super) fn key(resource: &ResourceStatus) -> ObjectKey {
    ObjectKey {
        group: resource.group.clone(),
        kind: resource.kind.clone(),
        namespace: Some(resource.namespace.clone()).filter(|ns| !ns.is_empty()),
        name: resource.name.clone(),
    }
}

/// Managed objects, printable.
struct Resources<'a>(&'a [ResourceStatus]);

impl Printable for Resources<'_> {
    /// The entries as `status.resources` holds them.
    fn data(&self) -> impl serde::Serialize + '_ {
        self.0
    }

    fn names(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|r| object_name(&r.group, &r.kind, &r.name))
            .collect()
    }

    fn table(&self, wide: bool) -> String {
        let mut headers = vec!["GROUP", "KIND", "NAMESPACE", "NAME", "STATUS", "HEALTH"];
        if wide {
            headers.extend(["WAVE", "HOOK", "PRUNE", "MESSAGE"]);
        }
        let mut table = Table::new(&headers);
        for resource in self.0 {
            let health = resource.health.clone().unwrap_or_default();
            let mut row = vec![
                resource.group.clone(),
                resource.kind.clone(),
                resource.namespace.clone(),
                resource.name.clone(),
                resource.status.as_str().to_owned(),
                if resource.health.is_some() {
                    health.status.as_str().to_owned()
                } else {
                    String::new()
                },
            ];
            if wide {
                let yes = |flag: bool| if flag { "yes" } else { "" }.to_owned();
                row.extend([
                    resource.sync_wave.to_string(),
                    yes(resource.hook),
                    yes(resource.requires_pruning),
                    health.message,
                ]);
            }
            table.row(row);
        }
        table.render()
    }
}
