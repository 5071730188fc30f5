//! `flotilla sync` end to end on the real control plane (cluster 1 with its node simulator): the
//! order of Argo CD's sync, hook failures and SyncFail hooks, timeouts that name what blocks,
//! pruning (`Prune=confirm` stopping it until `--confirm-prune`), hooks re-run, CRDs with their
//! custom resources, resuming an interrupted sync, the sync options (Replace, Force,
//! ApplyOutOfSyncOnly, CreateNamespace, SkipDryRunOnMissingResource), retries, dry runs, git
//! sources and Ctrl-C.
//! Order is asserted from the operation's records (kept in execution order) and from creation
//! timestamps and conditions (one-second resolution, so compared with `<=`).

mod support;
mod sync_support;

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};

use flotilla::cluster::api_server::operation_configmap::OPERATION_KEY;
use flotilla_core::sync::{HookPhase, HookType, OperationPhase, ResourceAction};
use sync_support::{
    SyncRun, fixture, names, parse, record, record_with_action, recorded, start_sync_until_applied,
    sync, sync_command, synced,
};

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
    let (ns, _dir, run) = synced("sync-shop", "shop").await;
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
            .get(flotilla_core::sync::TRACKING_ANNOTATION)
            .map(String::as_str),
        Some(format!("{0}:batch/Job:{0}/smoke-test", ns.name)).as_deref()
    );
}

