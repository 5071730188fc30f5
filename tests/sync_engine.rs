//! `flotilla sync` end to end on the real control plane (cluster 1 with its node simulator): the
//! order of Argo CD's sync, hook failures and SyncFail hooks, timeouts that name what blocks,
//! pruning, hooks re-run, CRDs with their custom resources, and resuming an interrupted sync.
//! Order is asserted from the operation's records (kept in execution order) and from creation
//! timestamps and conditions (one-second resolution, so compared with `<=`).

mod support;
mod sync_support;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};

use flotilla::sync::{HookPhase, HookType, OperationPhase, ResourceAction};
use sync_support::{fixture, parse, record, recorded, sync, sync_command};

fn created(object: &impl ResourceExt) -> Timestamp {
    object
        .meta()
        .creation_timestamp
        .as_ref()
        .expect("a creation timestamp")
        .0
}

#[tokio::test]
async fn shop_example_applies_in_argo_cd_order() {
    let ns = support::namespace(1, "sync-shop").await;
    let dir = fixture("shop", &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    assert!(run.success, "{}\n{:#?}", run.stderr, run.state);
    assert_eq!(run.state.phase, OperationPhase::Succeeded);
    assert_eq!(
        recorded(&run.state),
        [
            format!("Namespace {}", ns.name),
            "Job db-migrate".into(),
            "ConfigMap shop-config".into(),
            "Service shop-api".into(),
            "Deployment shop-api".into(),
            "Job smoke-test".into(),
        ]
    );
    let migrate = record(&run.state, "Job", "db-migrate");
    assert_eq!(migrate.hook_type, Some(HookType::PreSync));
    assert_eq!(migrate.hook_phase, Some(HookPhase::Succeeded));
    assert_eq!(migrate.action, Some(ResourceAction::Deleted));
    let migrate_finished = migrate.finished_at.as_ref().expect("finished").0;

    let jobs: Api<Job> = ns.api();
    support::eventually("the migrate Job to be gone", async || {
        match jobs
            .get_opt("db-migrate")
            .await
            .map_err(|e| e.to_string())?
        {
            None => Ok(()),
            Some(job) => Err(format!(
                "still there: {:?}",
                job.metadata.deletion_timestamp
            )),
        }
    })
    .await;
    let config: ConfigMap = ns.api().get("shop-config").await.unwrap();
    assert!(
        migrate_finished <= created(&config),
        "ConfigMap after the PreSync Job completed"
    );
    let deployment: Deployment = ns.api().get("shop-api").await.unwrap();
    assert!(created(&config) <= created(&deployment));
    let available = deployment
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| {
            c.iter()
                .find(|c| c.type_ == "Available" && c.status == "True")
        })
        .and_then(|c| c.last_transition_time.clone())
        .expect("the Deployment is Available");
    let smoke = jobs.get("smoke-test").await.unwrap();
    assert!(
        available.0 <= created(&smoke),
        "PostSync Job after the Deployment is Healthy"
    );
    assert_eq!(
        smoke
            .annotations()
            .get(flotilla::sync::TRACKING_ANNOTATION)
            .map(String::as_str),
        Some(format!("{0}:batch/Job:{0}/smoke-test", ns.name)).as_deref()
    );
}

#[tokio::test]
async fn failing_presync_job_aborts_and_runs_sync_fail_hooks() {
    let ns = support::namespace(1, "sync-presync-fail").await;
    let dir = fixture("presync-fail", &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    assert!(!run.success, "the exit code is non-zero");
    assert_eq!(run.state.phase, OperationPhase::Failed);
    assert!(
        run.state
            .message
            .contains(&format!("Job {}/db-migrate hook failed", ns.name)),
        "{}",
        run.state.message
    );
    assert_eq!(
        record(&run.state, "Job", "db-migrate").hook_phase,
        Some(HookPhase::Failed)
    );
    let alert = record(&run.state, "ConfigMap", "sync-failed");
    assert_eq!(alert.hook_type, Some(HookType::SyncFail));
    assert_eq!(alert.hook_phase, Some(HookPhase::Succeeded));
    let deployments: Api<Deployment> = ns.api();
    assert!(
        deployments.get_opt("api").await.unwrap().is_none(),
        "no Deployment"
    );
    let config_maps: Api<ConfigMap> = ns.api();
    assert!(
        config_maps.get_opt("sync-failed").await.unwrap().is_some(),
        "SyncFail hook ran"
    );
}

#[tokio::test]
async fn deployment_that_never_becomes_ready_times_out_naming_it() {
    let ns = support::namespace(1, "sync-never-ready").await;
    let dir = fixture("never-ready", &ns.name);
    let start = Instant::now();
    let run = sync(dir.path(), &ns.name, &["--timeout", "6s"]).await;
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "took {:?}",
        start.elapsed()
    );
    assert!(!run.success);
    assert_eq!(run.state.phase, OperationPhase::Failed);
    let message = &run.state.message;
    assert!(
        message.starts_with("timed out after 6s: wave 0: "),
        "{message}"
    );
    assert!(
        message.contains(&format!("Deployment {}/broken", ns.name)),
        "{message}"
    );
    assert!(message.contains("ImagePullBackOff"), "{message}");
    let config_maps: Api<ConfigMap> = ns.api();
    assert!(
        config_maps.get_opt("after-broken").await.unwrap().is_none(),
        "wave 1 never applied"
    );
}

