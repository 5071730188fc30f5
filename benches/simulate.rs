//! Benchmark: `flotilla simulate --instant` of 1,000 Applications × 20 objects (a PreSync and a
//! PostSync hook Job, ConfigMaps, a Secret, Services and Deployments in three waves) in 5
//! RollingSync steps: render, plan, and the whole rollout on the embedded cluster. Target: under
//! 2 s. Measured as CPU time of the benchmark thread (the simulation runs on it, on a
//! current-thread runtime).
//!
//! `cargo bench --bench simulate`

mod support;

use std::fmt::Write;

use clap::Parser;
use criterion::Criterion;
use flotilla::cli::simulate::simulate_from_args;
use flotilla::cli::{Cli, Command};
use flotilla::simulate::report::Ending;
use support::cpu_time::ThreadCpuTime;

const APPS: usize = 1_000;
const STEPS: usize = 5;
const REPO: &str = "https://git.example.com/acme/fleet.git";

fn appset_yaml() -> String {
    let mut elements = String::new();
    for i in 0..APPS {
        let _ = writeln!(
            elements,
            "        - {{name: app-{i:04}, step: \"{}\"}}",
            i % STEPS + 1
        );
    }
    let mut steps = String::new();
    for step in 1..=STEPS {
        let _ = writeln!(
            steps,
            "        - matchExpressions: [{{key: step, operator: In, values: [\"{step}\"]}}]"
        );
    }
    format!(
        r#"apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: fleet, namespace: flotilla}}
spec:
  goTemplate: true
  generators:
    - list:
        elements:
{elements}  strategy:
    type: RollingSync
    rollingSync:
      steps:
{steps}  template:
    metadata:
      name: '{{{{ .name }}}}'
      labels: {{step: '{{{{ .step }}}}'}}
    spec:
      project: default
      source: {{repoURL: {REPO}, targetRevision: main, path: app}}
      destination: {{server: https://kubernetes.default.svc, namespace: '{{{{ .name }}}}'}}
"#
    )
}

/// 20 objects: 2 hook Jobs, 9 ConfigMaps, 1 Secret, 4 Services, 4 Deployments.
fn manifests() -> String {
    let mut text = String::new();
    for (hook, name) in [("PreSync", "migrate"), ("PostSync", "smoke")] {
        let _ = write!(
            text,
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n    argocd.argoproj.io/hook: {hook}\n    argocd.argoproj.io/hook-delete-policy: HookSucceeded\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: main, image: busybox}}]\n---\n"
        );
    }
    for i in 0..9 {
        let _ = write!(
            text,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-{i}\n  annotations: {{argocd.argoproj.io/sync-wave: \"-1\"}}\ndata: {{key: value-{i}}}\n---\n"
        );
    }
    text.push_str("apiVersion: v1\nkind: Secret\nmetadata: {name: credentials}\nstringData: {token: x}\n---\n");
    for i in 0..4 {
        let _ = write!(
            text,
            "apiVersion: v1\nkind: Service\nmetadata: {{name: svc-{i}}}\nspec:\n  selector: {{app: web-{i}}}\n  ports: [{{port: 80, protocol: TCP}}]\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web-{i}\n  annotations: {{argocd.argoproj.io/sync-wave: \"{}\"}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: web-{i}}}}}\n  template:\n    metadata: {{labels: {{app: web-{i}}}}}\n    spec:\n      containers: [{{name: web, image: nginx}}]\n---\n",
            i % 2
        );
    }
    text
}

fn bench(c: &mut Criterion<ThreadCpuTime>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let appset = dir.path().join("fleet.yaml");
    std::fs::write(&appset, appset_yaml()).expect("writes the ApplicationSet");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("app")).expect("mkdir");
    std::fs::write(repo.join("app/manifests.yaml"), manifests()).expect("writes manifests");
    let argv = [
        "flotilla".to_owned(),
        "simulate".to_owned(),
        "--instant".to_owned(),
        appset.display().to_string(),
        format!("--repo={REPO}={}", repo.display()),
    ];
    let Command::Simulate(args) = Cli::parse_from(argv).command else {
        panic!("parsed as another command");
    };
    let report = simulate_from_args(&args, &Default::default(), &|_| {}).expect("simulates");
    assert_eq!(report.ending, Ending::Complete);
    assert_eq!(report.applications.len(), APPS);
    assert_eq!(report.steps.len(), STEPS);
    let objects: usize = report.applications[0]
        .segments
        .iter()
        .map(|s| s.objects.len())
        .sum();
    assert_eq!(objects, 20);
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    group.bench_function("1000_apps_x_20_objects_5_steps_instant", |b| {
        b.iter(|| simulate_from_args(&args, &Default::default(), &|_| {}).expect("simulates"));
    });
    group.finish();
}

support::cpu_time_main!(bench);
