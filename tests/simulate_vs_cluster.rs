//! The simulator against the real thing: the seed's three-tier stack rolled out on the embedded
//! cluster with a virtual clock, and on the real control plane (cluster 1: kube-apiserver, the
//! controller manager, the node simulator) twice: by the simulator's own loop (RollingSync
//! passes, the real executor, the same observation) and by the controller (both reconcilers, as
//! `flotilla controller` runs them, from the ApplicationSet in the cluster and a git
//! repository). The order must be the same: which Application syncs in which step and after
//! which, each sync's phases and waves, each object's record (hooks, their outcome and
//! deletion). Also with the migration failing (`sim.flotilla.dev/fail` on its pod, which the
//! node simulator and the embedded cluster both honour).

mod controller_support;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::time::Duration;

use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::sync::{OperationPhase, OperationState};
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use serde_json::{Value, json};
use support::fixture_dir::copy_dir;
use support::git_remote::Remote;

use flotilla::cli::render::AppSetArgs;
use flotilla::cli::simulate::{LoadedSources, sim_app};
use flotilla::cluster::api_server::kube_cluster::KubeCluster;
use flotilla::simulate::clock::VirtualClock;
use flotilla::simulate::driver::{Driven, drive};
use flotilla::simulate::report::{self, Report};
use flotilla::simulate::{ClusterBehavior, Scenario, SimApp, SimCluster};
use flotilla::sync::execute::ExecuteSettings;
use flotilla_core::api::application_set::RolloutStrategy;

const REPO_URL: &str = "https://git.example.com/acme/platform-manifests.git";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The three-tier stack's Applications, each deploying to its region's namespace under `prefix`
/// ([`destination`]), with manifests from `repo`.
fn three_tier(prefix: &str, repo: &Path) -> (Vec<SimApp>, RolloutStrategy, String) {
    let args = AppSetArgs {
        appset: root().join("examples/three-tier-stack.yaml"),
        repos: vec![format!("{REPO_URL}={}", repo.display())],
        clusters: None,
        project: flotilla::cli::project_args::ProjectArgs::default(),
    };
    let rendered = args
        .render(&Default::default())
        .expect("the example renders");
    let mut sources = LoadedSources::default();
    let apps: Vec<SimApp> = rendered
        .applications
        .iter()
        .map(|application| {
            let mut application = application.clone();
            let region = application
                .metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get("region"))
                .expect("a region label")
                .clone();
            application.spec.destination.namespace = Some(destination(prefix, &region));
            sim_app(
                &application,
                (&rendered.repos, &rendered.projects),
                &mut sources,
                &ExecuteSettings::default(),
            )
            .expect("a usable source")
        })
        .collect();
    let destination = apps[0].destination.clone();
    let strategy = rendered
        .appset
        .spec
        .strategy
        .expect("a RollingSync strategy");
    (apps, strategy, destination)
}

/// The platform manifests (the database's chart, the backend's kustomizations, the frontend's
/// files) pushed to a bare git repository (branch `main`), with the chart's migration Job's
/// pod failing when `fail` is set.
fn manifests(fail: bool) -> Remote {
    let remote = Remote::new("platform-manifests");
    let dir = remote.work();
    copy_dir(&root().join("examples/repos/platform-manifests"), dir);
    if fail {
        let migration = dir.join("database/templates/migrate.yaml");
        let text = std::fs::read_to_string(&migration).expect("readable");
        let failing = text.replace(
            "sim.flotilla.dev/ready-after: 4s",
            "sim.flotilla.dev/ready-after: 4s\n        sim.flotilla.dev/fail: \"true\"",
        );
        assert_ne!(failing, text);
        std::fs::write(migration, failing).expect("writable");
    }
    remote.push("platform manifests");
    remote
}

/// The destination namespace of a test's Applications in `region`: one nobody creates but
/// Flotilla (the example's `CreateNamespace=true`).
fn destination(prefix: &str, region: &str) -> String {
    format!("{prefix}-{region}")
}

