//! The output formats of the commands that need the test environment: sync, diff and get against
//! the API server, and simulate (whose examples render Helm charts, with helm). The offline commands'
//! formats are in cli_output.rs.

mod cli_output_support;
mod support;

use std::process::Output;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use cli_output_support::{Printed, applications, every_format, run, stdout, three_tier_args};

#[test]
fn simulate_names_the_applications_of_its_report() {
    let printed = every_format(|format| {
        // A Wednesday: outside the project's weekend freeze, whose wait would otherwise end
        // at a different offset in each run started a fraction of a second apart.
        let mut args = vec!["simulate", "--instant", "--start", "2026-12-02T10:00:00Z"];
        args.extend(three_tier_args());
        args.extend(["--project", "examples/projects/platform.yaml", "-o", format]);
        run(&args)
    });
    let json: Value = serde_json::from_str(&printed.json).unwrap();
    let order: Vec<&str> = json["applications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|app| app["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "platform-database-eu-west",
            "platform-database-us-east",
            "platform-backend-eu-west",
            "platform-backend-us-east",
            "platform-frontend-eu-west",
            "platform-frontend-us-east",
        ]
    );
    printed.check(&["DESTINATION", "MESSAGE"], &applications(&order));
    assert!(printed.table.starts_with("Strategy:  RollingSync\n"));
}

fn config_map(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: \"{value}\"\n")
}

async fn flotilla_in(ns: &support::TestNamespace, args: &[&str]) -> Output {
    support::run_flotilla(ns, args).await
}

/// `ARGS -o FORMAT` in `ns` for each format.
async fn every_format_in(ns: &support::TestNamespace, args: &[&str]) -> Printed {
    let mut outputs = Vec::new();
    for format in ["table", "text", "wide", "yaml", "json", "name"] {
        let mut all = args.to_vec();
        all.extend(["-o", format]);
        outputs.push((format, flotilla_in(ns, &all).await));
    }
    every_format(|format| {
        let (_, output) = outputs.iter().find(|(f, _)| *f == format).unwrap();
        output.clone()
    })
}

#[tokio::test]
async fn sync_diff_and_get_print_in_every_format_on_the_cluster() {
    let ns = support::namespace(1, "cli-output").await;
    support::install_flotilla_crds(&ns.client).await;
    let dir = tempfile::tempdir().expect("a directory");
    std::fs::write(dir.path().join("a.yaml"), config_map("settings", "1")).unwrap();
    std::fs::write(dir.path().join("b.yaml"), config_map("flags", "1")).unwrap();
    let path = dir.path().to_str().unwrap().to_owned();

    // sync: the objects it synced.
    let synced = flotilla_in(&ns, &["sync", &path, "--app", "web", "-o", "name"]).await;
    assert!(synced.status.success(), "{synced:?}");
    assert_eq!(stdout(&synced), "configmap/flags\nconfigmap/settings\n");
    let wide = flotilla_in(&ns, &["sync", &path, "--app", "web", "-o", "wide"]).await;
    assert!(
        stdout(&wide).contains("PHASE  WAVE  GROUP  KIND"),
        "{}",
        stdout(&wide)
    );

    // diff: -o name lists only what differs; the default stays the unified diff.
    ns.api::<ConfigMap>()
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "2"}})),
        )
        .await
        .expect("drifting settings");
    let diff = every_format_in(&ns, &["diff", &path, "--app", "web"]).await;
    diff.check(&["PATHS"], &["configmap/settings".to_owned()]);
    assert!(
        diff.wide.contains("OutOfSync  1        /data/k"),
        "{}",
        diff.wide
    );
    let unified = flotilla_in(&ns, &["diff", &path, "--app", "web"]).await;
    assert_eq!(unified.status.code(), Some(1));
    assert!(stdout(&unified).contains("+++ desired "));

    // get: Applications with where they go in wide.
    let apps = ns.api::<flotilla::api::Application>();
    let app: flotilla::api::Application = support::object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": ns.name},
        "spec": {
            "project": "default",
            "source": {"repoURL": "https://git.example.com/web.git", "path": "deploy", "targetRevision": "v2"},
            "destination": {"name": "in-cluster", "namespace": ns.name},
        },
    }));
    support::apply(&apps, &app).await;
    let get = every_format_in(&ns, &["get", "apps"]).await;
    get.check(
        &["PROJECT", "DESTINATION", "REPO", "PATH", "TARGET"],
        &["application.flotilla.dev/web".to_owned()],
    );
    let row = get.wide.lines().nth(1).expect("a row");
    assert!(
        row.contains("default  in-cluster")
            && row.ends_with("https://git.example.com/web.git  deploy  v2"),
        "{}",
        get.wide
    );

    // windows: the Applications it speaks of.
    let windows = every_format_in(&ns, &["windows", "web"]).await;
    windows.check(
        &["MANUAL SYNC", "DESCRIPTION"],
        &["application.flotilla.dev/web".to_owned()],
    );
    let json: Value = serde_json::from_str(&windows.json).unwrap();
    assert_eq!(json["applications"][0]["automated"], "allowed", "{json}");

    let appsets = flotilla_in(&ns, &["get", "appsets", "-o", "name"]).await;
    assert!(appsets.status.success(), "{appsets:?}");
    assert_eq!(stdout(&appsets), "");
}
