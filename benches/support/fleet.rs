//! The fleet the controller benchmarks create: one ApplicationSet with a list generator of N
//! elements, each Application syncing one ConfigMap — from a directory of its own in a local git
//! repository, or rendered from the repository's one Helm chart with a value of its own.

use std::path::Path;

/// What the Applications deploy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A directory of plain manifests per Application.
    Directory,
    /// One Helm chart for all, with a value per Application.
    Chart,
}

/// A git repository with `apps/app-N/configmap.yaml` for every Application, or with the chart
/// `chart/` whose ConfigMap is named after the release and holds the value `.Values.key`.
pub fn repository(dir: &Path, apps: u64, source: Source) {
    if source == Source::Chart {
        let chart = dir.join("chart");
        std::fs::create_dir_all(chart.join("templates")).expect("creating the repository");
        for (file, text) in [
            ("Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n"),
            ("values.yaml", "key: default\n"),
            (
                "templates/configmap.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  key: {{ .Values.key | quote }}\n",
            ),
        ] {
            std::fs::write(chart.join(file), text).expect("writing the chart");
        }
        super::git::commit_all(dir);
        return;
    }
    for i in 0..apps {
        let app_dir = dir.join(format!("apps/app-{i}"));
        std::fs::create_dir_all(&app_dir).expect("creating the repository");
        std::fs::write(
            app_dir.join("configmap.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{i}\ndata:\n  key: value-{i}\n"),
        )
        .expect("writing a manifest");
    }
    super::git::commit_all(dir);
}

pub fn application_set(
    namespace: &str,
    repo: &Path,
    apps: u64,
    source: Source,
) -> serde_json::Value {
    let elements: Vec<serde_json::Value> = (0..apps)
        .map(|i| serde_json::json!({ "name": format!("app-{i}") }))
        .collect();
    let source = match source {
        Source::Directory => serde_json::json!({
            "repoURL": format!("file://{}", repo.display()),
            "targetRevision": "main",
            "path": "apps/{{name}}",
        }),
        Source::Chart => serde_json::json!({
            "repoURL": format!("file://{}", repo.display()),
            "targetRevision": "main",
            "path": "chart",
            "helm": { "parameters": [{ "name": "key", "value": "value-{{name}}" }] },
        }),
    };
    serde_json::json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": { "name": "fleet", "namespace": namespace },
        "spec": {
            "generators": [{ "list": { "elements": elements } }],
            "template": {
                "metadata": { "name": "{{name}}" },
                "spec": {
                    "project": "default",
                    "source": source,
                    "destination": { "name": "in-cluster", "namespace": namespace },
                    "syncPolicy": { "automated": { "prune": true, "selfHeal": true } },
                },
            },
        },
    })
}
