//! `flotilla simulate` on the examples: every example rolls out to completion, an injected
//! PreSync failure in the database stops the rest of the three-tier stack and the report says
//! why, the timeline is well-formed SVG/HTML with one row per Application, `-o json` gives
//! the same report to scripts, a project's freeze window holds a step on the virtual clock, and
//! the three-tier stack's report matches its golden file.
//! (Feature `controlplane`, for helm; the inputs that render without it are in simulate_offline.rs.)

mod simulate_support;

use std::process::Command;

use flotilla::cli::simulate::{simulate_from_args, table, write_timeline};
use flotilla::simulate::driver::WaitKind;
use flotilla::simulate::report::{Ending, Report};

use simulate_support::{example, examples, parse, root, simulate, three_tier};

#[test]
fn every_example_rolls_out_completely() {
    for (name, args) in examples() {
        let report = simulate(&args);
        assert_eq!(
            report.ending,
            Ending::Complete,
            "{name}:\n{}",
            table(&report)
        );
        assert!(report.total_seconds > 0.0, "{name}");
        assert!(report.blocked.is_empty(), "{name}: {:?}", report.blocked);
        for app in &report.applications {
            assert_eq!(app.result, "Succeeded", "{name}: {}", app.name);
            assert!(!app.segments.is_empty(), "{name}: {}", app.name);
        }
    }
}

#[test]
fn three_tier_stack_runs_steps_phases_and_waves_in_order() {
    let report = simulate(&three_tier(&[]));
    let order: Vec<(Option<usize>, &str, Vec<&str>)> = report
        .applications
        .iter()
        .map(|a| {
            let labels = a.segments.iter().map(|s| s.label.as_str()).collect();
            (a.step, a.name.as_str(), labels)
        })
        .collect();
    assert_eq!(
        order,
        [
            (
                Some(1),
                "platform-database-eu-west",
                vec!["PreSync", "wave -1", "wave 0"]
            ),
            (
                Some(1),
                "platform-database-us-east",
                vec!["PreSync", "wave -1", "wave 0"]
            ),
            (
                Some(2),
                "platform-backend-eu-west",
                vec!["wave -1", "wave 0"]
            ),
            (
                Some(2),
                "platform-backend-us-east",
                vec!["wave -1", "wave 0"]
            ),
            (
                Some(3),
                "platform-frontend-eu-west",
                vec!["wave 0", "PostSync"]
            ),
            (
                Some(3),
                "platform-frontend-us-east",
                vec!["wave 0", "PostSync"]
            ),
        ]
    );
    let apps = &report.applications;
    for earlier in apps {
        for later in apps.iter().filter(|a| a.step > earlier.step) {
            assert!(
                earlier.end <= later.start,
                "{} before {}",
                earlier.name,
                later.name
            );
        }
    }
    // PreSync migration 4s, then the StatefulSet's pods one after another (3s each): the
    // chart's values for eu-west ask for three, its defaults (us-east) for two. Its wave is the
    // last: the operation ends once it is applied, and the Application is Healthy when the pods
    // are ready.
    for (app, pods) in [(&apps[0], 3.0), (&apps[1], 2.0)] {
        let database = &app.segments;
        assert!(
            (database[0].end - database[0].start - 4.0).abs() < 0.5,
            "{database:?}"
        );
        assert!(database[2].end - database[2].start < 0.5, "{database:?}");
        let healthy = app.healthy.expect("Healthy after its sync");
        assert!(
            (healthy - database[2].start - 3.0 * pods).abs() < 1.0,
            "{}: Healthy at {healthy}: {database:?}",
            app.name
        );
    }
    assert_eq!(report.critical_path.len(), 3);
    assert!(
        report
            .condition
            .as_deref()
            .unwrap_or("")
            .contains("rollout complete")
    );
}

/// The three-tier stack's report, as `flotilla simulate --instant` prints it, against
/// `examples/expected/three-tier-stack-simulate.txt` (rewritten when `UPDATE_GOLDEN` is set).
#[test]
fn three_tier_stack_report_matches_its_golden() {
    let actual = table(&simulate(&three_tier(&[])));
    let golden = root().join("examples/expected/three-tier-stack-simulate.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &actual).expect("writes the golden file");
    }
    let expected = std::fs::read_to_string(&golden).expect("the golden file");
    assert_eq!(actual, expected, "differs from {}", golden.display());
}

