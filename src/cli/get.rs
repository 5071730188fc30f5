//! `flotilla get appsets|apps`: lists ApplicationSets or Applications in a namespace (or all,
//! `-A`), optionally selected by label (`-l`), in the one output vocabulary (`-o
//! table|wide|yaml|json|name`, see [`super::output`]): the table shows sync, health, revision
//! and rollout; `wide` adds where each goes and what it syncs. The listing and the showing of
//! one named object are shared by `flotilla app|appset|proj list|get`.

use std::process::ExitCode;

use kube::Api;
use kube::api::ListParams;

use crate::cli::output::{OutputFormat, Printable, resource_name};
use crate::cluster::api_server::api_error::ApiError;
use flotilla_core::api::application::Application;
use flotilla_core::api::application_set::ApplicationSet;
use flotilla_core::api::application_set_status::{ConditionStatus, ConditionType};
use flotilla_core::health::HealthStatus;
use flotilla_core::table::Table;

/// What to list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GetKind {
    /// ApplicationSets.
    #[value(alias = "appset", alias = "applicationsets")]
    Appsets,
    /// Applications.
    #[value(alias = "app", alias = "applications")]
    Apps,
}

/// Arguments of `flotilla get`.
#[derive(Debug, clap::Args)]
pub struct GetArgs {
    /// `appsets` or `apps`.
    #[arg(value_enum)]
    pub kind: GetKind,
    /// Namespace (default: the kubeconfig's).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// List across all namespaces (the table gains a NAMESPACE column).
    #[arg(long = "all-namespaces", short = 'A', conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// Label selector, as kubectl's: `team=payments`, `tier!=db`, `env in (dev,prod)`.
    #[arg(long, short = 'l')]
    pub selector: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub cluster: super::connect::KubeconfigArgs,
}

/// The flags of `flotilla app|appset|proj list`, as `get`'s.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// List across all namespaces (the table gains a NAMESPACE column).
    #[arg(long = "all-namespaces", short = 'A')]
    pub all_namespaces: bool,
    /// Label selector, as kubectl's: `team=payments`, `tier!=db`, `env in (dev,prod)`.
    #[arg(long, short = 'l')]
    pub selector: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

impl ListArgs {
    /// The listing these flags ask for, and the namespace to list (`None`: all) given the
    /// command's `namespace`.
    #[must_use]
    pub fn listing<'a>(&'a self, namespace: &'a str) -> (Listing<'a>, Option<&'a str>) {
        let listing = Listing {
            output: self.output,
            selector: self.selector.as_deref(),
            all_namespaces: self.all_namespaces,
        };
        (listing, (!self.all_namespaces).then_some(namespace))
    }
}

/// The flags of `flotilla app|appset|proj get NAME`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The object's name.
    pub name: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t)]
    pub output: OutputFormat,
}

/// Lists and prints.
///
/// # Errors
/// No cluster, or the list is refused.
pub fn run(args: &GetArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    let text = runtime.block_on(async {
        let (client, namespace) = args.cluster.client_in(args.namespace.as_deref()).await?;
        let scope = (!args.all_namespaces).then_some(namespace.as_str());
        let listing = Listing {
            output: args.output,
            selector: args.selector.as_deref(),
            all_namespaces: args.all_namespaces,
        };
        listing.list_kind(args.kind, client, scope).await
    })?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The API of `K` in `namespace`, or in all namespaces.
pub fn api<K>(client: kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(namespace) => Api::namespaced(client, namespace),
        None => Api::all(client),
    }
}

/// A kind `get`, `list` and `show` read and print: a typed Kubernetes object that serializes.
pub trait Listable:
    kube::Resource<DynamicType = ()>
    + Clone
    + std::fmt::Debug
    + serde::de::DeserializeOwned
    + serde::Serialize
{
}

impl<K> Listable for K where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + serde::Serialize
{
}

/// How `get` (and `app|appset list`) lists and prints.
pub struct Listing<'a> {
    /// The output format.
    pub output: OutputFormat,
    /// The label selector, if any.
    pub selector: Option<&'a str>,
    /// Whether every namespace is listed (the table names each object's).
    pub all_namespaces: bool,
}

impl Listing<'_> {
    /// The objects of `kind` in the namespace `scope` (or all), printed as asked.
    ///
    /// # Errors
    /// The list is refused, or cannot be serialized.
    pub async fn list_kind(
        &self,
        kind: GetKind,
        client: kube::Client,
        scope: Option<&str>,
    ) -> anyhow::Result<String> {
        match kind {
            GetKind::Apps => self.list(api(client, scope), applications_table).await,
            GetKind::Appsets => self.list(api(client, scope), application_sets_table).await,
        }
    }

    /// The objects of `api` as asked; `table` makes the table format's rows (`wide`: more
    /// columns).
    ///
    /// # Errors
    /// The list is refused, or cannot be serialized.
    pub async fn list<K>(
        &self,
        api: Api<K>,
        table: fn(&[K], bool) -> Table,
    ) -> anyhow::Result<String>
    where
        K: Listable,
    {
        let params = match self.selector {
            Some(selector) => ListParams::default().labels(selector),
            None => ListParams::default(),
        };
        let items = api.list(&params).await.map_err(ApiError::from)?.items;
        self.output.print(&Listed {
            items,
            table,
            all_namespaces: self.all_namespaces,
        })
    }
}

