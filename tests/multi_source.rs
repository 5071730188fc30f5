//! Multi-source Applications offline: `flotilla plan` of an Application file whose chart (in one
//! git repository) takes `$values/envs/prod.yaml` from another, each object labelled with its
//! source and tool; an unknown `$ref`, a path out of the ref's repository and a duplicate across
//! sources are errors naming the source and field; `flotilla render` of an ApplicationSet whose
//! template and templatePatch carry `sources` keeps them. The real helm comes from FLOTILLA_HELM
//! (tests/tools/install.sh), else PATH.

mod support;

use support::flotilla_offline as flotilla;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

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

/// A rendered source's `targetRevision`, `ref` and first Helm value file.
type SourceFields = (String, String, String);

#[test]
fn render_keeps_sources_of_the_template_and_its_patch() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("appset.yaml");
    std::fs::write(
        &file,
        r#"apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: shops}
spec:
  goTemplate: true
  generators:
  - list:
      elements: [{region: eu}, {region: us}]
  template:
    metadata: {name: 'shop-{{.region}}'}
    spec:
      project: default
      destination: {server: https://kubernetes.default.svc, namespace: shop}
      sources:
      - repoURL: https://charts.example.com
        chart: shop
        targetRevision: 1.x
        helm:
          valueFiles: ['$values/envs/{{.region}}.yaml']
      - repoURL: https://git.example.com/values.git
        targetRevision: main
        ref: values
  templatePatch: |
    {{- if eq .region "us" }}
    spec:
      sources:
      - repoURL: https://charts.example.com
        chart: shop
        targetRevision: 2.x
        helm:
          valueFiles: ['$values/envs/us.yaml']
      - repoURL: https://git.example.com/values.git
        targetRevision: release
        ref: values
    {{- end }}
"#,
    )
    .unwrap();
    let (ok, stdout, stderr) = flotilla(&["render", &file.display().to_string(), "-o", "json"]);
    assert!(ok, "{stderr}");
    let rendered: Value = serde_json::from_str(&stdout).expect("json");
    let apps = rendered
        .as_array()
        .cloned()
        .or_else(|| rendered["items"].as_array().cloned())
        .expect("a list of Applications");
    let sources: Vec<(String, Vec<SourceFields>)> = apps
        .iter()
        .map(|app| {
            let each = app["spec"]["sources"]
                .as_array()
                .expect("sources kept")
                .iter()
                .map(|s| {
                    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                    (
                        text(&s["targetRevision"]),
                        text(&s["ref"]),
                        text(&s["helm"]["valueFiles"][0]),
                    )
                })
                .collect();
            (app["metadata"]["name"].as_str().unwrap().to_owned(), each)
        })
        .collect();
    let source = |revision: &str, reference: &str, file: &str| {
        (revision.to_owned(), reference.to_owned(), file.to_owned())
    };
    assert_eq!(
        sources,
        [
            (
                "shop-eu".to_owned(),
                vec![
                    source("1.x", "", "$values/envs/eu.yaml"),
                    source("main", "values", "")
                ]
            ),
            (
                "shop-us".to_owned(),
                vec![
                    source("2.x", "", "$values/envs/us.yaml"),
                    source("release", "values", "")
                ]
            ),
        ]
    );
    assert!(
        apps.iter().all(|app| app["spec"].get("source").is_none()),
        "no empty source is written"
    );
}
