//! The metrics dashboards read, scraped from `/metrics` of a running `flotilla controller` on
//! cluster 1 that syncs an Application twice from a local git repository, rolls out a two-step
//! RollingSync ApplicationSet and notifies a loopback webhook of each step's start: every metric
//! Argo CD's Grafana dashboards query (the list read from them once,
//! `tests/fixtures/metrics/argocd-dashboard-metrics.txt`) is served with the labels they
//! select by, with Flotilla's values (the Application's two syncs `Succeeded`, its health and
//! sync status), and every metric Flotilla's own dashboard (`deploy/grafana/flotilla-rollouts.json`)
//! queries is served.

mod controller_support;
mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::Duration;

use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use controller_support::{commit_apps, repository, setup, web_application};
use support::loopback_http::LoopbackServer;
use support::two_tier_appset::two_tier_appset;
use support::{TestNamespace, apply, eventually, eventually_within, object, wait_until};

/// One sample of the exposition: its name and labels, and its value.
type Sample = (String, BTreeMap<String, String>, String);

/// The samples of an OpenMetrics exposition.
fn samples(exposition: &str) -> Vec<Sample> {
    exposition
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, labels.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split("\",")
                .filter_map(|pair| pair.split_once("=\""))
                .map(|(k, v)| (k.to_owned(), v.trim_end_matches('"').to_owned()))
                .collect();
            Some((name.to_owned(), labels, value.to_owned()))
        })
        .collect()
}

/// A ConfigMap with `version` and a Deployment the node simulator makes ready.
fn manifests(name: &str, version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  version: \"{version}\"\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}-web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {name}}}\n  \
         template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: web\n          image: registry.example.com/web:{version}\n"
    )
}

/// A webhook receiver on loopback answering 200 to every POST; counts them.
fn receiver() -> (
    LoopbackServer,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let received = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&received);
    let server = LoopbackServer::start(move |stream| {
        let mut reader = BufReader::new(stream);
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end().to_ascii_lowercase();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = reader
            .get_mut()
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    });
    (server, received)
}

/// The whole HTTP response of the server at `address` to `GET /metrics`.
async fn scrape(address: std::net::SocketAddr) -> Result<String, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|e| e.to_string())?;
    let request = "GET /metrics HTTP/1.1\r\nhost: flotilla\r\nconnection: close\r\n\r\n";
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .map_err(|e| e.to_string())?;
    Ok(response)
}

/// The metric names the stored list of Argo CD's dashboards names, with their labels.
fn argocd_dashboard_metrics() -> Vec<(String, Vec<String>)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/metrics/argocd-dashboard-metrics.txt");
    let text = std::fs::read_to_string(&path).expect("the stored list");
    let metrics: Vec<(String, Vec<String>)> = text
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let mut words = line.split_whitespace().map(str::to_owned);
            let name = words.next().expect("a name");
            (name, words.collect())
        })
        .collect();
    assert!(metrics.len() > 20, "{metrics:?}");
    metrics
}