/// The object `name` of `api`, printed in `output`: the object itself for `-o json|yaml`, its
/// row of `table` for the table formats.
///
/// # Errors
/// [`crate::cli::missing::Missing`] when it does not exist; it cannot be read or serialized.
pub async fn show<K>(
    api: &Api<K>,
    name: &str,
    output: OutputFormat,
    table: fn(&[K], bool) -> Table,
) -> anyhow::Result<String>
where
    K: Listable,
{
    let item = crate::cli::missing::get_named(api, name).await?;
    output.print(&Shown { item, table })
}

/// One object and how to tabulate it.
struct Shown<K> {
    item: K,
    table: fn(&[K], bool) -> Table,
}

impl<K> Printable for Shown<K>
where
    K: kube::Resource<DynamicType = ()> + serde::Serialize + Clone,
{
    fn data(&self) -> impl serde::Serialize + '_ {
        &self.item
    }

    fn names(&self) -> Vec<String> {
        vec![resource_name(&self.item)]
    }

    fn table(&self, wide: bool) -> String {
        (self.table)(std::slice::from_ref(&self.item), wide).render()
    }
}

/// Listed objects and how to tabulate them.
struct Listed<K> {
    items: Vec<K>,
    table: fn(&[K], bool) -> Table,
    all_namespaces: bool,
}

impl<K> Printable for Listed<K>
where
    K: kube::Resource<DynamicType = ()> + serde::Serialize,
{
    fn data(&self) -> impl serde::Serialize + '_ {
        &self.items
    }

    fn names(&self) -> Vec<String> {
        self.items.iter().map(resource_name).collect()
    }

    fn table(&self, wide: bool) -> String {
        let mut rows = (self.table)(&self.items, wide);
        if self.all_namespaces {
            let namespaces = self
                .items
                .iter()
                .map(|item| item.meta().namespace.clone().unwrap_or_default());
            rows.prepend_column("NAMESPACE", namespaces);
        }
        rows.render()
    }
}

/// One row per Application: name, sync, health (with its message), revision, operation;
/// `wide` adds its [`placement`].
#[must_use]
pub fn applications_table(apps: &[Application], wide: bool) -> Table {
    let mut headers = vec!["NAME", "SYNC", "HEALTH", "REVISION", "OPERATION", "MESSAGE"];
    if wide {
        headers.extend(PLACEMENT);
    }
    let mut table = Table::new(&headers);
    for app in apps {
        let status = app.status.clone().unwrap_or_default();
        let sync = status.sync.unwrap_or_default();
        let health = status.health.unwrap_or_default();
        let operation = match (&app.spec.operation, &status.operation_state) {
            (Some(_), _) => "Requested".to_string(),
            (None, Some(op)) => format!("{:?}", op.phase),
            (None, None) => String::new(),
        };
        let mut row = vec![
            app.metadata.name.clone().unwrap_or_default(),
            sync.status.as_str().to_owned(),
            health.status.as_str().to_owned(),
            sync.revision.chars().take(12).collect(),
            operation,
            health.message,
        ];
        if wide {
            row.extend(placement(app));
        }
        table.row(row);
    }
    table
}

/// The headers of [`placement`].
pub const PLACEMENT: [&str; 6] = [
    "PROJECT",
    "DESTINATION",
    "NAMESPACE",
    "REPO",
    "PATH",
    "TARGET",
];

/// Where an Application goes and what it syncs: project, destination (server or name),
/// namespace, repository, path (or chart) and target revision.
#[must_use]
pub fn placement(app: &Application) -> [String; 6] {
    let destination = &app.spec.destination;
    let source = &app.spec.source;
    [
        app.spec.project.clone(),
        destination
            .server
            .clone()
            .or_else(|| destination.name.clone())
            .unwrap_or_default(),
        destination.namespace.clone().unwrap_or_default(),
        source.repo_url.clone(),
        if source.chart.is_empty() {
            source.path.clone()
        } else {
            source.chart.clone()
        },
        source.target_revision.clone(),
    ]
}