#[test]
fn failing_presync_in_the_database_leaves_backend_and_frontend_unsynced() {
    let report = simulate(&three_tier(&[
        "--fail",
        "platform-database-eu-west/Job/db-migrate",
    ]));
    assert_eq!(report.ending, Ending::Failed, "{}", table(&report));
    let database = &report.applications[0];
    assert_eq!(database.result, "Failed");
    assert_eq!(
        database.segments.len(),
        1,
        "nothing after the PreSync hook ran"
    );
    assert!(database.segments[0].failed);
    assert!(
        database.message.contains("db-migrate hook failed"),
        "{}",
        database.message
    );
    assert_eq!(
        report.applications[1].result, "Succeeded",
        "the other region"
    );
    for app in &report.applications[2..] {
        assert_eq!(app.result, "NotSynced", "{}", app.name);
        assert!(app.segments.is_empty());
    }
    let reasons: Vec<String> = report
        .blocked
        .iter()
        .map(|b| format!("{}: {}", b.application, b.reason))
        .collect();
    assert_eq!(reasons.len(), 5, "{reasons:?}");
    assert!(
        reasons[1].starts_with("platform-backend-eu-west: Waiting in step 2"),
        "{reasons:?}"
    );
    assert!(
        reasons[2].contains("closed until step 1 completes"),
        "{reasons:?}"
    );
    let condition = report.condition.as_deref().unwrap_or("");
    assert!(condition.contains("RolloutStalled"), "{condition}");
    assert!(condition.contains("db-migrate hook failed"), "{condition}");
    let text = table(&report);
    assert!(text.contains("PreSync 4s FAILED"), "{text}");
}

#[test]
fn a_whole_failing_application_and_unknown_selectors() {
    let report = simulate(&three_tier(&["--fail", "platform-backend-eu-west"]));
    assert_eq!(report.ending, Ending::Failed);
    // As in Argo CD, its sync succeeds once its last wave is applied; it is Degraded after.
    let backend = &report.applications[2];
    assert_eq!(backend.result, "Succeeded", "{}", table(&report));
    assert_eq!(backend.healthy, None, "{}", table(&report));
    let condition = report.condition.as_deref().unwrap_or("");
    assert!(
        condition.contains("platform-backend-eu-west Degraded"),
        "{condition}"
    );
    assert_eq!(report.applications[4].result, "NotSynced");

    for (selector, expected) in [
        ("backend", "no Application \"backend\""),
        (
            "platform-backend-eu-west/Job/missing",
            "no workload, Job or Pod of that name",
        ),
    ] {
        let error = simulate_from_args(
            &parse(&three_tier(&["--fail", selector])),
            &Default::default(),
            &|_| {},
        )
        .expect_err(selector)
        .to_string();
        assert!(error.contains(expected), "{selector}: {error}");
    }
}

#[test]
fn duration_overrides_and_annotations_set_the_pace() {
    let fast = simulate(&three_tier(&["--duration", "Job=1s"]));
    // The migration's own annotation (4s) wins over the kind's duration.
    let presync = &fast.applications[0].segments[0];
    assert!(
        (presync.end - presync.start - 4.0).abs() < 0.5,
        "{presync:?}"
    );
}

#[test]
fn timeline_is_well_formed_with_one_row_per_application() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, args) in examples() {
        let report = simulate(&args);
        for file in ["timeline.svg", "timeline.html"] {
            let path = dir.path().join(format!("{name}-{file}"));
            write_timeline(&path, &report).expect("writes the timeline");
            let text = std::fs::read_to_string(&path).expect("reads it back");
            let options = roxmltree::ParsingOptions {
                allow_dtd: true,
                ..roxmltree::ParsingOptions::default()
            };
            let document = roxmltree::Document::parse_with_options(&text, options)
                .unwrap_or_else(|e| panic!("{name} {file} is not well-formed: {e}"));
            let svg = document
                .descendants()
                .find(|n| n.has_tag_name("svg"))
                .expect("an svg element");
            assert_eq!(
                svg.tag_name().namespace(),
                Some("http://www.w3.org/2000/svg")
            );
            let mut rows: Vec<&str> = svg
                .descendants()
                .filter(|n| n.attribute("class") == Some("app-row"))
                .filter_map(|n| n.attribute("data-app"))
                .collect();
            rows.sort_unstable();
            let mut apps: Vec<&str> = report
                .applications
                .iter()
                .map(|a| a.name.as_str())
                .collect();
            apps.sort_unstable();
            assert_eq!(rows, apps, "{name} {file}");
            for external in ["<script", "href=", "src=", "@import"] {
                assert!(!text.contains(external), "{name} {file} loads {external}");
            }
        }
    }
}

