//! Benchmark: rendering 10,000 Applications from a matrix of 100 clusters × 100 list elements,
//! goTemplate with a few sprig calls. Target: under 100 ms on one core. Dropping the 10,000
//! Applications afterwards is not counted (`iter_with_large_drop`).
//!
//! `cargo bench --bench render`

mod support;

use std::collections::BTreeMap;

use criterion::Criterion;
use flotilla::cluster::generator_inputs::inventory::StaticInventory;
use flotilla::render::{Sources, render_application_set};
use flotilla::repo::LocalRepos;
use flotilla_core::api::document::parse_application_set;
use flotilla_core::secrets::cluster::ClusterSecret;
use support::cpu_time::ThreadCpuTime;

fn appset_yaml() -> String {
    let elements: String = (0..100)
        .map(|i| {
            format!(
                "                - {{service: svc-{i:03}, team: Team{}, port: \"{}\"}}\n",
                i % 7,
                8000 + i
            )
        })
        .collect();
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: fleet, namespace: flotilla}}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - matrix:
        generators:
          - clusters: {{selector: {{matchLabels: {{fleet: "yes"}}}}}}
          - list:
              elements:
{elements}
  template:
    metadata:
      name: '{{{{ .service }}}}-{{{{ .nameNormalized }}}}'
      labels:
        team: '{{{{ .team | lower }}}}'
        env: '{{{{ index .metadata.labels "env" | default "dev" }}}}'
      annotations:
        port: '{{{{ .port | quote }}}}'
    spec:
      project: '{{{{ .team | lower | trunc 20 }}}}'
      source:
        repoURL: https://git.example.com/fleet.git
        targetRevision: main
        path: 'services/{{{{ .service }}}}/{{{{ index .metadata.labels "env" }}}}'
      destination:
        server: '{{{{ .server }}}}'
        namespace: '{{{{ .service }}}}'
"#
    )
}

fn inventory() -> StaticInventory {
    StaticInventory::new(
        (0..100)
            .map(|i| ClusterSecret {
                secret_name: format!("cluster-{i}"),
                name: format!("Cluster_{i:03}"),
                server: format!("https://c{i}.k8s.example.com"),
                project: None,
                labels: BTreeMap::from([
                    ("fleet".to_string(), "yes".to_string()),
                    (
                        "env".to_string(),
                        if i % 4 == 0 { "staging" } else { "prod" }.to_string(),
                    ),
                ]),
                annotations: BTreeMap::new(),
            })
            .collect(),
    )
}

fn bench(c: &mut Criterion<ThreadCpuTime>) {
    let appset = parse_application_set("bench.yaml", &appset_yaml()).expect("valid appset");
    let inventory = inventory();
    let repos = LocalRepos::default();
    let sources = Sources::offline(&inventory, &repos);
    let rendered = render_application_set(&appset, sources).expect("renders");
    assert_eq!(rendered.len(), 10_000);
    let mut group = c.benchmark_group("render");
    group.sample_size(20);
    group.bench_function("matrix_100_clusters_x_100_elements", |b| {
        b.iter_with_large_drop(|| render_application_set(&appset, sources).expect("renders"));
    });
    group.finish();
}

support::cpu_time_main!(bench);