/// The rollout on the embedded cluster, on a paused runtime of its own thread.
fn simulated(namespace: &str, repo: &Path) -> (Driven, Report) {
    let (apps, strategy, destination) = three_tier(namespace, repo);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .start_paused(true)
                    .build()
                    .expect("a runtime");
                runtime.block_on(async {
                    let clock = VirtualClock::start(Timestamp::now());
                    let cluster = SimCluster::new(clock, ClusterBehavior::default().into());
                    let clusters = BTreeMap::from([(destination, cluster)]);
                    let driven = drive(
                        &apps,
                        &strategy,
                        &clusters,
                        clock,
                        ("", &Scenario::default()),
                        ("", None),
                        &|_| {},
                    )
                    .await;
                    let report = report::build(&driven, &clock, "RollingSync");
                    (driven, report)
                })
            })
            .join()
            .expect("the simulation thread")
    })
}

/// The same rollout on cluster 1, in real time.
async fn real(namespace: &support::TestNamespace, repo: &Path) -> (Driven, Report) {
    let (apps, strategy, destination) = three_tier(&namespace.name, repo);
    let clusters = BTreeMap::from([(destination, KubeCluster::new(namespace.client.clone()))]);
    let clock = VirtualClock::start(Timestamp::now());
    let driven = drive(
        &apps,
        &strategy,
        &clusters,
        clock,
        ("", &Scenario::default()),
        ("", None),
        &|_| {},
    )
    .await;
    let report = report::build(&driven, &clock, "RollingSync");
    (driven, report)
}

/// One Application's rollout as one side saw it: its RollingSync step and its sync operation.
struct Outcome<'a> {
    name: &'a str,
    step: Option<String>,
    operation: Option<&'a OperationState>,
}

/// The Applications of a simulator-driven rollout.
fn driven_outcomes<'a>(driven: &'a Driven, report: &Report) -> Vec<Outcome<'a>> {
    driven
        .runs
        .iter()
        .map(|run| Outcome {
            name: &run.name,
            step: report
                .applications
                .iter()
                .find(|a| a.name == run.name)
                .expect("reported")
                .step
                .map(|step| step.to_string()),
            operation: run.operation.as_ref(),
        })
        .collect()
}

/// Per Application, those that synced first, by step and name (the two regions of a step sync
/// at once; [`assert_steps_in_sequence`] checks the steps' order in time): its step, how its
/// sync ended, its segments (phase and wave), and every record (phase, wave, hook, outcome,
/// action).
fn order(mut outcomes: Vec<Outcome>) -> Vec<String> {
    outcomes.sort_by(|a, b| {
        let key = |outcome: &Outcome<'_>| (outcome.operation.is_none(), outcome.step.clone());
        key(a).cmp(&key(b)).then_with(|| a.name.cmp(b.name))
    });
    let mut lines = Vec::new();
    for outcome in outcomes {
        let records = outcome
            .operation
            .map(|op| op.resources.as_slice())
            .unwrap_or_default();
        let segments: Vec<String> = records
            .chunk_by(|a, b| (a.sync_phase, a.wave) == (b.sync_phase, b.wave))
            .map(|group| format!("{:?} wave {}", group[0].sync_phase, group[0].wave))
            .collect();
        let result = outcome
            .operation
            .map_or("NotSynced".to_owned(), |op| format!("{:?}", op.phase));
        lines.push(format!(
            "{} step {:?} {result} [{}]",
            outcome.name,
            outcome.step,
            segments.join(", ")
        ));
        for record in records {
            lines.push(format!(
                "  {:?} wave {} {} {} hook {:?} {:?} {:?} {:?}",
                record.sync_phase,
                record.wave,
                record.kind,
                record.name,
                record.hook_type,
                record.status,
                record.hook_phase,
                record.action
            ));
        }
    }
    lines
}

fn assert_same_order(simulated: &[String], observed: &[String], side: &str) {
    assert_eq!(
        simulated,
        observed,
        "simulated:\n{}\n{side}:\n{}",
        simulated.join("\n"),
        observed.join("\n")
    );
}

