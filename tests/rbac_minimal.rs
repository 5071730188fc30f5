//! The controller's shipped RBAC is minimal, and a missing verb is named, not a hang. The RBAC
//! objects of `kubectl kustomize deploy/namespaced` (the Role `flotilla-controller`, the
//! ClusterRole `flotilla-application-controller` bound in the managed namespace, and
//! `namespace-watcher.yaml`'s ClusterRole) are applied into a test's namespaces, and the real
//! `flotilla controller` runs with a kubeconfig that impersonates the ServiceAccount, through one
//! scenario that uses every right: an ApplicationSet (a two-step RollingSync over a list
//! generator, its `flotilla.dev/refresh` annotation set, the first step's web analysis reading
//! its headers from a Secret) generates two Applications, which sync ConfigMaps into the managed
//! namespace, replace one (`Replace=true`) and prune one that git no longer has; an Application
//! of that ApplicationSet it no longer generates is deleted; an expired member Lease of
//! `--shards auto` is deleted; notifications are configured, so their ConfigMap and Secret are
//! read, deliveries are made and the ledger is written; Events are published, and repeated. With
//! the whole RBAC the scenario completes with nothing forbidden. Then, for each verb of each rule
//! in turn, the same scenario runs with only that verb removed, and the refusal
//! (`cannot <verb> resource "<resource>"`) is named within a bounded wait where an operator looks:
//! twice in the controller's log at WARN or ERROR (the default level shows them; twice: it tried
//! again, nothing hung), or in an Application's or ApplicationSet's status or an Event (written
//! once the attempt ended); and `/healthz` answers. A verb whose removal changed nothing would
//! time out here: it is not needed and does not belong in the Role. The removals run three at a
//! time, each in namespaces of its own.

mod controller_support;
mod support;

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use flotilla_core::api::{Application, ApplicationSet};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use controller_support::{commit, repository};
use support::git_remote::free_port;
use support::namespaced_deploy::{
    SERVICE_ACCOUNT, apply_all, delete_cluster_scoped, deployed_for, namespace_watcher,
};
use support::recording_http::RecordingServer;
use support::server_process::ServerProcess;
use support::{
    TestNamespace, apply, eventually_within, http_get, impersonating_kubeconfig, object,
};

/// How long a refusal may take to be named, and to be named again (a repeated Event comes
/// with the second step of the rollout, late on a loaded machine).
const NAMED_WITHIN: Duration = Duration::from_secs(120);
/// How many scenarios run at once.
const AT_ONCE: usize = 3;
/// The Role and ClusterRoles whose verbs are removed one at a time.
const ROLE: &str = "flotilla-controller";
const APPLICATION_CONTROLLER: &str = "flotilla-application-controller";
const NAMESPACE_WATCHER: &str = "flotilla-namespace-watcher";
/// The ConfigMap the Application deploys, and the one it tracks that git no longer has.
const DEPLOYED: &str = "web-config";
const PRUNED: &str = "gone-config";
/// The ConfigMap the second step's Application deploys.
const SECOND: &str = "api-config";
/// The ConfigMap the Application replaces (`Replace=true`): it exists, with other data.
const REPLACED: &str = "replaced-config";
/// The expired member Lease (`<leader Lease>-<identity>`).
const EXPIRED_MEMBER: &str = "flotilla-controller-departed";

/// Where a refusal was named.
struct Named {
    /// How many WARN or ERROR lines of the log name it.
    logged: usize,
    /// The first of them.
    first_line: Option<String>,
    /// The first Application status text or Event note naming it.
    kept: Option<String>,
}

/// One verb of one rule of a shipped role, removed for a run.
#[derive(Clone, Debug)]
struct Removed {
    /// The role's name as shipped.
    role: &'static str,
    /// The rule's index in the role.
    rule: usize,
    verb: String,
    /// The rule's resource, which the API server names when it refuses the verb (`*`: whichever
    /// the controller reached for first).
    resource: String,
}

impl Removed {
    /// What the API server says when it refuses the verb.
    fn refusal(&self) -> String {
        match self.resource.as_str() {
            "*" => format!("cannot {} resource \"", self.verb),
            resource => format!("cannot {} resource \"{resource}\"", self.verb),
        }
    }
}

