//! Helpers shared by tests/examples.rs and tests/examples_controlplane.rs.
// Each of the two test binaries compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::PathBuf;

use flotilla::cli::render::AppSetArgs;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `actual` against the golden file `examples/expected/{file}` (written instead when
/// `UPDATE_GOLDEN` is set).
pub fn check_golden_file(file: &str, actual: &str) {
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

pub fn args(appset: &str, repos: Vec<String>, clusters: Option<&str>) -> AppSetArgs {
    AppSetArgs {
        appset: root().join("examples").join(appset),
        repos,
        clusters: clusters.map(|c| root().join("examples").join(c)),
        project: flotilla::cli::project_args::ProjectArgs::default(),
    }
}
