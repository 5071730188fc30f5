//! The one output vocabulary (`-o table|wide|yaml|json|name`, `text` for `table`) through the
//! real binary: offline on `render`, `plan`, `simulate` and `rollout explain --state`, and
//! against the real control plane on `get`, `sync`, `diff` and `windows`. For each command, `-o name`
//! prints kubectl's `kind.group/name` lines, `yaml` holds the same data as `json`, and `wide`
//! has the table's columns and more.
//! (The commands that need the API server or helm are checked in cli_output_controlplane.rs.)

mod cli_output_support;
mod support;

use serde_json::Value;

use cli_output_support::{applications, every_format, root, run, stdout, three_tier_args};

const THREE_TIER: [&str; 6] = [
    "platform-backend-eu-west",
    "platform-backend-us-east",
    "platform-database-eu-west",
    "platform-database-us-east",
    "platform-frontend-eu-west",
    "platform-frontend-us-east",
];

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