/// Every verb of every rule of `role` in `objects`.
fn verbs_of(objects: &[Value], role: &'static str) -> Vec<Removed> {
    let shipped = role_of(objects, role);
    let rules = shipped["rules"].as_array().expect("rules");
    let mut removed = Vec::new();
    for (index, rule) in rules.iter().enumerate() {
        let resources = rule["resources"].as_array().expect("resources");
        assert_eq!(
            resources.len(),
            1,
            "{role}: one resource per rule, so that each removal is named: {rule}"
        );
        let resource = resources[0].as_str().expect("a resource");
        for verb in rule["verbs"].as_array().expect("verbs") {
            removed.push(Removed {
                role,
                rule: index,
                verb: verb.as_str().expect("a verb").to_owned(),
                resource: resource.to_owned(),
            });
        }
    }
    removed
}

/// The Role or ClusterRole shipped as `role` in `objects` (cluster-scoped names carry a suffix).
fn role_of<'a>(objects: &'a [Value], role: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| {
            o["kind"].as_str().is_some_and(|k| k.ends_with("Role"))
                && o["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n == role || n.starts_with(&format!("{role}-")))
        })
        .unwrap_or_else(|| panic!("the shipped role {role}"))
}

/// `objects` with `removed`'s verb taken out of its rule (the rule goes when it has no verb left).
fn without(mut objects: Vec<Value>, removed: &Removed) -> Vec<Value> {
    let index = objects
        .iter()
        .position(|o| std::ptr::eq(o, role_of(&objects, removed.role)))
        .expect("the role");
    let rules = objects[index]["rules"].as_array_mut().expect("rules");
    let verbs = rules[removed.rule]["verbs"].as_array_mut().expect("verbs");
    verbs.retain(|v| v.as_str() != Some(removed.verb.as_str()));
    if verbs.is_empty() {
        rules.remove(removed.rule);
    }
    objects
}

/// The namespaces, objects and controller of one run of the scenario.
struct Scenario {
    control: TestNamespace,
    managed: TestNamespace,
    deployed: Vec<Value>,
    _repo: tempfile::TempDir,
    receiver: RecordingServer,
    analysis: RecordingServer,
    scratch: tempfile::TempDir,
    controller: Mutex<Option<ServerProcess>>,
    health: SocketAddr,
}

