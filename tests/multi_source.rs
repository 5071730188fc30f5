//! Multi-source Applications offline: `flotilla plan` of an Application file whose chart (in one
//! git repository) takes `$values/envs/prod.yaml` from another, each object labelled with its
//! source and tool; an unknown `$ref`, a path out of the ref's repository and a duplicate across
//! sources are errors naming the source and field; `flotilla render` of an ApplicationSet whose
//! template and templatePatch carry `sources` keeps them. The real helm comes from FLOTILLA_HELM
//! (tests/tools/install.sh), else PATH.
//! (`flotilla plan` with the real helm is in multi_source_controlplane.rs.)

mod multi_source_support;
mod support;

use support::flotilla_offline as flotilla;

use serde_json::Value;

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