#[tokio::test]
async fn failing_presync_job_aborts_and_runs_sync_fail_hooks() {
    let ns = support::namespace(1, "sync-presync-fail").await;
    let dir = fixture("presync-fail", &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    run.assert_failed_with(&format!("Job {}/db-migrate hook failed", ns.name));
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
    // The Deployment never becomes ready: only the timeout ends the sync (its message says so).
    let run = sync(dir.path(), &ns.name, &["--timeout", "6s"]).await;
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
    run.assert_succeeded();
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
    let mut names = names(&config_maps).await;
    names.retain(|n| n != "kube-root-ca.crt" && !n.starts_with("flotilla-operation-"));
    assert_eq!(names, ["protected", "stay"]);
}

#[tokio::test]
async fn wave_delay_pauses_before_each_new_wave() {
    let ns = support::namespace(1, "sync-wave-delay").await;
    let dir = fixture("prune-v1", &ns.name);
    let run = sync(dir.path(), &ns.name, &["--wave-delay", "2s"]).await;
    run.assert_succeeded();
    // Times are kept to the second: a pause of 2 s puts at least 2 s between the second counts.
    let gap = |before: &str, after: &str| {
        let finished = record(&run.state, "ConfigMap", before)
            .finished_at
            .clone()
            .expect("finished")
            .0;
        let started = record(&run.state, "ConfigMap", after)
            .started_at
            .clone()
            .expect("started")
            .0;
        started.duration_since(finished).as_secs()
    };
    assert!(gap("stay", "wave-one") >= 2, "{:#?}", run.state.resources);
    assert!(
        gap("wave-one", "wave-two") >= 2,
        "{:#?}",
        run.state.resources
    );
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
    let mut checks = names(&jobs).await;
    checks.retain(|n| n.starts_with("check-"));
    assert_eq!(checks.len(), 2, "one generated hook per sync: {checks:?}");
}

#[tokio::test]
async fn crd_and_custom_resource_in_one_wave() {
    let (ns, _dir, run) = synced("sync-crd", "crd").await;
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

/// Runs the `interrupt` fixture and kills `flotilla sync` while it waits on wave 1 (the PreSync
/// hook ran); returns the fixture and the hook Job's uid.
async fn killed_during_wave_one(ns: &support::TestNamespace) -> (tempfile::TempDir, String) {
    let dir = fixture("interrupt", &ns.name);
    let mut child = start_sync_until_applied(ns, dir.path(), &[], "slow").await;
    child.kill().expect("killing flotilla sync");
    child.wait().expect("reaping flotilla sync");
    let jobs: Api<Job> = ns.api();
    let migrate = jobs.get("migrate").await.unwrap().uid().expect("a uid");
    let config_maps: Api<ConfigMap> = ns.api();
    assert!(
        config_maps.get_opt("done").await.unwrap().is_none(),
        "killed during wave 1"
    );
    (dir, migrate)
}

/// Runs `flotilla sync` on `dir` again, expecting it to resume and succeed without applying the
/// hook again and with the hook Job `migrate` (uid `migrate`) recorded as succeeded.
async fn resume_keeping_the_hook(
    ns: &support::TestNamespace,
    dir: &Path,
    migrate: &str,
) -> SyncRun {
    let mut command = sync_command(dir, &ns.name, &[]);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("running flotilla sync again");
    let run = parse(&output);
    run.assert_succeeded();
    assert!(run.stderr.contains("resuming operation"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("apply PreSync") && !run.stderr.contains("delete previous hooks"),
        "the hook is neither deleted nor applied again: {}",
        run.stderr
    );
    let jobs: Api<Job> = ns.api();
    assert_eq!(
        jobs.get("migrate").await.unwrap().uid().as_deref(),
        Some(migrate),
        "the same hook Job"
    );
    assert_eq!(
        record(&run.state, "Job", "migrate").hook_phase,
        Some(HookPhase::Succeeded)
    );
    let config_maps: Api<ConfigMap> = ns.api();
    assert!(config_maps.get_opt("done").await.unwrap().is_some());
    run
}

#[tokio::test]
async fn interrupted_sync_resumes_without_rerunning_finished_hooks() {
    let ns = support::namespace(1, "sync-interrupt").await;
    let (dir, migrate) = killed_during_wave_one(&ns).await;
    resume_keeping_the_hook(&ns, dir.path(), &migrate).await;
}

/// The crash window between writing a hook and storing its record: the stored operation lacks
/// the hook's record while its Job exists. The resumed operation recognises the Job as its own
/// (its operation mark) and adopts it instead of deleting it and running the hook again.
#[tokio::test]
async fn a_hook_created_just_before_a_crash_is_adopted_not_run_again() {
    let ns = support::namespace(1, "sync-adopt").await;
    let (dir, migrate) = killed_during_wave_one(&ns).await;
    let stores: Api<ConfigMap> = ns.api();
    let store_name = format!("flotilla-operation-{}", ns.name);
    let mut store = stores.get(&store_name).await.expect("the stored operation");
    let data = store.data.as_mut().expect("data");
    let mut state: serde_json::Value =
        serde_json::from_str(&data[OPERATION_KEY]).expect("operation JSON");
    let resources = state["resources"].as_array_mut().expect("resources");
    let before = resources.len();
    resources.retain(|r| r["kind"] != "Job");
    assert_eq!(resources.len(), before - 1, "the hook's record removed");
    data.insert(OPERATION_KEY.to_owned(), state.to_string());
    stores
        .replace(&store_name, &Default::default(), &store)
        .await
        .expect("stores the operation without the hook's record");

    let run = resume_keeping_the_hook(&ns, dir.path(), &migrate).await;
    assert!(
        run.stderr
            .contains("adopt hooks PreSync wave 0 created before a restart: Job"),
        "{}",
        run.stderr
    );
}

/// The managers and operations of an object's managed fields, e.g. `flotilla Apply`.
fn managers(object: &impl ResourceExt) -> Vec<String> {
    object
        .meta()
        .managed_fields
        .iter()
        .flatten()
        .map(|entry| {
            format!(
                "{} {}",
                entry.manager.as_deref().unwrap_or(""),
                entry.operation.as_deref().unwrap_or("")
            )
        })
        .collect()
}

/// Merge-patches a ConfigMap's data as another field manager would.
async fn edit_data(api: &Api<ConfigMap>, name: &str, data: serde_json::Value) {
    api.patch(
        name,
        &PatchParams {
            field_manager: Some("someone-else".to_owned()),
            ..PatchParams::default()
        },
        &Patch::Merge(serde_json::json!({ "data": data })),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn replace_writes_the_whole_object_and_apply_merges() {
    let (ns, dir, run) = synced("sync-replace", "replace").await;
    let config_maps: Api<ConfigMap> = ns.api();
    let replaced = config_maps.get("replaced").await.unwrap();
    assert_eq!(
        record(&run.state, "ConfigMap", "replaced").action,
        Some(ResourceAction::Created)
    );
    assert!(
        managers(&replaced).contains(&"flotilla Update".to_owned()),
        "{:?}",
        managers(&replaced)
    );
    let applied = config_maps.get("applied").await.unwrap();
    assert!(
        managers(&applied).contains(&"flotilla Apply".to_owned()),
        "{:?}",
        managers(&applied)
    );

    for name in ["replaced", "applied"] {
        edit_data(&config_maps, name, serde_json::json!({"extra": "x"})).await;
    }
    let run = sync(dir.path(), &ns.name, &[]).await;
    run.assert_succeeded();
    let data = |c: ConfigMap| c.data.unwrap_or_default().into_keys().collect::<Vec<_>>();
    assert_eq!(
        data(config_maps.get("replaced").await.unwrap()),
        ["a"],
        "replaced whole"
    );
    assert_eq!(
        data(config_maps.get("applied").await.unwrap()),
        ["a", "extra"],
        "merged"
    );
}

#[tokio::test]
async fn force_recreates_a_job_whose_template_changed() {
    let (ns, _first, _) = synced("sync-force", "force-v1").await;
    let jobs: Api<Job> = ns.api();
    let before = jobs.get("rebuilt").await.unwrap().uid();

    let second = fixture("force-v2", &ns.name);
    let run = sync(second.path(), &ns.name, &[]).await;
    assert!(!run.success, "the Job without Force=true cannot change");
    let message = &run.state.message;
    assert!(
        message.starts_with(&format!(
            "nothing was written: the server rejected 1 object(s) in a dry run: Job {}/pinned: ",
            ns.name
        )) && message.contains("field is immutable"),
        "{message}"
    );
    assert_eq!(
        jobs.get("rebuilt").await.unwrap().uid(),
        before,
        "nothing was written, not even the Job that could be recreated"
    );

    let run = sync(second.path(), &ns.name, &["--sync-option", "Force=true"]).await;
    run.assert_succeeded();
    // Recreated: the update was refused, so the Job was deleted and created again.
    record_with_action(&run.state, "Job", "rebuilt", ResourceAction::Created);
    let job = jobs.get("rebuilt").await.unwrap();
    assert_ne!(job.uid(), before, "deleted and created again");
    let image = job.spec.unwrap().template.spec.unwrap().containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("registry.example.com/work:2"));
}

#[tokio::test]
async fn apply_out_of_sync_only_skips_objects_that_match() {
    let (ns, dir, _) = synced("sync-out-of-sync", "out-of-sync-only").await;
    let config_maps: Api<ConfigMap> = ns.api();
    edit_data(&config_maps, "drifted", serde_json::json!({"k": "changed"})).await;
    let steady_version = config_maps.get("steady").await.unwrap().resource_version();

    let option = ["--sync-option", "ApplyOutOfSyncOnly=true"];
    let run = sync(dir.path(), &ns.name, &option).await;
    run.assert_succeeded();
    let steady = record_with_action(&run.state, "ConfigMap", "steady", ResourceAction::Unchanged);
    assert_eq!(
        steady.message,
        "already in sync (ApplyOutOfSyncOnly=true), not applied"
    );
    record_with_action(
        &run.state,
        "ConfigMap",
        "drifted",
        ResourceAction::Configured,
    );
    let data = config_maps
        .get("drifted")
        .await
        .unwrap()
        .data
        .unwrap_or_default();
    assert_eq!(data.get("k").map(String::as_str), Some("v"), "drift undone");
    assert_eq!(
        config_maps.get("steady").await.unwrap().resource_version(),
        steady_version
    );
}

#[tokio::test]
async fn apply_out_of_sync_only_recognises_unchanged_workloads() {
    let (ns, dir, _) = synced("sync-out-of-sync-shop", "shop").await;
    let option = ["--sync-option", "ApplyOutOfSyncOnly=true"];
    let run = sync(dir.path(), &ns.name, &option).await;
    run.assert_succeeded();
    let skipped = [
        ("Namespace", ns.name.as_str()),
        ("ConfigMap", "shop-config"),
        ("Service", "shop-api"),
        ("Deployment", "shop-api"),
    ];
    for (kind, name) in skipped {
        let found = record_with_action(&run.state, kind, name, ResourceAction::Unchanged);
        assert_eq!(
            found.message, "already in sync (ApplyOutOfSyncOnly=true), not applied",
            "{kind} {name}"
        );
    }
    record_with_action(&run.state, "Job", "smoke-test", ResourceAction::Created);
}

#[tokio::test]
async fn create_namespace_creates_the_missing_destination_first() {
    let ns = support::namespace(1, "sync-create-ns").await;
    let destination = format!("{}-auto", ns.name);
    let dir = fixture("create-namespace", &ns.name);
    let namespaces: Api<Namespace> = Api::all(ns.client.clone());
    let without = sync(dir.path(), &destination, &[]).await;
    assert!(
        !without.success,
        "no namespace without CreateNamespace=true"
    );
    assert!(namespaces.get_opt(&destination).await.unwrap().is_none());

    let run = sync(
        dir.path(),
        &destination,
        &["--sync-option", "CreateNamespace=true"],
    )
    .await;
    run.assert_succeeded();
    assert_eq!(
        recorded(&run.state),
        [
            format!("Namespace {destination}"),
            "ConfigMap inside".to_owned()
        ]
    );
    assert_eq!(
        record(&run.state, "Namespace", &destination).action,
        Some(ResourceAction::Created)
    );
    let created = namespaces.get(&destination).await.unwrap();
    assert!(
        !created
            .annotations()
            .contains_key(flotilla_core::sync::TRACKING_ANNOTATION),
        "never pruned: not tracked"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &destination);
    assert!(config_maps.get_opt("inside").await.unwrap().is_some());
    namespaces
        .delete(&destination, &Default::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn unserved_kinds_fail_before_writing_unless_skip_dry_run() {
    let ns = support::namespace(1, "sync-missing-kind").await;
    let dir = fixture("missing-kind", &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    assert!(!run.success);
    assert_eq!(run.state.phase, OperationPhase::Failed);
    assert_eq!(
        run.state.message,
        format!(
            "nothing was written: the server does not serve the kind of Gadget {}/g",
            ns.name
        )
    );
    assert_eq!(recorded(&run.state), ["Gadget g"]);
    let config_maps: Api<ConfigMap> = ns.api();
    assert!(
        config_maps.get_opt("first").await.unwrap().is_none(),
        "nothing written"
    );

    let dir = fixture("missing-kind-skip", &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    run.assert_succeeded();
    let crd = format!("gadgets.{}.skip.flotilla.dev", ns.name);
    assert_eq!(
        recorded(&run.state),
        [
            format!("CustomResourceDefinition {crd}"),
            "Gadget g".to_owned()
        ]
    );
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&format!("{}.skip.flotilla.dev", ns.name), "v1", "Gadget"),
        "gadgets",
    );
    let gadgets: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &ns.name, &resource);
    assert!(gadgets.get_opt("g").await.unwrap().is_some());
}

/// An Application file for a manifest directory, with `syncPolicy.retry`.
fn application_with_retry(
    dir: &std::path::Path,
    namespace: &str,
    limit: u32,
    backoff: &str,
) -> tempfile::NamedTempFile {
    let text = format!(
        "apiVersion: flotilla.dev/v1alpha1\nkind: Application\nmetadata: {{name: {namespace}}}\n\
         spec:\n  project: default\n  source: {{repoURL: {}, path: .}}\n  \
         destination: {{namespace: {namespace}}}\n  \
         syncPolicy: {{retry: {{limit: {limit}, backoff: {{duration: {backoff}, factor: 1}}}}}}\n",
        dir.display()
    );
    let file = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

#[tokio::test]
async fn retry_succeeds_once_the_failure_goes_away() {
    use std::io::BufRead;
    let ns = support::namespace(1, "sync-retry").await;
    let dir = fixture("retry", &ns.name);
    let app = application_with_retry(dir.path(), &ns.name, 3, "3s");
    let mut child = sync_command(app.path(), &ns.name, &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting flotilla sync");
    let stderr = child.stderr.take().unwrap();
    let (lines, first_retry) = tokio::task::spawn_blocking(move || {
        let mut lines = Vec::new();
        let mut reader = std::io::BufReader::new(stderr).lines();
        for line in reader.by_ref() {
            let line = line.unwrap();
            let retrying = line.starts_with("retry 1 in");
            lines.push(line);
            if retrying {
                return (lines, reader);
            }
        }
        panic!("no retry announced: {lines:#?}");
    })
    .await
    .unwrap();
    let late = format!("{}-late", ns.name);
    let namespaces: Api<Namespace> = Api::all(ns.client.clone());
    namespaces
        .create(
            &Default::default(),
            &support::object(serde_json::json!({"metadata": {"name": late}})),
        )
        .await
        .unwrap();
    let rest = tokio::task::spawn_blocking(move || {
        let rest: Vec<String> = first_retry.map_while(Result::ok).collect();
        (rest, child.wait_with_output().unwrap())
    });
    let (rest, output) = rest.await.unwrap();
    let state: flotilla_core::sync::OperationState =
        serde_json::from_slice(&output.stdout).unwrap();
    assert!(output.status.success(), "{lines:#?}\n{rest:#?}\n{state:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("namespaces \"") && l.contains("not found")),
        "{lines:#?}"
    );
    assert!(!rest.iter().any(|l| l.starts_with("retry 2")), "{rest:#?}");
    assert_eq!(state.phase, OperationPhase::Succeeded);
    let config_maps: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &late);
    assert!(config_maps.get_opt("late").await.unwrap().is_some());
    namespaces.delete(&late, &Default::default()).await.unwrap();
}

#[tokio::test]
async fn retry_gives_up_after_its_limit() {
    let ns = support::namespace(1, "sync-retry-limit").await;
    let dir = fixture("retry", &ns.name);
    let app = application_with_retry(dir.path(), &ns.name, 2, "1s");
    let start = Instant::now();
    let run = sync(app.path(), &ns.name, &[]).await;
    assert!(!run.success);
    assert!(
        start.elapsed() >= Duration::from_secs(2),
        "two pauses of 1s"
    );
    let retries: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("retry "))
        .collect();
    assert_eq!(retries.len(), 2, "{}", run.stderr);
    // Its one object is not sent as a dry run first: its apply, which the server refuses,
    // checks it.
    assert!(
        retries[1].starts_with(&format!(
            "retry 2 in 1s after: wave 0: ConfigMap {}-late/late apply failed: ",
            ns.name
        )),
        "{retries:?}"
    );
    run.assert_failed_with(&format!(
        "ConfigMap {}-late/late apply failed: namespaces \"{}-late\" not found",
        ns.name, ns.name
    ));
}

#[tokio::test]
async fn dry_run_writes_nothing() {
    let ns = support::namespace(1, "sync-dry-run").await;
    let dir = fixture("shop", &ns.name);
    let run = sync(dir.path(), &ns.name, &["--dry-run"]).await;
    run.assert_succeeded();
    assert_eq!(run.state.phase, OperationPhase::Succeeded);
    assert_eq!(run.state.resources.len(), 6, "{:#?}", recorded(&run.state));
    assert!(
        run.state
            .resources
            .iter()
            .all(|r| r.message.starts_with("dry run")),
        "{:#?}",
        run.state
    );
    let config_maps: Api<ConfigMap> = ns.api();
    assert_eq!(
        names(&config_maps).await,
        ["kube-root-ca.crt"],
        "no ConfigMap, not even the operation's"
    );
    let deployments: Api<Deployment> = ns.api();
    let jobs: Api<Job> = ns.api();
    let services: Api<Service> = ns.api();
    let written = [
        names(&deployments).await,
        names(&jobs).await,
        names(&services).await,
    ];
    assert!(written.iter().all(Vec::is_empty), "{written:?}");
}

#[tokio::test]
async fn application_from_a_file_git_repository_records_the_commit() {
    let ns = support::namespace(1, "sync-git").await;
    let manifests = fixture("create-namespace", &ns.name);
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join("deploy")).unwrap();
    std::fs::copy(
        manifests.path().join("app.yaml"),
        repo.path().join("deploy/app.yaml"),
    )
    .unwrap();
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(repo.path())
            .output()
            .expect("running git");
        assert!(output.status.success(), "git {args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "manifests"]);
    let commit = git(&["rev-parse", "HEAD"]);
    let app = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    std::fs::write(
        app.path(),
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {0}}}\n\
             spec:\n  project: default\n  source: {{repoURL: 'file://{1}', targetRevision: main, path: deploy}}\n  \
             destination: {{namespace: {0}}}\n",
            ns.name,
            repo.path().display()
        ),
    )
    .unwrap();
    let run = sync(app.path(), &ns.name, &[]).await;
    run.assert_succeeded();
    assert_eq!(run.state.revision.as_deref(), Some(commit.as_str()));
    let config_maps: Api<ConfigMap> = ns.api();
    assert!(config_maps.get_opt("inside").await.unwrap().is_some());
}