impl Scenario {
    /// The namespaces with the shipped RBAC (`change` applied to it), and every object the
    /// scenario needs, with no controller yet. With `globs`, the controller is to manage its
    /// managed namespace through a glob (the namespace watcher's rights are deployed too).
    async fn prepare(
        label: &str,
        globs: bool,
        change: impl FnOnce(Vec<Value>) -> Vec<Value>,
    ) -> Self {
        let control = controller_support::setup(label).await;
        let managed = support::namespace(1, &format!("{label}-to")).await;
        let mut deployed = deployed_for(&control.name, &managed.name, &control.name);
        if globs {
            deployed.extend(namespace_watcher(&control.name, &control.name));
        }
        let deployed = change(deployed);
        apply_all(&control.client, &deployed).await;

        // The first step's analysis reads its headers from a Secret.
        let analysis = RecordingServer::start(|_| (200, r#"{"rate": 0}"#.to_owned()));
        let headers: Secret = object(json!({
            "metadata": {"name": "analysis-headers"},
            "stringData": {"X-Api-Key": "planted"}
        }));
        apply(&control.api::<Secret>(), &headers).await;
        let repo = repository();
        commit(
            repo.path(),
            &[
                ("apps/web/cm.yaml", &config_map(DEPLOYED)),
                ("apps/web/replaced.yaml", &replaced_config_map()),
                ("apps/api/cm.yaml", &config_map(SECOND)),
            ],
            "web",
        );
        let url = format!("file://{}", repo.path().display());
        support::permissive_project(&control, "platform").await;
        let mut appset = support::list_appset::appset(
            "set",
            &url,
            &managed,
            &json!([
                {"app": "web", "component": "apps/web", "step": "one"},
                {"app": "api", "component": "apps/api", "step": "two"}
            ]),
            &json!([
                {
                    "matchExpressions": [{"key": "step", "operator": "In", "values": ["one"]}],
                    "analysis": {"web": {
                        "url": analysis.url("/rate"),
                        "jsonPath": "rate",
                        "headersSecret": "analysis-headers",
                        "successCondition": "result < 0.01",
                    }},
                },
                {"matchExpressions": [{"key": "step", "operator": "In", "values": ["two"]}]}
            ]),
        );
        appset
            .annotations_mut()
            .insert("flotilla.dev/refresh".into(), "now".into());
        let appset = apply(&control.api::<ApplicationSet>(), &appset).await;
        // Generated once, no longer: the ApplicationSet deletes it.
        let departed: Application = object(json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "Application",
            "metadata": {
                "name": "departed",
                "labels": {"flotilla.dev/application-set": "set", "step": "one"},
                "ownerReferences": [{
                    "apiVersion": "flotilla.dev/v1alpha1", "kind": "ApplicationSet",
                    "name": "set", "uid": appset.uid().expect("a uid"), "controller": true
                }]
            },
            "spec": {
                "project": "platform",
                "source": {"repoURL": url, "targetRevision": "main", "path": "apps/departed"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": managed.name}
            }
        }));
        apply(&control.api::<Application>(), &departed).await;
        // Tracked by the generated Application, no longer in git: pruned.
        let pruned: ConfigMap = object(json!({
            "metadata": {
                "name": PRUNED,
                "annotations": {
                    "flotilla.dev/tracking-id": format!("{}_web:/ConfigMap:{}/{PRUNED}", control.name, managed.name)
                }
            },
            "data": {"k": "v"}
        }));
        apply(&managed.api::<ConfigMap>(), &pruned).await;
        let replaced: ConfigMap = object(json!({
            "metadata": {"name": REPLACED},
            "data": {"k": "before"}
        }));
        apply(&managed.api::<ConfigMap>(), &replaced).await;
        let expired: Lease = object(json!({
            "metadata": {
                "name": EXPIRED_MEMBER,
                "labels": {"flotilla.dev/members-of": "flotilla-controller"}
            },
            "spec": {
                "holderIdentity": "departed",
                "leaseDurationSeconds": 1,
                "renewTime": "2020-01-01T00:00:00.000000Z"
            }
        }));
        apply(&control.api::<Lease>(), &expired).await;
        let receiver = RecordingServer::start(|_| (200, String::new()));
        let notifications: ConfigMap = object(json!({
            "metadata": {"name": "flotilla-notifications"},
            "data": {
                "service.webhook.ops": format!("url: {}\nheaders:\n  Authorization: $ops-token\n", receiver.url("/hook")),
                "template.step": "message: 'step {{ .step }} {{ .trigger }}'\n",
                "trigger.on-step-started": "template: step\ndestinations: [webhook.ops]\n",
                "trigger.on-step-completed": "template: step\ndestinations: [webhook.ops]\n"
            }
        }));
        apply(&control.api::<ConfigMap>(), &notifications).await;
        let credentials: Secret = object(json!({
            "metadata": {"name": "flotilla-notifications"},
            "stringData": {"ops-token": "Bearer planted"}
        }));
        apply(&control.api::<Secret>(), &credentials).await;

        Self {
            control,
            managed,
            deployed,
            _repo: repo,
            receiver,
            analysis,
            scratch: tempfile::tempdir().expect("a scratch directory"),
            controller: Mutex::new(None),
            health: SocketAddr::from(([127, 0, 0, 1], free_port())),
        }
    }

    /// Starts `flotilla controller` as the ServiceAccount, managing the managed namespace by
    /// name, or with `glob` through a glob.
    fn start(&self, glob: Option<&str>) {
        let user = format!(
            "system:serviceaccount:{}:{SERVICE_ACCOUNT}",
            self.control.name
        );
        let kubeconfig = impersonating_kubeconfig(self.scratch.path(), &user);
        let managed = glob.unwrap_or(&self.managed.name);
        let mut command = Command::new(env!("CARGO_BIN_EXE_flotilla"));
        command
            .args(["controller", "-n", &self.control.name])
            .arg(format!("--application-namespaces={managed}"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--repo-cache")
            .arg(self.scratch.path().join("repos"))
            .arg(format!("--metrics-addr={}", self.health))
            .args(["--identity", "rbac-test", "--app-resync", "2s"])
            .args(["--lease-duration", "6s", "--renew-deadline", "4s"])
            .args(["--retry-period", "1s"])
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(self.log_path()).expect("a log file"));
        let started = ServerProcess::spawn(&mut command).expect("flotilla controller starts");
        *self.controller.lock().expect("not poisoned") = Some(started);
    }

    /// An error naming how the controller ended, with its log, once it has.
    fn running(&self) -> Result<(), String> {
        let mut controller = self.controller.lock().expect("not poisoned");
        match controller.as_mut().expect("started").try_wait() {
            Ok(None) => Ok(()),
            ended => Err(format!(
                "the controller ended ({ended:?}):\n{}",
                self.log_tail()
            )),
        }
    }

    fn log_path(&self) -> std::path::PathBuf {
        self.scratch.path().join("controller.log")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The last lines of the log.
    fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Where `refusal` is named: how many of the log's WARN and ERROR lines (the default log
    /// level shows them), and the first of those lines, Application and ApplicationSet status
    /// texts and Event notes that names it.
    async fn named(&self, refusal: &str) -> Result<Named, String> {
        let log = self.log();
        let logged: Vec<&str> = log
            .lines()
            .filter(|line| {
                (line.contains(" WARN ") || line.contains(" ERROR ")) && line.contains(refusal)
            })
            .collect();
        let mut texts = Vec::new();
        for namespace in [&self.control, &self.managed] {
            texts
                .extend(status_texts(namespace, "Application", |a: &Application| &a.status).await?);
            texts.extend(
                status_texts(namespace, "ApplicationSet", |a: &ApplicationSet| &a.status).await?,
            );
            let events = namespace.api::<Event>().list(&Default::default()).await;
            for event in events.map_err(|e| e.to_string())? {
                let reason = event.reason.clone().unwrap_or_default();
                texts.extend(event.note.map(|note| format!("Event {reason}: {note}")));
            }
        }
        Ok(Named {
            logged: logged.len(),
            kept: texts.into_iter().find(|text| text.contains(refusal)),
            first_line: logged.first().map(|line| (*line).to_owned()),
        })
    }

    /// Ends the controller and deletes the cluster-scoped objects of the run.
    async fn end(self) {
        drop(self.controller.lock().expect("not poisoned").take());
        delete_cluster_scoped(&self.control.client, &self.deployed).await;
    }
}

/// Every string in the status of each object of kind `K` in `namespace`, after `kind` and the
/// object's name.
async fn status_texts<K, S>(
    namespace: &TestNamespace,
    kind: &str,
    status: impl Fn(&K) -> &S,
) -> Result<Vec<String>, String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    S: serde::Serialize,
{
    let objects = namespace
        .api::<K>()
        .list(&Default::default())
        .await
        .map_err(|e| e.to_string())?;
    let mut texts = Vec::new();
    for object in &objects {
        let mut found = Vec::new();
        strings(
            &serde_json::to_value(status(object)).unwrap_or_default(),
            &mut found,
        );
        let name = object.name_any();
        texts.extend(
            found
                .into_iter()
                .map(|text| format!("{kind} {name} status: {text}")),
        );
    }
    Ok(texts)
}

/// Every string in `value`, into `texts`.
fn strings(value: &Value, texts: &mut Vec<String>) {
    match value {
        Value::String(text) => texts.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| strings(item, texts)),
        Value::Object(fields) => fields.values().for_each(|field| strings(field, texts)),
        _ => {}
    }
}

fn config_map(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n")
}

fn replaced_config_map() -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {REPLACED}\n  annotations:\n    argocd.argoproj.io/sync-options: Replace=true\ndata:\n  k: v\n"
    )
}