/// Each Application's sync starts only after every sync of the previous steps ended.
fn assert_steps_in_sequence(report: &Report, side: &str) {
    let started: Vec<_> = report
        .applications
        .iter()
        .filter(|a| a.start.is_some())
        .collect();
    for earlier in &started {
        for later in started.iter().filter(|a| a.step > earlier.step) {
            assert!(
                earlier.end <= later.start,
                "{side}: {} ({:?}) must end before {} starts ({:?})",
                earlier.name,
                earlier.end,
                later.name,
                later.start
            );
        }
    }
}

async fn compare(label: &str, fail: bool) {
    let namespace = support::namespace(1, label).await;
    let repo = manifests(fail);
    let (sim_driven, sim_report) = simulated(&namespace.name, &repo.bare());
    let (real_driven, real_report) = real(&namespace, &repo.bare()).await;
    let simulated = order(driven_outcomes(&sim_driven, &sim_report));
    let observed = order(driven_outcomes(&real_driven, &real_report));
    assert_same_order(&simulated, &observed, "real");
    assert_steps_in_sequence(&sim_report, "simulated");
    assert_steps_in_sequence(&real_report, "real");
    assert_eq!(sim_report.ending, real_report.ending);
    let blocked = |report: &Report| -> Vec<String> {
        report
            .blocked
            .iter()
            .map(|b| b.application.clone())
            .collect()
    };
    assert_eq!(blocked(&sim_report), blocked(&real_report));
    eprintln!(
        "{label}: simulated {:.1}s of virtual time, real {:.1}s",
        sim_report.total_seconds, real_report.total_seconds
    );
}

#[tokio::test]
async fn three_tier_stack_rolls_out_in_the_same_order_as_on_the_control_plane() {
    compare("sim-vs-cluster", false).await;
}

#[tokio::test]
async fn failing_migration_stops_the_stack_as_on_the_control_plane() {
    compare("sim-vs-cluster-fail", true).await;
}

/// The three-tier example as it is, but from `repo` and deploying into each region's
/// [`destination`] under `namespace`, which the sync creates.
fn example_appset(namespace: &str, repo: &Path) -> ApplicationSet {
    let path = root().join("examples/three-tier-stack.yaml");
    let text = std::fs::read_to_string(&path).expect("the example");
    let mut appset: Value = serde_saphyr::from_str(&text).expect("the example parses");
    appset["apiVersion"] = json!("flotilla.dev/v1alpha1");
    appset["metadata"]["namespace"] = json!(namespace);
    let spec = &mut appset["spec"]["template"]["spec"];
    spec["source"]["repoURL"] = json!(format!("file://{}", repo.display()));
    spec["destination"]["namespace"] = json!(destination(namespace, "{{ .region }}"));
    support::object(appset)
}

/// The rollout of the ApplicationSet by the controller on cluster 1: once the database's sync
/// has ended, until every sync the rollout started has ended and then (when one failed) for a
/// while longer, to see that nothing else starts.
async fn controlled(label: &str, repo: &Path) -> (Vec<Application>, ApplicationSet) {
    let ns = controller_support::setup(label).await;
    // The example's Applications name the project `platform`, which the platform team creates;
    // the simulation checks no project (no --project), so this one permits everything.
    support::permissive_project(&ns, "platform").await;
    let controller = controller_support::start(&ns, "sim-compare");
    let appsets: kube::Api<ApplicationSet> = ns.api();
    let appset = example_appset(&ns.name, repo);
    support::apply(&appsets, &appset).await;
    let apps = ns.api::<Application>();
    let ended = |app: &Application| {
        let phase = app.status.as_ref()?.operation_state.as_ref()?.phase;
        matches!(phase, OperationPhase::Succeeded | OperationPhase::Failed).then_some(phase)
    };
    let failed =
        support::eventually_within(Duration::from_secs(300), "the rollout to end", async || {
            let listed = apps
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let phases: Vec<Option<OperationPhase>> = listed.items.iter().map(ended).collect();
            let all_succeeded = listed.items.len() == 6
                && phases.iter().all(|p| *p == Some(OperationPhase::Succeeded));
            let failed = phases.contains(&Some(OperationPhase::Failed));
            let running = listed.items.iter().any(|app| {
                app.status
                    .as_ref()
                    .and_then(|s| s.operation_state.as_ref())
                    .is_some()
                    && ended(app).is_none()
            });
            if (all_succeeded || failed) && !running {
                Ok(failed)
            } else {
                Err(format!("{phases:?}"))
            }
        })
        .await;
    if failed {
        // A failed step stops the rollout: several resyncs later, nothing else has started.
        tokio::time::sleep(controller_support::RESYNC * 5).await;
    }
    let listed = apps
        .list(&ListParams::default())
        .await
        .expect("lists Applications");
    let appset = appsets
        .get("platform-stack")
        .await
        .expect("the ApplicationSet");
    controller.stop().await;
    (listed.items, appset)
}

