//! Benchmark: one Application's manifests generated with the real tools by Flotilla's one
//! generation step (`flotilla::source::generate`, what `render`, `plan`, `sync`, the controller
//! and `simulate` call): the three-tier example's database chart with its eu-west values file
//! (`helm template`) and its backend's eu-west overlay (`kubectl kustomize`), as the example's
//! ApplicationSet renders those Applications, checked out from a bare git repository by the
//! controller's repository cache.
//!
//! - `cold`: each iteration at a new commit (an empty commit pushed to the bare repository,
//!   fetched and written out by the repository cache in the untimed setup), so the generation
//!   cache has no entry for it and the tool runs.
//! - `cached`: the same Application at the same commit again: served from the generation cache.
//!
//! Before measuring, the tool-run counter (the controller's `flotilla_source_tool_runs_total`)
//! shows that a new commit runs the tool once and the same inputs again none. Wall time: the tool
//! is a child process, which the benchmark thread's CPU clock would not see. Dropping the
//! generated objects is not counted.
//!
//! `cargo bench --bench chart_generation`; helm and kubectl are found as Flotilla finds them
//! (`FLOTILLA_HELM`, `FLOTILLA_KUBECTL`, else `PATH`; `bash tests/tools/install.sh` installs them).

#[path = "support/git.rs"]
mod git;

use std::path::{Path, PathBuf};

use criterion::{BatchSize, Criterion, SamplingMode};
use flotilla::cluster::generator_inputs::inventory::StaticInventory;
use flotilla::render::{Sources, render_application_set};
use flotilla::repo::LocalRepos;
use flotilla::repo::cache::RepoCache;
use flotilla::source::{SourceOptions, Toolchain, generate};
use flotilla_core::api::Application;
use flotilla_core::api::document::parse_application_set;
use flotilla_core::manifest::Resource;

/// The repository the example's Applications name.
const REPO_URL: &str = "https://git.example.com/acme/platform-manifests.git";

/// The example's repository as a bare repository, a clone that pushes to it, and the
/// controller's repository cache reading it for `REPO_URL`.
struct Fixture {
    _dir: tempfile::TempDir,
    clone: PathBuf,
    cache: RepoCache,
}

impl Fixture {
    fn new() -> Self {
        let example = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = tempfile::tempdir().expect("temporary directory");
        let clone = dir.path().join("clone");
        copy_dir(&example.join("examples/repos/platform-manifests"), &clone);
        git::commit_all(&clone);
        let bare = dir.path().join("platform-manifests.git");
        let bare_path = bare.to_str().expect("a UTF-8 temporary path");
        git::git(
            dir.path(),
            &["clone", "-q", "--bare", clone.to_str().unwrap(), bare_path],
        );
        git::git(&clone, &["remote", "add", "origin", bare_path]);
        let repos = LocalRepos::from_mappings(&[format!("{REPO_URL}={bare_path}")])
            .expect("a repository mapping");
        let cache = RepoCache::new(dir.path().join("cache"), repos, Default::default());
        Self {
            _dir: dir,
            clone,
            cache,
        }
    }

    /// Pushes a new (empty) commit to `main`, then checks `app` out at it as the controller does:
    /// the source directory and the options it is generated with.
    fn next_commit(&self, app: &Application) -> (PathBuf, SourceOptions) {
        git::git(
            &self.clone,
            &["commit", "-q", "--allow-empty", "-m", "next"],
        );
        git::git(&self.clone, &["push", "-q", "origin", "main"]);
        let manifests = self
            .cache
            .application(&app.spec, "", Some(&app.spec.project))
            .expect("checking the source out");
        let options =
            SourceOptions::of_application(app, manifests.revision.clone(), &manifests.sources);
        (manifests.root, options)
    }
}

/// Copies the files under `from` to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("creating a directory");
    for entry in std::fs::read_dir(from).expect("reading the example") {
        let entry = entry.expect("reading the example");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copying the example");
        }
    }
}

/// The example's three-tier ApplicationSet's Application `name`, as Flotilla renders it.
fn example_application(name: &str) -> Application {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/three-tier-stack.yaml");
    let text = std::fs::read_to_string(&file).expect("reading the example");
    let appset = parse_application_set(&file.display().to_string(), &text).expect("the example");
    let inventory = StaticInventory::new(Vec::new());
    let repos = LocalRepos::default();
    render_application_set(&appset, Sources::offline(&inventory, &repos))
        .expect("rendering the example")
        .into_iter()
        .find(|app| app.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("the example renders no Application {name}"))
}

/// The generated objects of `root`, generated by `toolchain` (which keeps what it generated);
/// fails the benchmark on any error.
fn generated(toolchain: &Toolchain, root: &Path, options: &SourceOptions) -> Vec<Resource> {
    let (resources, errors) = generate(toolchain, root, options);
    assert!(errors.is_empty(), "{}: {errors:#?}", root.display());
    resources
}

/// The tools run (counted as the controller's metric counts them) by one generation of `root`,
/// which must produce a `kind`.
fn tool_runs(toolchain: &Toolchain, root: &Path, options: &SourceOptions, kind: &str) -> u64 {
    let runs = flotilla::source::run::runs();
    let before = runs.get();
    let resources = generated(toolchain, root, options);
    assert!(
        resources.iter().any(|r| r.kind == kind),
        "{}: no {kind} generated",
        root.display()
    );
    runs.get() - before
}

/// `cold` and `cached` of the example's Application `name`, whose `tool` makes a `kind`.
fn bench_application(c: &mut Criterion, fixture: &Fixture, name: &str, tool: &str, kind: &str) {
    let app = example_application(name);
    let toolchain = fixture.cache.toolchain();
    let (root, options) = fixture.next_commit(&app);
    assert_eq!(
        tool_runs(toolchain, &root, &options, kind),
        1,
        "{name}: a new commit runs {tool} once"
    );
    assert_eq!(
        tool_runs(toolchain, &root, &options, kind),
        0,
        "{name}: the same inputs again run no tool"
    );
    let mut group = c.benchmark_group(format!("{tool} {name}"));
    group.bench_function("cached", |b| {
        b.iter_with_large_drop(|| generated(toolchain, &root, &options));
    });
    // Tens of milliseconds an iteration, with as long again of untimed git in the setup.
    group.sampling_mode(SamplingMode::Flat).sample_size(20);
    group.bench_function("cold", |b| {
        b.iter_batched(
            || fixture.next_commit(&app),
            |(root, options)| generated(toolchain, &root, &options),
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    let fixture = Fixture::new();
    let (helm, kustomize) = fixture.cache.toolchain().versions();
    for (tool, version) in [("helm", helm), ("kustomize", kustomize)] {
        if let Err(error) = version {
            panic!(
                "{tool} cannot be used: {error}\n(install the tools with \
                 `TOOLS=$(bash tests/tools/install.sh); export FLOTILLA_HELM=$TOOLS/helm \
                 FLOTILLA_KUBECTL=$TOOLS/kubectl`)"
            );
        }
    }
    bench_application(
        c,
        &fixture,
        "platform-database-eu-west",
        "helm",
        "StatefulSet",
    );
    bench_application(
        c,
        &fixture,
        "platform-backend-eu-west",
        "kustomize",
        "Deployment",
    );
}

criterion::criterion_group!(benches, bench);
criterion::criterion_main!(benches);
