//! The simulator against the real thing: the seed's three-tier stack rolled out by the same loop
//! (RollingSync passes, the real executor, the same observation) once on the embedded cluster
//! with a virtual clock and once on the real control plane (cluster 1: kube-apiserver, the
//! controller manager, the node simulator). The order must be the same: which Application syncs
//! in which step and after which, each sync's phases and waves, each object's record (hooks,
//! their outcome and deletion). Also with the migration failing (`sim.flotilla.dev/fail` on its
//! pod, which the node simulator and the embedded cluster both honour).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::jiff::Timestamp;

use flotilla::api::application_set::RolloutStrategy;
use flotilla::cli::render::AppSetArgs;
use flotilla::cli::simulate::{LoadedSources, sim_app};
use flotilla::cluster::kube_cluster::KubeCluster;
use flotilla::simulate::clock::VirtualClock;
use flotilla::simulate::driver::{Driven, drive};
use flotilla::simulate::report::{self, Report};
use flotilla::simulate::{ClusterBehavior, SimApp, SimCluster};

const REPO_URL: &str = "https://git.example.com/acme/platform-manifests.git";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The three-tier stack's Applications, deploying to `namespace`, with manifests from `repo`.
fn three_tier(namespace: &str, repo: &Path) -> (Vec<SimApp>, RolloutStrategy, String) {
    let args = AppSetArgs {
        appset: root().join("examples/three-tier-stack.yaml"),
        repos: vec![format!("{REPO_URL}={}", repo.display())],
        clusters: None,
    };
    let rendered = args.render().expect("the example renders");
    let mut sources = LoadedSources::default();
    let apps: Vec<SimApp> = rendered
        .applications
        .iter()
        .map(|application| {
            let mut application = application.clone();
            application.spec.destination.namespace = Some(namespace.to_owned());
            sim_app(&application, &rendered.repos, &mut sources).expect("a usable source")
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

/// The platform manifests, with the migration Job's pod failing when `fail` is set.
fn manifests(fail: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = root().join("examples/repos/platform-manifests");
    for component in ["database", "backend", "frontend"] {
        std::fs::create_dir_all(dir.path().join(component)).expect("mkdir");
        for entry in std::fs::read_dir(source.join(component)).expect("readable") {
            let path = entry.expect("entry").path();
            let mut text = std::fs::read_to_string(&path).expect("readable");
            if fail && path.ends_with("database/migrate.yaml") {
                text = text.replace(
                    "sim.flotilla.dev/ready-after: 4s",
                    "sim.flotilla.dev/ready-after: 4s\n        sim.flotilla.dev/fail: \"true\"",
                );
                assert!(text.contains("sim.flotilla.dev/fail"));
            }
            let target = dir
                .path()
                .join(component)
                .join(path.file_name().expect("name"));
            std::fs::write(target, text).expect("writable");
        }
    }
    dir
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
                    let driven = drive(&apps, &strategy, &clusters, clock, &|_| {}).await;
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
    let driven = drive(&apps, &strategy, &clusters, clock, &|_| {}).await;
    let report = report::build(&driven, &clock, "RollingSync");
    (driven, report)
}

/// Per Application, in the order their syncs started: its step, how its sync ended, its
/// segments (phase and wave), and every record (phase, wave, hook, outcome, action).
fn order(driven: &Driven, report: &Report) -> Vec<String> {
    let mut runs: Vec<_> = driven.runs.iter().collect();
    runs.sort_by_key(|run| {
        (
            run.triggered_at.is_none(),
            run.triggered_at,
            run.name.clone(),
        )
    });
    let mut lines = Vec::new();
    for run in runs {
        let app = report
            .applications
            .iter()
            .find(|a| a.name == run.name)
            .expect("reported");
        let segments: Vec<&str> = app.segments.iter().map(|s| s.label.as_str()).collect();
        lines.push(format!(
            "{} step {:?} {} [{}]",
            run.name,
            app.step,
            app.result,
            segments.join(", ")
        ));
        for record in run.operation.iter().flat_map(|op| &op.resources) {
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

/// Each Application's sync starts only after the previous step's ended.
fn assert_steps_in_sequence(report: &Report, side: &str) {
    let started: Vec<_> = report
        .applications
        .iter()
        .filter(|a| a.start.is_some())
        .collect();
    for pair in started.windows(2) {
        assert!(
            pair[0].end <= pair[1].start,
            "{side}: {} ({:?}) must end before {} starts ({:?})",
            pair[0].name,
            pair[0].end,
            pair[1].name,
            pair[1].start
        );
    }
}

async fn compare(label: &str, fail: bool) {
    let namespace = support::namespace(1, label).await;
    let repo = manifests(fail);
    let (sim_driven, sim_report) = simulated(&namespace.name, repo.path());
    let (real_driven, real_report) = real(&namespace, repo.path()).await;
    let simulated = order(&sim_driven, &sim_report);
    let observed = order(&real_driven, &real_report);
    assert_eq!(
        simulated,
        observed,
        "simulated:\n{}\nreal:\n{}",
        simulated.join("\n"),
        observed.join("\n")
    );
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
