//! The one output vocabulary (`-o table|wide|yaml|json|name`, `text` for `table`) through the
//! real binary: offline on `render`, `plan`, `simulate` and `rollout explain --state`, and
//! against the real control plane on `get`, `sync`, `diff` and `windows`. For each command, `-o name`
//! prints kubectl's `kind.group/name` lines, `yaml` holds the same data as `json`, and `wide`
//! has the table's columns and more.

mod support;

use std::path::PathBuf;
use std::process::{Command, Output};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `flotilla ARGS...` to its end.
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("flotilla runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `ARGS -o FORMAT` for each format, run by `run`: the outputs, by format.
struct Printed {
    table: String,
    text: String,
    wide: String,
    yaml: String,
    json: String,
    name: String,
}

fn every_format(run: impl Fn(&str) -> Output) -> Printed {
    let print = |format: &str| {
        let output = run(format);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "-o {format}: {stderr}"
        );
        stdout(&output)
    };
    Printed {
        table: print("table"),
        text: print("text"),
        wide: print("wide"),
        yaml: print("yaml"),
        json: print("json"),
        name: print("name"),
    }
}

impl Printed {
    /// The checks every command meets: `text` is `table`; `yaml` and `json` hold the same
    /// data; `wide`'s header has the table's columns (in order) and `added`; `name` is `names`.
    fn check(&self, added: &[&str], names: &[String]) {
        assert_eq!(self.text, self.table);
        let json: Value = serde_json::from_str(&self.json).expect("-o json is JSON");
        let yaml: Value = serde_saphyr::from_str(&self.yaml).expect("-o yaml is YAML");
        assert_eq!(yaml, json);
        let header = |text: &str, heading: &str| -> Vec<String> {
            let line = text
                .lines()
                .find(|line| line.starts_with(heading))
                .unwrap_or_else(|| panic!("no header {heading}: {text}"));
            line.split("  ")
                .map(str::trim)
                .filter(|cell| !cell.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let first = self
            .table
            .lines()
            .find(|l| l.chars().all(|c| c.is_ascii_uppercase() || c == ' ') && !l.is_empty())
            .expect("a header line");
        let heading = first.split(' ').next().unwrap();
        let narrow = header(&self.table, heading);
        let wide = header(&self.wide, heading);
        let kept: Vec<&String> = wide.iter().filter(|c| narrow.contains(c)).collect();
        assert_eq!(kept, narrow.iter().collect::<Vec<_>>(), "{}", self.wide);
        for column in added {
            assert!(
                wide.iter().any(|c| c == column) && !narrow.iter().any(|c| c == column),
                "{column} only in wide:\n{}\n{}",
                self.table,
                self.wide
            );
        }
        assert_eq!(
            self.name.lines().collect::<Vec<_>>(),
            names,
            "{}",
            self.name
        );
    }
}

fn applications(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|name| format!("application.flotilla.dev/{name}"))
        .collect()
}

const THREE_TIER: [&str; 6] = [
    "platform-backend-eu-west",
    "platform-backend-us-east",
    "platform-database-eu-west",
    "platform-database-us-east",
    "platform-frontend-eu-west",
    "platform-frontend-us-east",
];

fn three_tier_args() -> Vec<&'static str> {
    vec![
        "examples/three-tier-stack.yaml",
        "--repo",
        "https://git.example.com/acme/platform-manifests.git=examples/repos/platform-manifests",
    ]
}

#[test]
fn render_prints_applications_in_every_format() {
    let printed = every_format(|format| {
        let mut args = vec!["render"];
        args.extend(three_tier_args());
        args.extend(["-o", format]);
        run(&args)
    });
    printed.check(&["REPO", "TARGET"], &applications(&THREE_TIER));
    let json: Vec<Value> = serde_json::from_str(&printed.json).unwrap();
    assert_eq!(json[0]["kind"], "Application");
    // The default stays YAML.
    let mut args = vec!["render"];
    args.extend(three_tier_args());
    assert_eq!(stdout(&run(&args)), printed.yaml);
}

#[test]
fn plan_names_objects_in_apply_order() {
    let dir = root().join("core/src/sync/testdata");
    let dir = dir.to_str().unwrap();
    let printed = every_format(|format| run(&["plan", dir, "-o", format]));
    printed.check(
        &["API VERSION"],
        &[
            "namespace/shop",
            "job.batch/db-migrate",
            "configmap/shop-config",
            "service/shop-api",
            "deployment.apps/shop-api",
            "job.batch/smoke-test",
        ]
        .map(str::to_owned),
    );
    assert!(printed.wide.contains(" apps/v1 "), "{}", printed.wide);
}

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

#[test]
fn rollout_explain_replays_a_state_in_every_format() {
    let state = "tests/rollout-states/three-tier-backend-waits.yaml";
    let printed = every_format(|format| {
        run(&[
            "rollout", "explain", "example", "--state", state, "-o", format,
        ])
    });
    // The text has no table header of its own to widen: wide is the text.
    assert_eq!(printed.wide, printed.table);
    assert_eq!(printed.text, printed.table);
    let json: Value = serde_json::from_str(&printed.json).unwrap();
    let yaml: Value = serde_saphyr::from_str(&printed.yaml).unwrap();
    assert_eq!(yaml, json);
    let names: Vec<String> = json["applicationStatus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "application.flotilla.dev/{}",
                e["application"].as_str().unwrap()
            )
        })
        .collect();
    assert!(!names.is_empty());
    assert_eq!(printed.name.lines().collect::<Vec<_>>(), names);
}

#[test]
fn an_unknown_format_is_a_usage_error_listing_the_vocabulary() {
    let mut args = vec!["render"];
    args.extend(three_tier_args());
    args.extend(["-o", "jsonpath"]);
    let output = run(&args);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("[possible values: table, wide, yaml, json, name]"),
        "{stderr}"
    );
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
    let apps = ns.api::<flotilla_core::api::Application>();
    let app: flotilla_core::api::Application = support::object(json!({
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