/// One row per ApplicationSet: name, strategy, Applications, healthy ones (among those its
/// status lists, when it lists fewer than it has), rollout and errors; `wide` adds the number of
/// generators and of RollingSync steps.
#[must_use]
pub fn application_sets_table(sets: &[ApplicationSet], wide: bool) -> Table {
    let mut headers = vec!["NAME", "STRATEGY", "APPS", "HEALTHY", "ROLLOUT", "ERROR"];
    if wide {
        headers.extend(["GENERATORS", "STEPS"]);
    }
    let mut table = Table::new(&headers);
    for set in sets {
        let status = set.status.clone().unwrap_or_default();
        let healthy = status
            .resources
            .iter()
            .filter(|r| {
                r.health
                    .as_ref()
                    .is_some_and(|h| h.status == HealthStatus::Healthy)
            })
            .count();
        let condition = |wanted: ConditionType| {
            status
                .conditions
                .iter()
                .find(|c| c.type_ == wanted)
                .filter(|c| {
                    wanted != ConditionType::ErrorOccurred || c.status == ConditionStatus::True
                })
                .map(|c| {
                    if c.message.is_empty() {
                        c.reason.clone()
                    } else {
                        format!("{}: {}", c.reason, c.message)
                    }
                })
                .unwrap_or_default()
        };
        let strategy = set
            .spec
            .strategy
            .as_ref()
            .map_or("AllAtOnce".to_string(), |s| format!("{:?}", s.type_));
        let listed = status.resources.len();
        let count = status
            .resources_count
            .and_then(|count| usize::try_from(count).ok())
            .unwrap_or(listed);
        let mut row = vec![
            set.metadata.name.clone().unwrap_or_default(),
            strategy,
            count.to_string(),
            if listed < count {
                format!("{healthy} of the first {listed}")
            } else {
                healthy.to_string()
            },
            condition(ConditionType::RolloutProgressing),
            condition(ConditionType::ErrorOccurred),
        ];
        if wide {
            let steps = set
                .spec
                .strategy
                .as_ref()
                .and_then(|s| s.rolling_sync.as_ref())
                .map_or_else(|| "-".to_owned(), |r| r.steps.len().to_string());
            row.extend([set.spec.generators.len().to_string(), steps]);
        }
        table.row(row);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_core::api::application::{
        ApplicationSpec, ApplicationStatus, HealthReport, SyncStatus,
    };
    use flotilla_core::api::application_set_status::SyncStatusCode;
    use flotilla_core::health::HealthStatus;

    #[test]
    fn applications_show_sync_health_and_a_short_revision() {
        let mut app = Application::new("web", ApplicationSpec::default());
        app.status = Some(ApplicationStatus {
            sync: Some(SyncStatus {
                status: SyncStatusCode::OutOfSync,
                revision: "0123456789abcdef".into(),
                revisions: Vec::new(),
            }),
            health: Some(HealthReport {
                status: HealthStatus::Progressing,
                message: "1/3 pods ready".into(),
            }),
            ..ApplicationStatus::default()
        });
        let fresh = Application::new("db", ApplicationSpec::default());
        assert_eq!(
            applications_table(&[app, fresh], false).render(),
            "NAME  SYNC       HEALTH       REVISION      OPERATION  MESSAGE\n\
             web   OutOfSync  Progressing  0123456789ab             1/3 pods ready\n\
             db    Unknown    Unknown\n"
        );
    }

    #[test]
    fn application_sets_count_all_their_applications_and_the_healthy_ones_listed() {
        use flotilla_core::api::application_set_status::{
            ApplicationSetResource, ApplicationSetStatus,
        };
        let resource = |name: &str, health: HealthStatus| ApplicationSetResource {
            group: "flotilla.dev".into(),
            version: "v1alpha1".into(),
            kind: "Application".into(),
            namespace: "ns".into(),
            name: name.into(),
            status: None,
            health: Some(HealthReport {
                status: health,
                message: String::new(),
            }),
        };
        let set = |name: &str, count: Option<i64>| {
            let mut set: ApplicationSet = serde_json::from_value(serde_json::json!({
                "apiVersion": "flotilla.dev/v1alpha1", "kind": "ApplicationSet",
                "metadata": {"name": name},
                "spec": {
                    "generators": [],
                    "template": {"metadata": {"name": "x"}, "spec": {"project": "default", "source": {"repoURL": "r"}, "destination": {}}}
                }
            }))
            .unwrap();
            set.status = Some(ApplicationSetStatus {
                resources: vec![
                    resource("a", HealthStatus::Healthy),
                    resource("b", HealthStatus::Degraded),
                ],
                resources_count: count,
                ..ApplicationSetStatus::default()
            });
            set
        };
        assert_eq!(
            application_sets_table(
                &[
                    set("all", Some(2)),
                    set("cut", Some(9000)),
                    set("old", None)
                ],
                false
            )
            .render(),
            "NAME  STRATEGY   APPS  HEALTHY           ROLLOUT  ERROR\n\
             all   AllAtOnce  2     1\n\
             cut   AllAtOnce  9000  1 of the first 2\n\
             old   AllAtOnce  2     1\n"
        );
    }
}