/// The Applications as the controller left them: the step from the ApplicationSet's status, the
/// operation from each Application's.
fn controlled_outcomes<'a>(apps: &'a [Application], appset: &ApplicationSet) -> Vec<Outcome<'a>> {
    let steps = appset
        .status
        .as_ref()
        .map(|s| s.application_status.as_slice())
        .unwrap_or_default();
    apps.iter()
        .map(|app| {
            let name = app.metadata.name.as_deref().expect("named");
            Outcome {
                name,
                step: steps
                    .iter()
                    .find(|s| s.application == name)
                    .map(|s| s.step.clone()),
                operation: app.status.as_ref().and_then(|s| s.operation_state.as_ref()),
            }
        })
        .collect()
}

async fn compare_with_controller(label: &str, fail: bool) {
    let repo = manifests(fail);
    let (apps, appset) = controlled(label, &repo.bare()).await;
    let namespace = appset.metadata.namespace.clone().expect("namespaced");
    let (sim_driven, sim_report) = simulated(&namespace, &repo.bare());
    let simulated = order(driven_outcomes(&sim_driven, &sim_report));
    let observed = order(controlled_outcomes(&apps, &appset));
    assert_same_order(&simulated, &observed, "controller");
    eprintln!("{label}: the controller's order:\n{}", observed.join("\n"));
    if !fail {
        assert_regions_applied(&namespace).await;
    }
}

/// What the controller applied in each region is what that region's files say: the chart's
/// StatefulSet (release-labelled) with the replicas of the region's values file, the backend
/// with its overlay's image tag and patched setting.
async fn assert_regions_applied(prefix: &str) {
    use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
    use k8s_openapi::api::core::v1::ConfigMap;
    let client = support::client(1).await;
    for (region, replicas, tag) in [("eu-west", 3, "2.3.1"), ("us-east", 2, "2.3.0")] {
        let namespace = destination(prefix, region);
        let database: StatefulSet = kube::Api::namespaced(client.clone(), &namespace)
            .get("postgres")
            .await
            .expect("the chart's StatefulSet");
        assert_eq!(
            database.spec.as_ref().and_then(|s| s.replicas),
            Some(replicas),
            "{region}"
        );
        assert_eq!(
            database
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app.kubernetes.io/instance")),
            Some(&format!("platform-database-{region}"))
        );
        let backend: Deployment = kube::Api::namespaced(client.clone(), &namespace)
            .get("backend-api")
            .await
            .expect("the overlay's Deployment");
        let image = backend
            .spec
            .and_then(|s| s.template.spec)
            .and_then(|s| s.containers.into_iter().next())
            .and_then(|c| c.image);
        assert_eq!(
            image,
            Some(format!("registry.example.com/acme/backend:{tag}"))
        );
        let config: ConfigMap = kube::Api::namespaced(client.clone(), &namespace)
            .get("backend-config")
            .await
            .expect("the overlay's ConfigMap");
        assert_eq!(
            config.data.as_ref().and_then(|d| d.get("REGION")),
            Some(&region.to_owned())
        );
    }
}

#[tokio::test]
async fn the_controller_rolls_out_the_three_tier_stack_in_the_simulated_order() {
    compare_with_controller("sim-vs-controller", false).await;
}

#[tokio::test]
async fn the_controller_stops_at_a_failing_migration_as_simulated() {
    compare_with_controller("sim-vs-controller-fail", true).await;
}