#[test]
fn timeline_marks_the_failed_segment() {
    let report = simulate(&three_tier(&[
        "--fail",
        "platform-database-eu-west/Job/db-migrate",
    ]));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("failed.svg");
    write_timeline(&path, &report).expect("writes");
    let text = std::fs::read_to_string(&path).expect("reads");
    let document = roxmltree::Document::parse(&text).expect("well-formed");
    let failed: Vec<_> = document
        .descendants()
        .filter(|n| {
            n.attribute("class") == Some("segment") && n.attribute("fill") == Some("#d62728")
        })
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(text.contains("✕ PreSync"));
}

#[test]
fn json_output_and_exit_code_from_the_binary() {
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args(["simulate", "--instant", "-o", "json"])
            .args(three_tier(extra))
            .output()
            .expect("runs flotilla simulate")
    };
    let ok = run(&[]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("JSON");
    assert_eq!(json["ending"], "Complete");
    assert_eq!(json["applications"].as_array().map(Vec::len), Some(6));
    assert_eq!(
        json["steps"][2]["applications"][0],
        "platform-frontend-eu-west"
    );

    let failed = run(&["--fail", "platform-database-eu-west/Job/db-migrate"]);
    assert_eq!(failed.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&failed.stdout).expect("JSON");
    assert_eq!(json["ending"], "Failed");
    assert_eq!(json["applications"][2]["result"], "NotSynced");
}

/// The three-tier example without its `CreateNamespace=true`, in a temporary file.
fn three_tier_without_create_namespace() -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("three-tier-stack.yaml");
    let text = std::fs::read_to_string(example("three-tier-stack.yaml")).expect("the example");
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| {
            !["syncPolicy:", "syncOptions:", "CreateNamespace=true"]
                .iter()
                .any(|option| line.contains(option))
        })
        .collect();
    std::fs::write(&file, kept.join("\n")).expect("writes the ApplicationSet");
    let mut args = examples().swap_remove(0).1;
    args[0] = file.display().to_string();
    (dir, args)
}

#[test]
fn a_destination_namespace_nobody_creates_fails_as_on_a_new_cluster() {
    let (_dir, args) = three_tier_without_create_namespace();
    let report = simulate(&args);
    assert_eq!(report.ending, Ending::Failed, "{}", table(&report));
    let text = table(&report);
    assert!(
        text.contains("namespaces \"platform-eu-west\" not found"),
        "{text}"
    );
    let mut existing = args;
    existing.push("--existing-namespace=platform-eu-west".to_owned());
    existing.push("--existing-namespace=platform-us-east".to_owned());
    assert_eq!(simulate(&existing).ending, Ending::Complete);
}

#[test]
fn configured_health_checks_judge_simulated_objects_as_the_controller_does() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("argocd-cm.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\ndata:\n  resource.customizations.health.apps_Deployment: |\n    return {status = \"Degraded\", message = \"held by a custom check\"}\n",
    )
    .expect("writes the ConfigMap");
    let report = simulate(&three_tier(&[&format!(
        "--resource-customizations={}",
        file.display()
    )]));
    let text = table(&report);
    assert_eq!(report.ending, Ending::Failed, "{text}");
    assert!(text.contains("held by a custom check"), "{text}");

    std::fs::write(&file, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\ndata:\n  resource.customizations.health.: x\n")
        .expect("writes the ConfigMap");
    let error = simulate_from_args(
        &parse(&three_tier(&[&format!(
            "--resource-customizations={}",
            file.display()
        )])),
        &Default::default(),
        &|_| {},
    )
    .expect_err("a key without a kind");
    assert_eq!(
        format!("{error:#}"),
        format!(
            "{}: key resource.customizations.health.: expected <group>_<Kind> after resource.customizations.health.",
            file.display()
        )
    );
}