/// The metric names the PromQL expressions of a Grafana dashboard query (identifiers starting
/// with `flotilla_`).
fn dashboard_metrics(dashboard: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dashboard];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    if let ("expr" | "query", Value::String(expr)) = (key.as_str(), value) {
                        found.extend(
                            expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                                .filter(|word| word.starts_with("flotilla_"))
                                .map(str::to_owned),
                        );
                    }
                    stack.push(value);
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The family a sample name belongs to, as `# TYPE` declares it.
fn family(name: &str) -> &str {
    ["_total", "_bucket", "_count", "_sum"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .unwrap_or(name)
}

/// Waits until the Application `web` has a Succeeded operation at `revision`.
async fn synced_at(ns: &TestNamespace, revision: &str) -> Application {
    wait_until(
        &ns.api::<Application>(),
        "web",
        &format!("an operation Succeeded at {revision}, Synced and Healthy"),
        |app| {
            let status = app.status.as_ref();
            status
                .and_then(|s| s.operation_state.as_ref())
                .is_some_and(|op| {
                    op.phase == OperationPhase::Succeeded
                        && op.revision.as_deref() == Some(revision)
                })
                && status
                    .and_then(|s| s.health.as_ref())
                    .is_some_and(|h| h.status.as_str() == "Healthy")
                && status
                    .and_then(|s| s.sync.as_ref())
                    .is_some_and(|s| s.status.as_str() == "Synced")
        },
    )
    .await
}

#[tokio::test]
async fn the_dashboards_metrics_are_served_with_flotillas_values() {
    let repo = repository();
    let names = ["web", "database", "backend"];
    let first = commit_apps(repo.path(), &names, "1", manifests);
    let url = format!("file://{}", repo.path().display());
    let ns = setup("argocd-metrics").await;
    let (webhook, delivered) = receiver();
    let notifications: ConfigMap = object(json!({
        "metadata": {"name": "flotilla-notifications"},
        "data": {
            "service.webhook.ops": format!("url: {}/hooks\n", webhook.base_url()),
            "template.step": "message: 'step {{ .step }} started'",
            "trigger.on-step-started": "template: step\ndestinations: [webhook.ops]",
        }
    }));
    apply(&ns.api::<ConfigMap>(), &notifications).await;
    let endpoint = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let controller = support::controller_process_with(
        &ns,
        "metrics",
        &["--metrics-addr", &endpoint.to_string()],
    );
    let app = web_application(&ns.name, &url, json!({}));
    apply(&ns.api::<Application>(), &app).await;
    let appset: ApplicationSet = object(two_tier_appset(
        "tiers",
        &ns.name,
        "source",
        json!({"repoURL": url, "targetRevision": "main", "path": "apps/{{.component}}"}),
    ));
    apply(&ns.api::<ApplicationSet>(), &appset).await;
    synced_at(&ns, &first).await;
    let second = commit_apps(repo.path(), &["web"], "2", manifests);
    synced_at(&ns, &second).await;
    eventually_within(
        Duration::from_secs(180),
        "both steps' start notified",
        async || {
            let n = delivered.load(std::sync::atomic::Ordering::SeqCst);
            (n >= 2).then_some(()).ok_or(format!("{n} delivered"))
        },
    )
    .await;

    let argocd = argocd_dashboard_metrics();
    let exposition = eventually("every metric the dashboards query", async || {
        let response = scrape(endpoint).await?;
        let served = samples(&response);
        let missing: Vec<String> = argocd
            .iter()
            .filter(|(name, labels)| {
                !served.iter().any(|(sample, have, _)| {
                    sample == name && labels.iter().all(|l| have.contains_key(l))
                })
            })
            .map(|(name, labels)| format!("{name} {labels:?}"))
            .collect();
        let web_syncs = served.iter().find(|(name, labels, _)| {
            name == "argocd_app_sync_total"
                && labels.get("name").map(String::as_str) == Some("web")
                && labels.get("phase").map(String::as_str) == Some("Succeeded")
        });
        let rolled_out = served
            .iter()
            .filter(|(name, labels, value)| {
                name == "flotilla_rollout_applications"
                    && labels.get("appset").map(String::as_str) == Some("tiers")
                    && labels.get("state").map(String::as_str) == Some("Healthy")
                    && value == "1"
            })
            .count();
        let web_info = served.iter().find(|(name, labels, _)| {
            name == "argocd_app_info" && labels.get("name").map(String::as_str) == Some("web")
        });
        let web_settled = web_info.is_some_and(|(_, labels, _)| {
            labels.get("health_status").map(String::as_str) == Some("Healthy")
                && labels.get("sync_status").map(String::as_str) == Some("Synced")
        });
        match (missing.is_empty(), web_syncs, rolled_out, web_settled) {
            (true, Some((_, _, count)), 2, true) if count == "2" => Ok(response),
            _ => Err(format!(
                "missing {missing:?}; web's syncs {web_syncs:?}; {rolled_out} of 2 tiers rolled \
                 out; web {web_info:?}"
            )),
        }
    })
    .await;
    let served = samples(&exposition);
    let sample = |name: &str, pick: &dyn Fn(&BTreeMap<String, String>) -> bool| {
        served
            .iter()
            .find(|(n, labels, _)| n == name && pick(labels))
            .unwrap_or_else(|| panic!("{name} in\n{exposition}"))
            .clone()
    };
    let is = |labels: &BTreeMap<String, String>, key: &str, value: &str| {
        labels.get(key).map(String::as_str) == Some(value)
    };
    let (_, syncs, _) = sample("argocd_app_sync_total", &|l| is(l, "name", "web"));
    assert_eq!(
        syncs,
        BTreeMap::from(
            [
                ("namespace", ns.name.as_str()),
                ("name", "web"),
                ("project", "default"),
                ("dest_server", "https://kubernetes.default.svc"),
                ("phase", "Succeeded"),
                ("dry_run", "false"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        )
    );
    let (_, info, value) = sample("argocd_app_info", &|l| is(l, "name", "web"));
    assert_eq!(value, "1");
    for (key, expected) in [
        ("namespace", ns.name.as_str()),
        ("project", "default"),
        ("repo", url.as_str()),
        ("dest_server", "https://kubernetes.default.svc"),
        ("dest_namespace", ns.name.as_str()),
        ("sync_status", "Synced"),
        ("health_status", "Healthy"),
        ("autosync_enabled", "true"),
        ("operation", ""),
    ] {
        assert_eq!(info.get(key).map(String::as_str), Some(expected), "{key}");
    }
    // Each step's start of each rollout (the second commit starts another): as many as the
    // receiver answered, at least the first rollout's two.
    let (_, _, notified) = sample("argocd_notifications_deliveries_total", &|l| {
        is(l, "trigger", "on-step-started") && is(l, "succeeded", "true")
    });
    let notified: usize = notified.parse().expect("a count");
    let answered = delivered.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        (2..=answered).contains(&notified),
        "{notified} of {answered}"
    );
    // Summed over the series a selection covers (by response code, dry run).
    let total = |name: &str, pick: &dyn Fn(&BTreeMap<String, String>) -> bool| -> f64 {
        served
            .iter()
            .filter(|(n, labels, _)| n == name && pick(labels))
            .map(|(_, _, value)| value.parse::<f64>().expect("a number"))
            .sum()
    };
    let fetches = total("argocd_git_request_total", &|l| {
        is(l, "repo", &url) && is(l, "request_type", "fetch")
    });
    assert!(fetches >= 2.0, "{fetches} fetches of {url}");
    let applied = total("argocd_app_k8s_request_total", &|l| {
        is(l, "verb", "Patch") && is(l, "resource_kind", "deployments") && is(l, "dry_run", "false")
    });
    assert!(applied >= 4.0, "{applied} applies of Deployments");
    let (_, cluster, _) = sample("argocd_cluster_info", &|l| {
        is(l, "server", "https://kubernetes.default.svc")
    });
    assert!(
        cluster["k8s_version"].starts_with("v1.") && cluster["name"] == "in-cluster",
        "{cluster:?}"
    );
    let (_, appset, _) = sample("argocd_appset_info", &|l| is(l, "name", "tiers"));
    assert_eq!(appset["resource_update_status"], "True", "{appset:?}");

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/flotilla-rollouts.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the dashboard"))
            .expect("JSON");
    let queried = dashboard_metrics(&dashboard);
    assert!(
        queried.iter().any(|m| m == "flotilla_rollout_steps"),
        "{queried:?}"
    );
    for metric in &queried {
        let declared = exposition
            .lines()
            .filter_map(|line| line.strip_prefix("# TYPE "))
            .any(|line| line.split(' ').next() == Some(family(metric)));
        assert!(declared, "{metric} is not served:\n{exposition}");
    }
    for step in ["1", "2"] {
        sample("flotilla_rollout_applications", &|l| {
            is(l, "appset", "tiers") && is(l, "state", "Healthy") && is(l, "step", step)
        });
    }
    controller.kill();
}
