//! `flotilla simulate` on inputs that render without helm: project files are read strictly and their
//! windows validated, and a thousand Applications make a bounded timeline and one summary line. The
//! examples (Helm charts) are simulated in simulate.rs.

mod simulate_support;

use std::path::PathBuf;
use std::process::Command;

use flotilla::cli::simulate::simulate_from_args;

use simulate_support::{example, parse, three_tier};

#[test]
fn project_files_are_read_strictly_and_windows_validated() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("platform.yaml");
    let original = std::fs::read_to_string(example("projects/platform.yaml")).unwrap();
    let cases = [
        (
            original.replace("timeZone:", "timezone:"),
            format!(
                "{}: AppProject \"platform\": unsupported field spec.syncWindows.0.timezone: Flotilla does not implement it (check the spelling, or remove it)",
                file.display()
            ),
        ),
        (
            original.replace("duration: 64h", "duration: 64 hours"),
            "project platform: syncWindows[0].duration \"64 hours\": ".to_owned(),
        ),
    ];
    for (text, message) in cases {
        std::fs::write(&file, text).expect("writes the project");
        let args = three_tier(&[&format!("--project={}", file.display())]);
        let error =
            simulate_from_args(&parse(&args), &Default::default(), &|_| {}).expect_err("refused");
        let error = format!("{error:#}");
        assert!(error.starts_with(&message), "{error}");
    }
}