/// The example project's Friday freeze (16:00 Berlin for 64h), the rollout started at 15:59:55
/// Berlin: the database syncs, the backend waits until Monday 08:00 Berlin, then the rest runs.
#[test]
fn a_freeze_holds_the_next_step_until_it_opens() {
    let project = format!("--project={}", example("projects/platform.yaml"));
    let report = simulate(&three_tier(&[&project, "--start=2026-12-04T14:59:55Z"]));
    let text = table(&report);
    assert_eq!(report.ending, Ending::Complete, "{text}");
    let start = |name: &str| {
        report
            .applications
            .iter()
            .find(|a| a.name == name)
            .and_then(|a| a.start)
            .unwrap_or_else(|| panic!("{name} started:\n{text}"))
    };
    // Monday 07:00Z is 64h05s after the start.
    let opens = f64::from(64 * 3600 + 5);
    assert_eq!(start("platform-database-eu-west"), 0.0, "{text}");
    assert_eq!(start("platform-backend-eu-west"), opens, "{text}");
    assert_eq!(start("platform-backend-us-east"), opens, "{text}");
    assert!(start("platform-frontend-us-east") > opens, "{text}");
    let [wait] = report.step_waits.as_slice() else {
        panic!("one wait:\n{text}")
    };
    assert_eq!(wait.step, 2);
    assert_eq!(wait.end, opens);
    assert!(wait.start > 0.0 && wait.start < 60.0, "{text}");
    assert_eq!(
        wait.reason,
        "waits for window 'prod freeze' (opens Mon 08:00 Europe/Berlin); held back: platform-backend-eu-west, platform-backend-us-east"
    );
    assert!(text.contains("\nSync windows:\n  step 2 "), "{text}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("freeze.svg");
    write_timeline(&path, &report).expect("writes the timeline");
    let svg = std::fs::read_to_string(&path).expect("reads the timeline");
    roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert_eq!(svg.matches(r#"class="window-wait""#).count(), 1);
    assert!(
        svg.contains("waits for window &#39;prod freeze&#39;"),
        "{svg}"
    );

    // Started on Monday after the freeze: nothing waits.
    let monday = simulate(&three_tier(&[&project, "--start=2026-12-07T07:00:00Z"]));
    assert!(monday.step_waits.is_empty());
    assert!(monday.total_seconds < 60.0);
}

/// The three-tier stack with `AllAtOnce` (no rollingSync steps), started inside the freeze
/// (Friday 16:30 Berlin): no Application syncs until the freeze ends on Monday 08:00 Berlin, then
/// all do, as the controller holds each automated sync. Started before it, all sync at once.
#[test]
fn all_at_once_waits_for_the_freeze_like_the_controller() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("all-at-once.yaml");
    let text = std::fs::read_to_string(example("three-tier-stack.yaml")).expect("the example");
    let (head, rest) = text.split_once("  strategy:\n").expect("a strategy");
    let (_, tail) = rest.split_once("  template:\n").expect("a template");
    std::fs::write(
        &file,
        format!("{head}  strategy:\n    type: AllAtOnce\n  template:\n{tail}"),
    )
    .expect("writes the ApplicationSet");
    let project = format!("--project={}", example("projects/platform.yaml"));
    let mut args = three_tier(&[&project, "--start=2026-12-04T15:30:00Z"]);
    args[0] = file.display().to_string();
    let report = simulate(&args);
    let text = table(&report);
    assert_eq!(report.ending, Ending::Complete, "{text}");
    assert_eq!(report.strategy, "AllAtOnce", "{text}");
    // Monday 07:00Z is 63h30m after the start.
    let opens = f64::from(63 * 3600 + 30 * 60);
    for app in &report.applications {
        assert_eq!(app.start, Some(opens), "{}:\n{text}", app.name);
    }
    let [wait] = report.step_waits.as_slice() else {
        panic!("one wait:\n{text}")
    };
    assert_eq!((wait.step, wait.start, wait.end), (1, 0.0, opens), "{text}");
    assert!(
        wait.reason.contains(
            "waits for window 'prod freeze' (opens Mon 08:00 Europe/Berlin) (and 5 more)"
        ),
        "{}",
        wait.reason
    );
    assert!(text.contains("\nSync windows:\n  step 1 "), "{text}");

    args.retain(|arg| !arg.starts_with("--start="));
    args.push("--start=2026-12-04T14:00:00Z".to_owned());
    let before = simulate(&args);
    assert!(before.step_waits.is_empty());
    assert!(before.applications.iter().all(|a| a.start == Some(0.0)));
}

/// On a terminal (a pty from util-linux's `script`), stderr gets one status line redrawn in
/// place with the virtual time, step k/N and the Applications synced — not a line per event.
#[test]
fn a_terminal_shows_one_status_line() {
    let mut args = vec!["simulate".to_owned(), "--instant".to_owned()];
    args.extend(examples().remove(0).1);
    let command = std::iter::once(env!("CARGO_BIN_EXE_flotilla").to_owned())
        .chain(args)
        .map(|arg| format!("'{arg}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let output = Command::new("script")
        .args(["-qec", &format!("{command} >/dev/null"), "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{text:?}");
    let redraws: Vec<&str> = lines[0]
        .split("\r\x1b[2K")
        .filter(|d| !d.is_empty())
        .collect();
    assert!(
        redraws
            .last()
            .unwrap()
            .trim_end()
            .starts_with("[     20s] step 3/3 · 6/6 synced · platform-frontend-us-east: "),
        "{text:?}"
    );
    assert!(redraws.iter().all(|d| d.contains(" synced · ")), "{text:?}");
}

/// The three-tier stack with a 20-minute bake on step 1 (the databases): the backends start at
/// least 20 minutes after the last database is Healthy, the report lists the bake, and the
/// timeline shades it.
#[test]
fn a_bake_on_step_one_delays_step_two_by_the_bake_time() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("baked.yaml");
    let text = std::fs::read_to_string(example("three-tier-stack.yaml")).expect("the example");
    let first_step = "              values: [\"1\"]\n          maxUpdate: 100%\n";
    assert!(text.contains(first_step), "the example's first step");
    std::fs::write(
        &file,
        text.replacen(
            first_step,
            &format!("{first_step}          bakeTime: 20m\n"),
            1,
        ),
    )
    .expect("writes the ApplicationSet");
    let mut args = three_tier(&[]);
    args[0] = file.display().to_string();
    let report = simulate(&args);
    let text = table(&report);
    assert_eq!(report.ending, Ending::Complete, "{text}");
    let app = |name: &str| {
        report
            .applications
            .iter()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("{name}:\n{text}"))
    };
    let databases_done = ["platform-database-eu-west", "platform-database-us-east"]
        .iter()
        .filter_map(|name| app(name).done())
        .fold(0.0, f64::max);
    let backend = app("platform-backend-eu-west")
        .start
        .expect("backend started");
    assert!(
        backend >= databases_done + 1200.0 && backend < databases_done + 1210.0,
        "backend at {backend}, databases done at {databases_done}:\n{text}"
    );
    let [bake] = report.step_waits.as_slice() else {
        panic!("one bake:\n{text}")
    };
    assert_eq!(bake.step, 1);
    let baked = bake.end - bake.start;
    assert!((1200.0..1202.0).contains(&baked), "baked {baked}s:\n{text}");
    assert!(bake.reason.starts_with("bakes until "), "{}", bake.reason);
    assert!(text.contains("\nBakes:\n  step 1 "), "{text}");
    assert!(!text.contains("Sync windows:"), "{text}");
    let path = dir.path().join("baked.svg");
    write_timeline(&path, &report).expect("writes the timeline");
    let svg = std::fs::read_to_string(&path).expect("reads the timeline");
    roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert_eq!(svg.matches(r#"class="bake""#).count(), 1, "{svg}");
}

/// The three-tier stack's ApplicationSet with `step1` and `step2` added to its first two steps
/// and `rolling` to `rollingSync`, written to `dir`; the arguments to simulate it with `extra`.
fn three_tier_with(
    dir: &std::path::Path,
    step1: &str,
    step2: &str,
    rolling: &str,
    extra: &[&str],
) -> Vec<String> {
    let text = std::fs::read_to_string(example("three-tier-stack.yaml")).expect("the example");
    let step = |n: &str| format!("              values: [\"{n}\"]\n          maxUpdate: 100%\n");
    let (first, second) = (step("1"), step("2"));
    assert!(
        text.contains(&first) && text.contains(&second),
        "the example's steps"
    );
    let text = text
        .replacen(&first, &format!("{first}{step1}"), 1)
        .replacen(&second, &format!("{second}{step2}"), 1)
        .replacen(
            "    rollingSync:\n",
            &format!("    rollingSync:\n{rolling}"),
            1,
        );
    let file = dir.join("scripted.yaml");
    std::fs::write(&file, text).expect("writes the ApplicationSet");
    let mut args = three_tier(extra);
    args[0] = file.display().to_string();
    args
}

const DATABASES: [&str; 2] = ["platform-database-eu-west", "platform-database-us-east"];

fn app_named<'a>(report: &'a Report, name: &str) -> &'a flotilla::simulate::report::AppReport {
    report
        .applications
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("{name}:\n{}", table(report)))
}

fn databases_done(report: &Report) -> f64 {
    DATABASES
        .iter()
        .filter_map(|name| app_named(report, name).done())
        .fold(0.0, f64::max)
}

/// A manual step 2: without `--approve` the simulation stops there (the backends never sync,
/// the wait for approval is reported to the end); with `--approve 2@30m` the backends start at
/// 30 minutes, and the report and timeline show the wait.
#[test]
fn approve_lets_a_manual_step_start_at_its_virtual_time() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let manual = "          approval: manual\n";
    let waiting = simulate(&three_tier_with(dir.path(), "", manual, "", &[]));
    let text = table(&waiting);
    assert_eq!(waiting.ending, Ending::Stuck, "{text}");
    assert!(
        app_named(&waiting, "platform-backend-eu-west")
            .start
            .is_none(),
        "{text}"
    );
    let [wait] = waiting.step_waits.as_slice() else {
        panic!("one wait:\n{text}")
    };
    assert_eq!((wait.step, wait.kind), (2, WaitKind::Approval));
    assert!(
        wait.reason.starts_with("waits for approval since "),
        "{}",
        wait.reason
    );

    let approved = simulate(&three_tier_with(
        dir.path(),
        "",
        manual,
        "",
        &["--approve", "2@30m"],
    ));
    let text = table(&approved);
    assert_eq!(approved.ending, Ending::Complete, "{text}");
    let backend = app_named(&approved, "platform-backend-eu-west")
        .start
        .expect("the backend started");
    assert!(
        (1800.0..1802.0).contains(&backend),
        "backend at {backend}:\n{text}"
    );
    let [wait] = approved.step_waits.as_slice() else {
        panic!("one wait:\n{text}")
    };
    assert_eq!(wait.kind, WaitKind::Approval);
    assert!((1800.0..1802.0).contains(&wait.end), "{text}");
    assert!(text.contains("\nApprovals:\n  step 2 "), "{text}");
    let path = dir.path().join("approved.svg");
    write_timeline(&path, &approved).expect("writes the timeline");
    let svg = std::fs::read_to_string(&path).expect("reads the timeline");
    roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert_eq!(svg.matches(r#"class="approval-wait""#).count(), 1);

    // An --approve of a step without approval: manual is refused by name.
    let error = simulate_from_args(
        &parse(&three_tier_with(
            dir.path(),
            "",
            manual,
            "",
            &["--approve", "1@1m"],
        )),
        &Default::default(),
        &|_| {},
    )
    .unwrap_err();
    assert_eq!(
        format!("{error:#}"),
        "--approve: step 1 has no approval: manual"
    );
}

/// A Job analysis on step 1: `after:10m` holds the backends 10 minutes after the databases are
/// Healthy; `fail` fails step 1 (onFailure pause: the backends never sync); the report and
/// timeline show the analysis.
#[test]
fn analysis_outcomes_play_on_the_virtual_clock() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let analysis = "          analysis:\n            job:\n              spec:\n                template:\n                  spec:\n                    restartPolicy: Never\n                    containers: [{name: smoke, image: example.com/smoke:1}]\n";
    let passing = simulate(&three_tier_with(dir.path(), analysis, "", "", &[]));
    assert_eq!(passing.ending, Ending::Complete, "{}", table(&passing));

    let slow = simulate(&three_tier_with(
        dir.path(),
        analysis,
        "",
        "",
        &["--analysis", "1=after:10m"],
    ));
    let text = table(&slow);
    assert_eq!(slow.ending, Ending::Complete, "{text}");
    let done = databases_done(&slow);
    let backend = app_named(&slow, "platform-backend-eu-west")
        .start
        .expect("the backend started");
    let [wait] = slow.step_waits.as_slice() else {
        panic!("one wait:\n{text}")
    };
    assert_eq!((wait.step, wait.kind), (1, WaitKind::Analysis));
    // Times in status are whole seconds: the analysis starts in the second the databases are
    // seen Healthy.
    assert!(
        (599.0..602.0).contains(&(wait.end - wait.start)) && wait.start >= done - 1.0,
        "analysed from {} to {}, databases done at {done}:\n{text}",
        wait.start,
        wait.end
    );
    assert!(
        backend >= wait.end && backend >= done + 598.0,
        "backend at {backend}:\n{text}"
    );
    assert!(text.contains("\nAnalyses:\n  step 1 "), "{text}");
    let path = dir.path().join("analysis.html");
    write_timeline(&path, &slow).expect("writes the timeline");
    let html = std::fs::read_to_string(&path).expect("reads the timeline");
    assert_eq!(html.matches(r#"class="analysis""#).count(), 1);

    let failing = simulate(&three_tier_with(
        dir.path(),
        analysis,
        "",
        "",
        &["--analysis", "1=fail"],
    ));
    let text = table(&failing);
    assert_eq!(failing.ending, Ending::Failed, "{text}");
    assert!(
        app_named(&failing, "platform-backend-eu-west")
            .start
            .is_none(),
        "{text}"
    );
    let condition = failing.condition.as_ref().expect("the rollout's condition");
    assert!(
        condition.contains("failed: analysis Job platform-eu-west/platform-stack-analysis-1-")
            && condition.contains("failed (--analysis)"),
        "{condition}"
    );

    let error = simulate_from_args(
        &parse(&three_tier_with(
            dir.path(),
            analysis,
            "",
            "",
            &["--analysis", "2=pass"],
        )),
        &Default::default(),
        &|_| {},
    )
    .unwrap_err();
    assert_eq!(format!("{error:#}"), "--analysis: step 2 has no analysis");
    // An analysis that cannot be followed is refused by name before anything runs.
    let both = format!("{analysis}            http: {{url: http://127.0.0.1:1/}}\n");
    let error = simulate_from_args(
        &parse(&three_tier_with(dir.path(), &both, "", "", &[])),
        &Default::default(),
        &|_| {},
    )
    .unwrap_err();
    assert!(
        format!("{error:#}").ends_with(
            "ApplicationSet platform-stack: spec.strategy.rollingSync: step 1: analysis: set exactly one of job, http, prometheus and web"
        ),
        "{error:#}"
    );
}

/// `--degrade` during step 1's bake with `onFailure: rollback`: the step fails, the degraded
/// database is synced back (a rollback bar after its sync), the rollout ends RolledBack with
/// the backends never synced, and the timeline shows the bake and the rollback.
#[test]
fn degrade_fails_a_baking_step_and_the_rollback_plays() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let args = three_tier_with(
        dir.path(),
        "          bakeTime: 1h\n",
        "",
        "      onFailure: rollback\n",
        &["--degrade", "platform-database-eu-west@30m"],
    );
    let report = simulate(&args);
    let text = table(&report);
    assert_eq!(report.ending, Ending::RolledBack, "{text}");
    let database = app_named(&report, "platform-database-eu-west");
    let (start, end) = database.rollback.expect("the database was rolled back");
    assert!((1800.0..1802.0).contains(&start), "{text}");
    assert!(end > start, "{text}");
    assert!(
        app_named(&report, "platform-backend-eu-west")
            .start
            .is_none(),
        "{text}"
    );
    let kinds: Vec<WaitKind> = report.step_waits.iter().map(|w| w.kind).collect();
    assert_eq!(kinds, [WaitKind::Bake, WaitKind::Rollback], "{text}");
    assert!(text.contains("\nRollbacks:\n  step 1 "), "{text}");
    let path = dir.path().join("rollback.svg");
    write_timeline(&path, &report).expect("writes the timeline");
    let svg = std::fs::read_to_string(&path).expect("reads the timeline");
    roxmltree::Document::parse(&svg).expect("well-formed SVG");
    assert_eq!(
        svg.matches(r#"class="rollback""#).count(),
        2,
        "both databases rolled back"
    );
    assert_eq!(svg.matches(r#"class="rollback-wait""#).count(), 1);
    let error = simulate_from_args(
        &parse(&three_tier(&["--degrade", "nobody@1m"])),
        &Default::default(),
        &|_| {},
    )
    .unwrap_err();
    assert!(
        format!("{error:#}").starts_with("--degrade nobody@1m0s: no Application \"nobody\""),
        "{error:#}"
    );
}