#[tokio::test]
async fn sigint_terminates_the_operation_cleanly() {
    let ns = support::namespace(1, "sync-sigint").await;
    let dir = fixture("never-ready", &ns.name);
    let child = start_sync_until_applied(&ns, dir.path(), &["--timeout", "2m"], "broken").await;
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("running kill");
    assert!(interrupted.success());
    // Ended by the signal, not by its 2-minute timeout: the state says terminated by request.
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .expect("waiting for flotilla sync");
    let run = parse(&output);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a clean exit, not killed: {}",
        run.stderr
    );
    assert_eq!(run.state.phase, OperationPhase::Terminated);
    assert_eq!(run.state.message, "terminated by request during wave 0");
    assert!(run.state.finished_at.is_some());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let config_maps: Api<ConfigMap> = ns.api();
    assert!(
        config_maps.get_opt("after-broken").await.unwrap().is_none(),
        "nothing applied after"
    );
}

/// A field the kind does not have is refused by the server's strict field validation in the dry
/// run, named, and nothing is written (a lenient server would drop `replicaz` and sync one
/// replica).
#[tokio::test]
async fn an_unknown_field_is_refused_by_strict_validation_before_anything_is_written() {
    let ns = support::namespace(1, "sync-unknown-field").await;
    let dir = fixture("unknown-field", &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    let message = &run.state.message;
    run.assert_failed_with(&format!(
        "nothing was written: the server rejected 1 object(s) in a dry run: Deployment {}/web: ",
        ns.name
    ));
    assert!(
        message.contains(".spec.replicaz: field not declared in schema"),
        "{message}"
    );
    let config_maps: Api<ConfigMap> = ns.api();
    let deployments: Api<Deployment> = ns.api();
    assert!(config_maps.get_opt("settings").await.unwrap().is_none());
    assert!(deployments.get_opt("web").await.unwrap().is_none());
}

#[tokio::test]
async fn an_object_the_server_rejects_fails_the_sync_before_anything_is_written() {
    let ns = support::namespace(1, "sync-rejected").await;
    let dir = fixture("rejected", &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    assert!(!run.success);
    assert_eq!(run.state.phase, OperationPhase::Failed);
    let message = &run.state.message;
    assert!(
        message.starts_with(&format!(
            "nothing was written: the server rejected 1 object(s) in a dry run: Deployment {}/api: ",
            ns.name
        )) && message.contains("spec.selector"),
        "{message}"
    );
    assert_eq!(recorded(&run.state), ["Deployment api"]);
    let config_maps: Api<ConfigMap> = ns.api();
    let jobs: Api<Job> = ns.api();
    let deployments: Api<Deployment> = ns.api();
    for (kind, missing) in [
        (
            "ConfigMap early",
            config_maps.get_opt("early").await.unwrap().is_none(),
        ),
        (
            "ConfigMap same-wave",
            config_maps.get_opt("same-wave").await.unwrap().is_none(),
        ),
        (
            "Job migrate",
            jobs.get_opt("migrate").await.unwrap().is_none(),
        ),
        (
            "Deployment api",
            deployments.get_opt("api").await.unwrap().is_none(),
        ),
    ] {
        assert!(missing, "{kind} was not written");
    }
}

#[tokio::test]
async fn an_object_in_a_namespace_of_the_sync_is_dry_run_when_its_wave_comes() {
    let ns = support::namespace(1, "sync-rejected-later").await;
    let dir = fixture("rejected-later", &ns.name);
    let run = sync(dir.path(), &ns.name, &[]).await;
    assert!(!run.success);
    assert_eq!(run.state.phase, OperationPhase::Failed);
    let later = format!("{}-later", ns.name);
    assert!(
        run.state.message.starts_with(&format!(
            "the server rejected 1 object(s) in a dry run: Deployment {later}/api: "
        )),
        "{}",
        run.state.message
    );
    let first: Api<ConfigMap> = ns.api();
    assert!(
        first.get_opt("first").await.unwrap().is_some(),
        "wave 0 was written"
    );
    let in_later: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &later);
    assert!(
        in_later.get_opt("later").await.unwrap().is_none(),
        "nothing of wave 1 was written"
    );
}

#[tokio::test]
async fn prune_confirm_stops_the_sync_until_confirm_prune() {
    let ns = support::namespace(1, "sync-prune-confirm").await;
    let first = fixture("prune-confirm-v1", &ns.name);
    sync(first.path(), &ns.name, &[]).await.assert_succeeded();
    let second = fixture("prune-confirm-v2", &ns.name);
    let config_maps: Api<ConfigMap> = ns.api();

    let previewed = sync(second.path(), &ns.name, &["--prune", "--dry-run"]).await;
    previewed.assert_succeeded();
    assert_eq!(
        record(&previewed.state, "ConfigMap", "critical").message,
        "would be pruned once confirmed (Prune=confirm; dry run)"
    );

    let waiting = sync(second.path(), &ns.name, &["--prune"]).await;
    assert!(!waiting.success, "exit code 1 while unconfirmed");
    let message = format!(
        "prune wave 0: waiting for pruning confirmation of ConfigMap {}/critical (Prune=confirm)",
        ns.name
    );
    assert_eq!(
        (waiting.state.phase, waiting.state.message.as_str()),
        (OperationPhase::Running, message.as_str())
    );
    assert!(
        waiting.stderr.contains(&format!(
            "{message}; run again with --confirm-prune to prune them (the operation resumes)"
        )),
        "{}",
        waiting.stderr
    );
    assert!(config_maps.get_opt("critical").await.unwrap().is_some());

    let confirmed = sync(second.path(), &ns.name, &["--prune", "--confirm-prune"]).await;
    confirmed.assert_succeeded();
    assert_eq!(
        confirmed.state.operation_id, waiting.state.operation_id,
        "the stopped operation resumed"
    );
    record_with_action(
        &confirmed.state,
        "ConfigMap",
        "critical",
        ResourceAction::Pruned,
    );
    assert!(config_maps.get_opt("critical").await.unwrap().is_none());
}
