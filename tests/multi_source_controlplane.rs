//! `flotilla plan` of a multi-source Application file whose chart renders with helm (the test
//! environment's). Rendering multi-source templates offline is in multi_source.rs.

mod multi_source_support;
mod support;

use support::flotilla_offline as flotilla;

use std::path::Path;

use serde_json::Value;

use multi_source_support::git;

/// A git repository holding `files`, committed on `main`.
fn repository(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (path, content) in files {
        let target = dir.path().join(path);
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("directories");
        std::fs::write(target, content).expect("writes");
    }
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "files"]);
    dir
}

const CHART: [(&str, &str); 3] = [
    (
        "db/Chart.yaml",
        "apiVersion: v2\nname: db\nversion: 0.1.0\n",
    ),
    ("db/values.yaml", "greeting: default\n"),
    (
        "db/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
    ),
];

/// An Application file of the chart `db` with `value_file`, and the values repository (a
/// `ref: values` source also deploying `path`).
fn application(dir: &Path, value_file: &str, path: &str) -> String {
    let file = dir.join(format!("app-{}.yaml", dir.read_dir().unwrap().count()));
    let text = format!(
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: shop}}\nspec:\n  \
         project: default\n  destination: {{server: https://kubernetes.default.svc, namespace: prod}}\n  \
         sources:\n  - repoURL: https://git.example/charts.git\n    targetRevision: main\n    path: db\n    \
         helm: {{valueFiles: ['{value_file}']}}\n  - repoURL: https://git.example/values.git\n    \
         targetRevision: main\n    ref: values\n    path: {path}\n"
    );
    std::fs::write(&file, text).expect("writes the Application");
    file.display().to_string()
}

#[test]
fn plan_of_a_multi_source_application_file() {
    let charts = repository(&CHART);
    let values = repository(&[
        ("envs/prod.yaml", "greeting: prod-hello\n"),
        (
            "extra/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n",
        ),
        (
            "dup/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shop-config}\n",
        ),
    ]);
    let files = tempfile::tempdir().unwrap();
    let repos = [
        format!("https://git.example/charts.git={}", charts.path().display()),
        format!("https://git.example/values.git={}", values.path().display()),
    ];
    let plan = |file: &str, output: &str| {
        flotilla(&[
            "plan", file, "--repo", &repos[0], "--repo", &repos[1], "-o", output,
        ])
    };

    let good = application(files.path(), "$values/envs/prod.yaml", "extra");
    let (ok, table, stderr) = plan(&good, "table");
    assert!(ok, "{stderr}");
    for line in [
        "sources[0]/helm:db/templates/config.yaml#0",
        "sources[1]/cm.yaml#0",
    ] {
        assert!(table.contains(line), "{line} in\n{table}");
    }
    let (ok, yaml, stderr) = plan(&good, "json");
    assert!(ok, "{stderr}");
    let printed: Value = serde_json::from_str(&yaml).expect("json");
    let objects: Vec<(String, String, String)> = printed["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .flat_map(|step| step["objects"].as_array().cloned().unwrap_or_default())
        .map(|o| {
            let text = |k: &str| o[k].as_str().unwrap_or_default().to_owned();
            (text("namespace"), text("name"), text("file"))
        })
        .collect();
    assert_eq!(
        objects,
        [
            ("prod".into(), "extra".into(), "sources[1]/cm.yaml#0".into()),
            (
                "prod".into(),
                "shop-config".into(),
                "sources[0]/helm:db/templates/config.yaml#0".into()
            ),
        ]
    );

    let refused = [
        (
            "$other/envs/prod.yaml",
            "Application shop: sources[0].helm.valueFiles[0]: \"$other/envs/prod.yaml\" names $other, but no source has ref \"other\"",
        ),
        (
            "$values/../charts/db/values.yaml",
            "sources[0].helm.valueFiles[0]: \"../charts/db/values.yaml\" must be a relative path inside the source",
        ),
        (
            "$values/envs/staging.yaml",
            "sources[0].helm.valueFiles[0]: \"$values/envs/staging.yaml\" does not exist in its repository",
        ),
    ];
    for (value_file, expected) in refused {
        let (ok, stdout, stderr) = plan(&application(files.path(), value_file, "extra"), "table");
        assert!(!ok && stdout.is_empty(), "{value_file}: {stdout}");
        assert!(stderr.contains(expected), "{expected} in\n{stderr}");
    }

    let duplicate = application(files.path(), "$values/envs/prod.yaml", "dup");
    let (ok, _, stderr) = plan(&duplicate, "table");
    assert!(!ok);
    assert!(
        stderr.contains("sources[1]/cm.yaml")
            && stderr.contains(
                "duplicate object, first defined in sources[0]/helm:db/templates/config.yaml"
            ),
        "both sources named: {stderr}"
    );
}