#[tokio::test]
async fn prune_respects_prune_false_prune_last_and_reverse_waves() {
    let ns = support::namespace(1, "sync-prune").await;
    let first = fixture("prune-v1", &ns.name);
    let run = sync(first.path(), &ns.name, &[]).await;
    assert!(run.success, "{}", run.stderr);
    let second = fixture("prune-v2", &ns.name);
    let run = sync(second.path(), &ns.name, &["--prune"]).await;
    assert!(run.success, "{}\n{:#?}", run.stderr, run.state);
    assert_eq!(
        recorded(&run.state),
        [
            "ConfigMap wave-two",
            "ConfigMap wave-one",
            "ConfigMap stay",
            "ConfigMap last"
        ],
        "reverse wave order, PruneLast after the Sync phase; Prune=false kept"
    );
    assert_eq!(
        record(&run.state, "ConfigMap", "last").action,
        Some(ResourceAction::Pruned)
    );
    let config_maps: Api<ConfigMap> = ns.api();
    let mut names: Vec<String> = config_maps
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .filter(|n| n != "kube-root-ca.crt" && !n.starts_with("flotilla-operation-"))
        .collect();
    names.sort();
    assert_eq!(names, ["protected", "stay"]);
}

#[tokio::test]
async fn hooks_run_again_on_every_sync() {
    let ns = support::namespace(1, "sync-hooks-twice").await;
    let dir = fixture("hooks-twice", &ns.name);
    let jobs: Api<Job> = ns.api();
    let mut uids = Vec::new();
    for round in 0..2 {
        let run = sync(dir.path(), &ns.name, &[]).await;
        assert!(
            run.success,
            "round {round}: {}\n{:#?}",
            run.stderr, run.state
        );
        assert_eq!(
            record(&run.state, "Job", "migrate").action,
            Some(ResourceAction::Created)
        );
        uids.push(jobs.get("migrate").await.unwrap().uid());
    }
    assert_ne!(
        uids[0], uids[1],
        "the fixed-name hook was deleted and created again"
    );
    let checks: Vec<String> = jobs
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|j| j.name_any())
        .filter(|n| n.starts_with("check-"))
        .collect();
    assert_eq!(checks.len(), 2, "one generated hook per sync: {checks:?}");
}

#[tokio::test]
async fn crd_and_custom_resource_in_one_wave() {
    let ns = support::namespace(1, "sync-crd").await;
    let dir = fixture("crd", &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    assert!(run.success, "{}\n{:#?}", run.stderr, run.state);
    assert_eq!(
        recorded(&run.state),
        [
            format!(
                "CustomResourceDefinition widgets.{}.sync.flotilla.dev",
                ns.name
            ),
            "Widget gear".to_owned()
        ]
    );
    let group = format!("{}.sync.flotilla.dev", ns.name);
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&group, "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &ns.name, &resource);
    let gear = widgets.get("gear").await.unwrap();
    assert_eq!(gear.data["spec"]["size"], 3);
}

#[tokio::test]
async fn interrupted_sync_resumes_without_rerunning_finished_hooks() {
    let ns = support::namespace(1, "sync-interrupt").await;
    let dir = fixture("interrupt", &ns.name);
    let mut child = sync_command(dir.path(), &ns.name, &[])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting flotilla sync");
    let deployments: Api<Deployment> = ns.api();
    support::eventually(
        "wave 1 (Deployment slow) to be applied",
        async || match deployments
            .get_opt("slow")
            .await
            .map_err(|e| e.to_string())?
        {
            Some(_) => Ok(()),
            None => Err("not yet".to_owned()),
        },
    )
    .await;
    child.kill().expect("killing flotilla sync");
    child.wait().expect("reaping flotilla sync");
    let jobs: Api<Job> = ns.api();
    let migrate = jobs.get("migrate").await.unwrap().uid();
    let config_maps: Api<ConfigMap> = ns.api();
    assert!(
        config_maps.get_opt("done").await.unwrap().is_none(),
        "killed during wave 1"
    );

    let mut command = sync_command(dir.path(), &ns.name, &[]);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("running flotilla sync again");
    let run = parse(&output);
    assert!(run.success, "{}\n{:#?}", run.stderr, run.state);
    assert!(run.stderr.contains("resuming operation"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("apply PreSync"),
        "the hook is not applied again: {}",
        run.stderr
    );
    assert_eq!(
        jobs.get("migrate").await.unwrap().uid(),
        migrate,
        "the same hook Job"
    );
    assert_eq!(
        record(&run.state, "Job", "migrate").hook_phase,
        Some(HookPhase::Succeeded)
    );
    assert!(config_maps.get_opt("done").await.unwrap().is_some());
}
