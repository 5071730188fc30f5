//! `flotilla diff` with the real binary against the control plane: a synced directory is equal
//! (exit 0), a drifted object shows its changed field (exit 1, unified diff and `-o json`), a
//! missing object is listed as Missing (exit 1), and an unreadable path exits 2.

mod support;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use support::{namespace, run_flotilla};

fn config_map(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: \"{value}\"\n")
}

#[tokio::test]
async fn diff_exits_by_equal_drifted_missing_and_error() {
    let ns = namespace(1, "cli-diff").await;
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(
        dir.path().join("settings.yaml"),
        config_map("settings", "1"),
    )
    .unwrap();
    let path = dir.path().to_str().unwrap().to_owned();
    let synced = run_flotilla(&ns, &["sync", &path, "--app", "web"]).await;
    assert!(synced.status.success(), "{synced:?}");

    let equal = run_flotilla(&ns, &["diff", &path, "--app", "web"]).await;
    assert_eq!(equal.status.code(), Some(0), "{equal:?}");
    assert!(equal.stdout.is_empty(), "{equal:?}");

    ns.api::<ConfigMap>()
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "2"}})),
        )
        .await
        .expect("drifting settings");
    let drifted = run_flotilla(&ns, &["diff", &path, "--app", "web"]).await;
    assert_eq!(drifted.status.code(), Some(1), "{drifted:?}");
    let text = String::from_utf8_lossy(&drifted.stdout);
    assert!(
        text.contains("--- live ") && text.contains("+++ desired "),
        "{text}"
    );
    assert!(
        text.contains("-  k: '2'") || text.contains("-  k: \"2\""),
        "{text}"
    );
    assert!(
        text.contains("+  k: '1'") || text.contains("+  k: \"1\""),
        "{text}"
    );

    std::fs::write(dir.path().join("extra.yaml"), config_map("extra", "1")).unwrap();
    let json_out = run_flotilla(&ns, &["diff", &path, "--app", "web", "-o", "json"]).await;
    assert_eq!(json_out.status.code(), Some(1), "{json_out:?}");
    let objects: Vec<Value> = serde_json::from_slice(&json_out.stdout).expect("JSON");
    let by_status: Vec<(bool, &str, Value)> = objects
        .iter()
        .map(|o| {
            (
                o["object"].as_str().unwrap().contains("extra"),
                o["status"].as_str().unwrap(),
                o.get("changedPaths").cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    assert!(
        by_status.contains(&(true, "Missing", Value::Null)),
        "{by_status:?}"
    );
    assert!(
        by_status.contains(&(false, "OutOfSync", json!(["/data/k"]))),
        "{by_status:?}"
    );

    let error = run_flotilla(&ns, &["diff", "/nonexistent/manifests"]).await;
    assert_eq!(error.status.code(), Some(2), "{error:?}");
}
