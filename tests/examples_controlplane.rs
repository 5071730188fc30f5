//! The three-tier example's manifests, rendered with helm (the test environment's): as the golden
//! files say. The other examples render offline, in examples.rs.

mod examples_support;

use flotilla::cli::render::render_from_args;
use flotilla::source::{SourceOptions, generate};
use serde_json::json;

use examples_support::{args, check_golden_file, root};

/// What the tools make of the three-tier stack's sources, per Application: the real
/// `helm template` of the database's chart with its region's values file, `kustomize build` of
/// the backend's overlay for its region, and the frontend's plain files.
#[test]
fn three_tier_stack_manifests() {
    let applications = render_from_args(
        &args("three-tier-stack.yaml", vec![], None),
        &Default::default(),
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    let repo = root().join("examples/repos/platform-manifests");
    let generated: Vec<serde_json::Value> = applications
        .iter()
        .map(|app| {
            let name = app.metadata.name.as_deref().expect("named");
            let dir = repo.join(&app.spec.source.path);
            let options = SourceOptions::of_application(app, None, &[]);
            let (resources, errors) = generate(&Default::default(), &dir, &options);
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