/// A RollingSync ApplicationSet of `count` Applications in three steps (a tenth, three tenths,
/// the rest), each syncing into a namespace of its own from `repo`: a ConfigMap in wave -1
/// (ready at once: a wave that takes no time) and a Deployment in wave 0.
fn large_fleet(dir: &std::path::Path, count: usize) -> (PathBuf, PathBuf) {
    let repo = dir.join("manifests");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(
        repo.join("app.yaml"),
        "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations: {argocd.argoproj.io/sync-wave: \"-1\"}
data: {k: v}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
",
    )
    .unwrap();
    let elements: String = (0..count)
        .map(|i| {
            let tier = if i < count / 10 {
                1
            } else if i < count * 4 / 10 {
                2
            } else {
                3
            };
            format!("          - {{name: app-{i:04}, tier: \"{tier}\"}}\n")
        })
        .collect();
    let step = |tier: u8| {
        format!(
            "        - matchExpressions: [{{key: tier, operator: In, values: [\"{tier}\"]}}]\n          maxUpdate: 100%\n"
        )
    };
    let appset = dir.join("fleet.yaml");
    std::fs::write(
        &appset,
        format!(
            "\
apiVersion: argoproj.io/v1alpha1
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
{}{}{}  template:
    metadata:
      name: '{{{{ .name }}}}'
      labels: {{tier: '{{{{ .tier }}}}'}}
    spec:
      project: default
      source: {{repoURL: https://git.example.com/fleet.git, path: ., targetRevision: main}}
      destination: {{server: https://kubernetes.default.svc, namespace: '{{{{ .name }}}}'}}
      syncPolicy: {{syncOptions: [CreateNamespace=true]}}
",
            step(1),
            step(2),
            step(3)
        ),
    )
    .unwrap();
    (appset, repo)
}

/// 1,000 Applications: the timeline stays a bounded picture — steps collapse into aggregate
/// bars with their counts (unfolding per Application in the HTML), a wave has one colour on
/// every row, the wave that takes no time is drawn; stderr, not a terminal, gets one summary
/// line.
#[test]
fn a_thousand_applications_make_a_bounded_timeline_and_one_summary_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (appset, repo) = large_fleet(dir.path(), 1000);
    let svg_path = dir.path().join("fleet.svg");
    let html_path = dir.path().join("fleet.html");
    let started = std::time::Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .arg("simulate")
        .arg(&appset)
        .arg(format!(
            "--repo=https://git.example.com/fleet.git={}",
            repo.display()
        ))
        .args(["--instant", "-o", "json", "--timeline"])
        .arg(&svg_path)
        .output()
        .expect("flotilla runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    eprintln!("1,000 Applications simulated in {:?}", started.elapsed());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [format!(
            "simulate: Complete after {} (virtual time): 1000/1000 Applications synced, 0 failed, 0 not synced; 3/3 steps complete",
            flotilla::simulate::report::format_seconds(report["totalSeconds"].as_f64().unwrap())
        )]
    );
    let instant_waves = report["applications"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|app| app["segments"].as_array().unwrap())
        .filter(|s| s["wave"] == -1)
        .inspect(|s| assert_eq!(s["start"], s["end"], "{s}"))
        .count();
    assert_eq!(instant_waves, 1000);

    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let document = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let elements = document.descendants().filter(|n| n.is_element()).count();
    assert!(elements < 600, "{elements} elements");
    let class = |name: &str| {
        document
            .descendants()
            .filter(|n| n.attribute("class") == Some(name))
            .collect::<Vec<_>>()
    };
    assert!(class("app-row").len() <= flotilla::simulate::timeline::MAX_APP_ROWS);
    let aggregates = class("aggregate-row");
    assert!(
        !aggregates.is_empty() && aggregates.len() <= 12,
        "{}",
        aggregates.len()
    );
    let counted: usize = aggregates
        .iter()
        .filter(|row| {
            row.descendants().any(|n| {
                n.attribute("data-phase") == Some("Sync") && n.attribute("data-wave") == Some("0")
            })
        })
        .map(|row| {
            row.attribute("data-count")
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(counted + class("app-row").len(), 1000);
    assert!(
        svg.contains(": 600 Applications"),
        "the biggest step says how many"
    );

    let mut fills: std::collections::BTreeMap<
        (String, String),
        std::collections::BTreeSet<String>,
    > = std::collections::BTreeMap::new();
    for bar in class("segment").into_iter().chain(class("aggregate")) {
        fills
            .entry((
                bar.attribute("data-phase").unwrap().to_owned(),
                bar.attribute("data-wave").unwrap().to_owned(),
            ))
            .or_default()
            .insert(bar.attribute("fill").unwrap().to_owned());
        if bar.attribute("data-wave") == Some("-1") {
            let width: f64 = bar.attribute("width").unwrap().parse().unwrap();
            assert!(width >= flotilla::simulate::timeline::MIN_BAR, "{width}");
        }
    }
    let wave = |w: &str| fills[&("Sync".to_owned(), w.to_owned())].clone();
    assert_eq!(wave("-1").len(), 1, "{fills:?}");
    assert_eq!(wave("0").len(), 1, "{fills:?}");
    assert_ne!(wave("-1"), wave("0"));

    // The HTML unfolds each collapsed step under <details>: every Application has its row
    // (200 Applications, for time: their steps collapse as well).
    let (appset, repo) = large_fleet(&dir.path().join("smaller"), 200);
    let output = Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .arg("simulate")
        .arg(&appset)
        .arg(format!(
            "--repo=https://git.example.com/fleet.git={}",
            repo.display()
        ))
        .args(["--instant", "--timeline"])
        .arg(&html_path)
        .output()
        .expect("flotilla runs");
    assert!(output.status.success());
    let html = std::fs::read_to_string(&html_path).unwrap();
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let document = roxmltree::Document::parse_with_options(&html, options).expect("well-formed");
    let details: Vec<_> = document
        .descendants()
        .filter(|n| n.has_tag_name("details"))
        .collect();
    assert!(!details.is_empty());
    let rows = document
        .descendants()
        .filter(|n| n.attribute("class") == Some("app-row"))
        .count();
    let folded: usize = details
        .iter()
        .map(|d| {
            d.descendants()
                .filter(|n| n.attribute("class") == Some("app-row"))
                .count()
        })
        .sum();
    let unfolded = rows - folded;
    assert!(unfolded <= flotilla::simulate::timeline::MAX_APP_ROWS);
    assert_eq!(rows, 200);
}

/// Writes `db → (backend-eu ∥ backend-us) → frontend` as a RollingSync ApplicationSet in
/// `dir`: each component one Application from `repo`, backend-us's manifests with a second
/// wave (so it takes longer than backend-eu).
fn step_graph(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let repo = dir.join("manifests");
    let deployment = |name: &str, wave: i32| {
        format!(
            "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  annotations: {{argocd.argoproj.io/sync-wave: \"{wave}\"}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: {name}, image: nginx}}]
"
        )
    };
    for (component, waves) in [
        ("db", 1),
        ("backend-eu", 1),
        ("backend-us", 2),
        ("frontend", 1),
    ] {
        let path = repo.join(component);
        std::fs::create_dir_all(&path).unwrap();
        let manifests: Vec<String> = (0..waves)
            .map(|wave| deployment(&format!("{component}-{wave}"), wave))
            .collect();
        std::fs::write(path.join("app.yaml"), manifests.join("---\n")).unwrap();
    }
    let appset = dir.join("graph.yaml");
    std::fs::write(
        &appset,
        "\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: graph, namespace: flotilla}
spec:
  goTemplate: true
  generators:
    - list:
        elements:
          - {component: db}
          - {component: backend-eu}
          - {component: backend-us}
          - {component: frontend}
  strategy:
    type: RollingSync
    rollingSync:
      steps:
        - name: db
          matchExpressions: [{key: component, operator: In, values: [db]}]
        - name: backend-eu
          dependsOn: [db]
          matchExpressions: [{key: component, operator: In, values: [backend-eu]}]
        - name: backend-us
          dependsOn: [db]
          matchExpressions: [{key: component, operator: In, values: [backend-us]}]
        - name: frontend
          dependsOn: [backend-eu, backend-us]
          matchExpressions: [{key: component, operator: In, values: [frontend]}]
  template:
    metadata:
      name: '{{ .component }}'
      labels: {component: '{{ .component }}'}
    spec:
      project: default
      source: {repoURL: https://git.example.com/graph.git, path: '{{ .component }}', targetRevision: main}
      destination: {server: https://kubernetes.default.svc, namespace: '{{ .component }}'}
      syncPolicy: {syncOptions: [CreateNamespace=true]}
",
    )
    .unwrap();
    (appset, repo)
}

/// A step graph simulated: both backends start together once the database is done, the
/// frontend once both are; the critical path goes through the slower backend, and the text
/// names the parallel lanes and each step's dependencies.
#[test]
fn a_step_graph_runs_its_lanes_side_by_side_and_the_critical_path_follows_the_slower() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (appset, repo) = step_graph(dir.path());
    let run = |output: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .arg("simulate")
            .arg(&appset)
            .arg(format!(
                "--repo=https://git.example.com/graph.git={}",
                repo.display()
            ))
            .args(["--instant", "-o", output])
            .output()
            .expect("flotilla runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let report: serde_json::Value = serde_json::from_str(&run("json")).expect("JSON");
    assert_eq!(report["ending"], "Complete");
    let steps = report["steps"].as_array().expect("steps");
    let time = |step: usize, field: &str| steps[step][field].as_f64().expect(field);
    assert_eq!(
        time(1, "start"),
        time(2, "start"),
        "both backends start together"
    );
    assert!(time(1, "start") >= time(0, "end"), "after the database");
    assert!(
        time(2, "end") > time(1, "end"),
        "backend-us has a second wave"
    );
    assert!(
        time(3, "start") >= time(2, "end"),
        "the frontend after both"
    );
    assert_eq!(steps[3]["after"], serde_json::json!([2, 3]));
    assert_eq!(steps[3]["name"], "frontend");
    let path: Vec<&str> = report["criticalPath"]
        .as_array()
        .expect("critical path")
        .iter()
        .map(|link| link["application"].as_str().expect("name"))
        .collect();
    assert_eq!(path, ["db", "backend-us", "frontend"]);

    let text = run("text");
    assert!(
        text.contains("Parallel lanes: after step 1: 2 (backend-eu) ∥ 3 (backend-us)\n"),
        "{text}"
    );
    assert!(
        text.contains("  Step 4 (frontend, after steps 2, 3): "),
        "{text}"
    );
}

/// `platform` (database, then cache after database and after services' api) and `services`
/// (api after platform's database), both in one file, with a Deployment per component in
/// `dir`'s repository.
fn platform_and_services(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let repo = dir.join("manifests");
    for component in ["database", "cache", "api"] {
        let path = repo.join(component);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(
            path.join("app.yaml"),
            format!(
                "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {component}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {component}}}}}
  template:
    metadata: {{labels: {{app: {component}}}}}
    spec:
      containers: [{{name: {component}, image: nginx}}]
"
            ),
        )
        .unwrap();
    }
    let appset = |name: &str, elements: &str, steps: &str| {
        format!(
            "apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: {name}, namespace: flotilla}}
spec:
  goTemplate: true
  generators:
    - list:
        elements: {elements}
  strategy:
    type: RollingSync
    rollingSync:
      steps:
{steps}
  template:
    metadata:
      name: '{{{{ .component }}}}'
      labels: {{component: '{{{{ .component }}}}'}}
    spec:
      project: default
      source: {{repoURL: https://git.example.com/stack.git, path: '{{{{ .component }}}}', targetRevision: main}}
      destination: {{server: https://kubernetes.default.svc, namespace: '{{{{ .component }}}}'}}
      syncPolicy: {{syncOptions: [CreateNamespace=true]}}
"
        )
    };
    let platform = appset(
        "platform",
        "[{component: database}, {component: cache}]",
        "        - name: database
          matchExpressions: [{key: component, operator: In, values: [database]}]
        - name: rest
          dependsOn: [database, {applicationSet: services, step: api, sameRevision: true}]
          matchExpressions: [{key: component, operator: In, values: [cache]}]",
    );
    let services = appset(
        "services",
        "[{component: api}]",
        "        - name: api
          dependsOn: [{applicationSet: platform, step: database, sameRevision: true}]
          matchExpressions: [{key: component, operator: In, values: [api]}]",
    );
    let file = dir.join("stack.yaml");
    std::fs::write(&file, format!("{platform}---\n{services}")).unwrap();
    (file, repo)
}

/// Two ApplicationSets of one file simulated together: services' api starts once platform's
/// database is done, platform's cache once the api is; the text orders every step of both.
/// Simulated alone, services waits for an ApplicationSet that is not there, by name.
#[test]
fn application_sets_simulated_together_wait_for_each_others_steps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (file, repo) = platform_and_services(dir.path());
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .arg("simulate")
            .args(args)
            .arg(format!(
                "--repo=https://git.example.com/stack.git={}",
                repo.display()
            ))
            .arg("--instant")
            .output()
            .expect("flotilla runs")
    };
    let file = file.display().to_string();
    let out = run(&[&file, "-o", "json"]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let together: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let step = |appset: usize, step: usize, field: &str| {
        together["applicationSets"][appset]["report"]["steps"][step][field]
            .as_f64()
            .unwrap_or_else(|| panic!("{appset}/{step} {field}: {together:#}"))
    };
    // platform: database (0), rest (1); services: api (0).
    assert!(step(1, 0, "start") >= step(0, 0, "end"), "{together:#}");
    assert!(step(0, 1, "start") >= step(1, 0, "end"), "{together:#}");
    let order: Vec<(String, String)> = together["order"]
        .as_array()
        .expect("order")
        .iter()
        .map(|ran| {
            (
                ran["applicationSet"].as_str().unwrap().to_owned(),
                ran["step"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("platform".to_owned(), "Step 1 (database)".to_owned()),
            (
                "services".to_owned(),
                "Step 1 (api, after ApplicationSet platform step database)".to_owned()
            ),
            (
                "platform".to_owned(),
                "Step 2 (rest, after ApplicationSet services step api)".to_owned()
            ),
        ]
    );
    let text = String::from_utf8(run(&[&file]).stdout).expect("UTF-8");
    assert!(text.contains("Order across ApplicationSets:\n"), "{text}");

    // The flags that script one ApplicationSet's rollout are refused by name, not ignored.
    for (flags, named) in [
        (vec!["--fail", "api"], "--fail is not applied"),
        (
            vec![
                "--analysis",
                "1=fail",
                "--approve",
                "1@5m",
                "--timeline",
                "t.svg",
            ],
            "--analysis, --approve and --timeline are not applied",
        ),
        (vec!["--degrade", "api@1m"], "--degrade is not applied"),
    ] {
        let mut args = vec![file.as_str()];
        args.extend(flags);
        let out = run(&args);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && out.stdout.is_empty()
                && said.contains(&format!(
                    "{named} when several ApplicationSets are simulated together"
                )),
            "{args:?}: {said}"
        );
    }

    // services alone: platform is not there.
    let services = dir.path().join("services.yaml");
    let whole = std::fs::read_to_string(&file).unwrap();
    let (_, alone) = whole.split_once("---\n").expect("two documents");
    std::fs::write(&services, alone).unwrap();
    let out = run(&[&services.display().to_string()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("there is no ApplicationSet platform in namespace flotilla"),
        "{text}"
    );
}
