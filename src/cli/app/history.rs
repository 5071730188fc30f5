//! `flotilla app history NAME`: the Application's `status.history` (its last successful syncs,
//! oldest first), as `argocd app history` lists it: the id `flotilla app rollback` takes, when
//! it was deployed, the revision(s) and the source(s).

use kube::Api;

use crate::cli::output::{OutputFormat, Printable, resource_name};
use flotilla_core::api::application::{Application, ApplicationSource, RevisionHistory};
use flotilla_core::controller::application::start::initiator;
use flotilla_core::table::Table;

/// Arguments of `flotilla app history`.
#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// The Application.
    pub app: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Prints the history of the Application `args.app`.
///
/// # Errors
/// No such Application, or the history cannot be serialized.
pub async fn history(api: &Api<Application>, args: &HistoryArgs) -> anyhow::Result<()> {
    let app = crate::cli::missing::get_named(api, &args.app).await?;
    print!("{}", args.output.print(&History(&app))?);
    Ok(())
}

/// An Application printed as its history.
struct History<'a>(&'a Application);

impl History<'_> {
    fn entries(&self) -> &[RevisionHistory] {
        self.0.history()
    }
}

impl Printable for History<'_> {
    /// The entries as `status.history` holds them.
    fn data(&self) -> impl serde::Serialize + '_ {
        self.entries()
    }

    /// The Application (the entries are not objects).
    fn names(&self) -> Vec<String> {
        vec![resource_name(self.0)]
    }

    fn table(&self, wide: bool) -> String {
        let mut headers = vec!["ID", "DEPLOYED AT", "REVISION", "SOURCE"];
        if wide {
            headers.extend(["STARTED AT", "INITIATED BY"]);
        }
        let mut table = Table::new(&headers);
        for entry in self.entries() {
            let revisions = if entry.revisions.is_empty() {
                entry.revision.clone()
            } else {
                entry.revisions.join(", ")
            };
            let sources: Vec<String> = entry
                .source
                .iter()
                .chain(&entry.sources)
                .map(source_text)
                .collect();
            let mut row = vec![
                entry.id.to_string(),
                entry.deployed_at.0.to_string(),
                revisions,
                sources.join(", "),
            ];
            if wide {
                row.extend([
                    entry
                        .deploy_started_at
                        .as_ref()
                        .map_or_else(String::new, |t| t.0.to_string()),
                    initiator(&entry.initiated_by).to_owned(),
                ]);
            }
            table.row(row);
        }
        table.render()
    }
}

/// `https://git.example.com/shop.git web@main`, or `chart 1.2.3` for a chart.
fn source_text(source: &ApplicationSource) -> String {
    let what = if source.chart.is_empty() {
        &source.path
    } else {
        &source.chart
    };
    let at = if source.target_revision.is_empty() {
        String::new()
    } else {
        format!("@{}", source.target_revision)
    };
    format!("{} {what}{at}", source.repo_url)
}
