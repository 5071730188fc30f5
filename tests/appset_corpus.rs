//! The ApplicationSet corpus: ApplicationSets written from Argo CD's documented examples
//! (Generators-List/Cluster/Git/Matrix/Merge, Template.md, GoTemplate.md), each rendered and
//! compared with the Applications the documentation says it makes, written by hand in
//! `tests/appset_corpus/cases/NAME.expected.yaml` (a list of Applications, or `error: TEXT` for an
//! ApplicationSet Argo CD rejects, TEXT being part of the message). Cluster generators read the
//! cluster Secrets in `tests/appset_corpus/clusters.yaml`; git generators read real repositories
//! this test makes from `tests/appset_corpus/repos/` (one commit each), mapped to the URLs the
//! documentation uses.

use std::path::{Path, PathBuf};
use std::process::Command;

use flotilla::cli::render::{AppSetArgs, render_from_args};

#[path = "support/fixture_dir.rs"]
mod fixture_dir;
use fixture_dir::copy_dir;
use serde_json::Value;

/// The documented examples this corpus must hold at least.
const MINIMUM_CASES: usize = 40;

/// Repository URLs of the documentation and the fixture each one is made from.
const REPOSITORIES: &[(&str, &str)] = &[
    ("https://github.com/argoproj/argo-cd.git", "argo-cd"),
    (
        "https://github.com/example/example-repo.git",
        "example-repo",
    ),
];

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/appset_corpus")
}

/// One commit of every fixture repository, in a temporary directory; `URL=PATH` mappings.
fn repositories(scratch: &Path) -> Vec<String> {
    REPOSITORIES
        .iter()
        .map(|(url, fixture)| {
            let dir = scratch.join(fixture);
            std::fs::create_dir_all(&dir).expect("mkdir");
            copy_dir(&corpus().join("repos").join(fixture), &dir);
            for args in [
                &["init", "-q", "-b", "main"][..],
                &["add", "-A"],
                &["commit", "-q", "-m", "fixture"],
            ] {
                let status = Command::new("git")
                    .arg("-C")
                    .arg(&dir)
                    .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
                    .args(args)
                    .status()
                    .expect("git runs");
                assert!(status.success(), "git {args:?} in {}", dir.display());
            }
            format!("{url}={}", dir.display())
        })
        .collect()
}

/// What one case renders to: its Applications as JSON, or the error message.
fn render(case: &Path, repos: &[String]) -> Result<Value, String> {
    let args = AppSetArgs {
        appset: case.to_path_buf(),
        repos: repos.to_vec(),
        clusters: Some(corpus().join("clusters.yaml")),
        project: flotilla::cli::project_args::ProjectArgs::default(),
    };
    render_from_args(&args)
        .map(|applications| serde_json::to_value(applications).expect("serializes"))
        .map_err(|error| format!("{error:#}"))
}

/// Compares one case with its expectation; the difference in words when they differ.
fn check(case: &Path, repos: &[String]) -> Option<String> {
    let expected_path = case.with_extension("expected.yaml");
    let text = std::fs::read_to_string(&expected_path)
        .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
    let expected: Value = serde_saphyr::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
    let actual = render(case, repos);
    match (&expected, &actual) {
        (Value::Object(map), Err(message)) if map.contains_key("error") => {
            let wanted = map["error"].as_str().unwrap_or_default();
            (!message.contains(wanted))
                .then(|| format!("error {message:?} does not contain {wanted:?}"))
        }
        (_, Ok(applications)) if *applications == expected => None,
        (_, Ok(applications)) => Some(format!(
            "rendered:\n{}",
            serde_saphyr::to_string(applications).unwrap_or_default()
        )),
        (_, Err(message)) => Some(format!("failed: {message}")),
    }
}

#[test]
fn every_documented_example_renders_as_documented() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let repos = repositories(scratch.path());
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus().join("cases"))
        .expect("cases")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            let name = path.to_string_lossy();
            name.ends_with(".yaml") && !name.ends_with(".expected.yaml")
        })
        .collect();
    cases.sort();
    assert!(
        cases.len() >= MINIMUM_CASES,
        "the corpus has {} ApplicationSets, fewer than {MINIMUM_CASES}",
        cases.len()
    );
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            check(case, &repos).map(|difference| format!("{}: {difference}", case.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