/// Runs the scenario with `removed` taken out of the shipped RBAC and waits until the log names
/// the refusal twice while `/healthz` answers.
async fn refusal_is_named(removed: Removed) {
    let globs = removed.role == NAMESPACE_WATCHER;
    let change = |deployed| without(deployed, &removed);
    let scenario = Scenario::prepare("rbac", globs, change).await;
    let glob = format!(
        "{}*",
        scenario.managed.name.trim_end_matches(char::is_numeric)
    );
    scenario.start(globs.then_some(glob.as_str()));
    let started = std::time::Instant::now();
    let refusal = removed.refusal();
    let what = format!(
        "without {} {} of {}: `{refusal}` named",
        removed.resource, removed.verb, removed.role
    );
    // Logged twice (the controller tried again), or kept in an Application's status or an
    // Event (written once the attempt had ended).
    let named = eventually_within(NAMED_WITHIN, &what, async || {
        scenario.running()?;
        let named = scenario.named(&refusal).await?;
        match (named.logged, &named.kept) {
            (2.., _) | (_, Some(_)) => Ok(named),
            (logged, None) => Err(format!(
                "logged {logged} times; log:\n{}",
                scenario.log_tail()
            )),
        }
    })
    .await;
    eprintln!(
        "{what} after {:.1} s: {} times in the log ({}); {}",
        started.elapsed().as_secs_f64(),
        named.logged,
        named.first_line.unwrap_or_default(),
        named.kept.unwrap_or_default()
    );
    let (status, _) = http_get(scenario.health, "/healthz").await;
    assert_eq!(status, 200, "{what}: /healthz answers");
    scenario.end().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_scenario_completes_with_the_whole_shipped_rbac() {
    let scenario = Scenario::prepare("rbac-all", false, |deployed| deployed).await;
    scenario.start(None);
    let (control, managed) = (&scenario.control, &scenario.managed);
    let done = async || -> Result<(), String> {
        let maps: Api<ConfigMap> = managed.api();
        let apps: Api<Application> = control.api();
        let appsets: Api<ApplicationSet> = control.api();
        let leases: Api<Lease> = control.api();
        let get = |e: kube::Error| e.to_string();
        let mut waiting = Vec::new();
        for synced in [DEPLOYED, SECOND] {
            if maps.get_opt(synced).await.map_err(get)?.is_none() {
                waiting.push("the ConfigMaps synced");
            }
        }
        let replaced = maps.get_opt(REPLACED).await.map_err(get)?;
        if replaced
            .and_then(|m| m.data)
            .and_then(|d| d.get("k").cloned())
            != Some("v".into())
        {
            waiting.push("the ConfigMap replaced");
        }
        if maps.get_opt(PRUNED).await.map_err(get)?.is_some() {
            waiting.push("the tracked ConfigMap pruned");
        }
        if apps.get_opt("departed").await.map_err(get)?.is_some() {
            waiting.push("the Application no longer generated deleted");
        }
        let appset = appsets.get("set").await.map_err(get)?;
        if appset.annotations().contains_key("flotilla.dev/refresh") {
            waiting.push("the refresh annotation removed");
        }
        if leases.get_opt(EXPIRED_MEMBER).await.map_err(get)?.is_some() {
            waiting.push("the expired member Lease deleted");
        }
        let ledger = control
            .api::<ConfigMap>()
            .get_opt("flotilla-notifications-state")
            .await
            .map_err(get)?;
        if ledger.is_none() {
            waiting.push("the notifications' ledger written");
        }
        if waiting.is_empty() {
            Ok(())
        } else {
            Err(format!("{waiting:?}; log:\n{}", scenario.log_tail()))
        }
    };
    eventually_within(NAMED_WITHIN, "the whole scenario", done).await;
    assert!(
        !scenario.receiver.received().is_empty(),
        "the notifications were delivered"
    );
    assert!(
        scenario
            .analysis
            .received()
            .iter()
            .any(|r| r.headers.get("x-api-key").map(String::as_str) == Some("planted")),
        "the analysis was measured with its Secret's headers"
    );
    let log = scenario.log();
    let forbidden: Vec<&str> = log.lines().filter(|l| l.contains("forbidden")).collect();
    assert!(
        forbidden.is_empty(),
        "nothing is forbidden with the whole RBAC:\n{}",
        forbidden.join("\n")
    );
    scenario.end().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn each_verb_of_the_shipped_rbac_is_needed_and_its_absence_is_named() {
    let shipped = deployed_for("flotilla", "team-a", "shipped");
    let mut shipped_watcher = shipped.clone();
    shipped_watcher.extend(namespace_watcher("flotilla", "shipped"));
    let mut cases = verbs_of(&shipped, ROLE);
    cases.extend(verbs_of(&shipped, APPLICATION_CONTROLLER));
    cases.extend(verbs_of(&shipped_watcher, NAMESPACE_WATCHER));
    // FLOTILLA_RBAC_ONLY="applications patch,leases get" runs those removals alone.
    let only = std::env::var("FLOTILLA_RBAC_ONLY").ok();
    let cases: Vec<Removed> = cases
        .into_iter()
        .filter(|c| {
            let name = format!("{} {}", c.resource, c.verb);
            only.as_deref()
                .is_none_or(|only| only.split(',').any(|o| name == o.trim()))
        })
        .collect();
    let runs = futures::stream::iter(cases.clone())
        .map(|removed| AssertUnwindSafe(refusal_is_named(removed)).catch_unwind())
        .buffer_unordered(AT_ONCE)
        .collect::<Vec<_>>()
        .await;
    let failures: Vec<String> = runs
        .into_iter()
        .filter_map(Result::err)
        .map(|panic| {
            panic
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_else(|| "a panic".to_owned())
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} removals were not named:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
