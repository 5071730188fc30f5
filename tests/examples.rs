//! Golden tests: every example ApplicationSet renders to the Applications committed under
//! `examples/expected/`, and the three-tier stack's sources (a Helm chart, Kustomize overlays,
//! plain files) to the manifests committed there. Regenerate with
//! `UPDATE_GOLDEN=1 cargo test --test examples` and review the diff.

use std::path::PathBuf;
use std::process::Command;

use flotilla::cli::render::{AppSetArgs, render_from_args};
use flotilla::source::{SourceOptions, generate};
use serde_json::json;

#[path = "support/fixture_dir.rs"]
mod fixture_dir;
use fixture_dir::copy_dir;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn check_golden(name: &str, args: &AppSetArgs) {
    let applications = render_from_args(args).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let actual = serde_saphyr::to_string(&applications).expect("serializes");
    check_golden_file(&format!("{name}.yaml"), &actual);
}

/// `actual` against the golden file `examples/expected/{file}` (written instead when
/// `UPDATE_GOLDEN` is set).
fn check_golden_file(file: &str, actual: &str) {
    let golden = root().join("examples/expected").join(file);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, actual).expect("writes golden file");
    }
    let expected =
        std::fs::read_to_string(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
    assert_eq!(
        actual,
        expected,
        "{file}: output differs from {}",
        golden.display()
    );
}

fn args(appset: &str, repos: Vec<String>, clusters: Option<&str>) -> AppSetArgs {
    AppSetArgs {
        appset: root().join("examples").join(appset),
        repos,
        clusters: clusters.map(|c| root().join("examples").join(c)),
        project: flotilla::cli::project_args::ProjectArgs::default(),
    }
}

#[test]
fn three_tier_stack() {
    check_golden(
        "three-tier-stack",
        &args("three-tier-stack.yaml", vec![], None),
    );
}

#[test]
fn multi_cluster_promotion() {
    check_golden(
        "multi-cluster-promotion",
        &args(
            "multi-cluster-promotion.yaml",
            vec![],
            Some("clusters.yaml"),
        ),
    );
}

#[test]
fn matrix_clusters_apps() {
    check_golden(
        "matrix-clusters-apps",
        &args("matrix-clusters-apps.yaml", vec![], Some("clusters.yaml")),
    );
}

const MONOREPO_URL: &str = "https://git.example.com/acme/monorepo.git";

#[test]
fn monorepo_directories_from_a_plain_directory() {
    let repo = format!(
        "{MONOREPO_URL}={}",
        root().join("examples/repos/monorepo").display()
    );
    check_golden(
        "monorepo-directories",
        &args("monorepo-directories.yaml", vec![repo], None),
    );
}

/// The same example read through the `git` CLI from a real repository, with a later commit on
/// another branch that must not leak into `HEAD`.
#[test]
fn monorepo_directories_from_a_git_repository() {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&root().join("examples/repos/monorepo"), dir.path());
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
            .args(args)
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "monorepo"]);
    git(&["checkout", "-q", "-b", "feature"]);
    std::fs::create_dir_all(dir.path().join("apps/unreleased")).expect("mkdir");
    std::fs::write(
        dir.path().join("apps/unreleased/cm.yaml"),
        "kind: ConfigMap\n",
    )
    .expect("write");
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "unreleased"]);
    git(&["checkout", "-q", "main"]);
    let repo = format!("{MONOREPO_URL}={}", dir.path().display());
    check_golden(
        "monorepo-directories",
        &args("monorepo-directories.yaml", vec![repo], None),
    );
}

/// What the tools make of the three-tier stack's sources, per Application: the real
/// `helm template` of the database's chart with its region's values file, `kustomize build` of
/// the backend's overlay for its region, and the frontend's plain files.
#[test]
fn three_tier_stack_manifests() {
    let applications = render_from_args(&args("three-tier-stack.yaml", vec![], None))
        .unwrap_or_else(|e| panic!("{e:#}"));
    let repo = root().join("examples/repos/platform-manifests");
    let generated: Vec<serde_json::Value> = applications
        .iter()
        .map(|app| {
            let name = app.metadata.name.as_deref().expect("named");
            let dir = repo.join(&app.spec.source.path);
            let options = SourceOptions::of_application(app, None, &[]);
            let (resources, errors) = generate(&dir, &options);
            assert!(errors.is_empty(), "{name}: {errors:?}");
            json!({
                "application": name,
                "generator": options.generator(&dir).to_string(),
                "objects": resources.iter().map(|r| &r.body).collect::<Vec<_>>(),
            })
        })
        .collect();
    let actual = serde_saphyr::to_string(&generated).expect("serializes");
    check_golden_file("three-tier-stack-manifests.yaml", &actual);
}
