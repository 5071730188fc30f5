//! Golden tests: every example ApplicationSet renders to the Applications committed under
//! `examples/expected/`, and the three-tier stack's sources (a Helm chart, Kustomize overlays,
//! plain files) to the manifests committed there. Regenerate with
//! `UPDATE_GOLDEN=1 cargo test --test examples` and review the diff.
//! (The three-tier stack's manifests, which need helm, are checked in examples_controlplane.rs:
//! `UPDATE_GOLDEN=1 cargo test --features controlplane --test examples_controlplane`.)

mod examples_support;
#[path = "support/fixture_dir.rs"]
mod fixture_dir;

use std::process::Command;

use flotilla::cli::render::{AppSetArgs, render_from_args};

use fixture_dir::copy_dir;

use examples_support::{args, check_golden_file, root};

fn check_golden(name: &str, args: &AppSetArgs) {
    let applications =
        render_from_args(args, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let actual = serde_saphyr::to_string(&applications).expect("serializes");
    check_golden_file(&format!("{name}.yaml"), &actual);
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
