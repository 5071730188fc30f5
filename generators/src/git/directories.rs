//! The git `directories` generator: one parameter set per directory of the repository (every
//! directory holding a file, at any depth, except the root and hidden `.name` directories and
//! what is under them) selected by the `directories` globs, where `*` stays inside one segment.
//! Directories come in depth-first order, as a walk of the checkout lists them.

use std::collections::BTreeSet;

use super::paths::{PathPatterns, path_params, snapshot};
use crate::generator::{GenerateContext, GeneratorError, add_templated_values};
use crate::params::Params;
use crate::spec::GitGenerator;

/// Expands `spec.directories`.
pub(crate) fn generate(
    spec: &GitGenerator,
    ctx: &GenerateContext<'_>,
) -> Result<Vec<Params>, GeneratorError> {
    let patterns = PathPatterns::compile(&spec.directories, true)?;
    let tree = snapshot(spec, ctx)?;
    let mut sets = Vec::new();
    for dir in directories(&tree.files) {
        let dir = dir.join("/");
        if !patterns.selects(&dir) {
            continue;
        }
        let mut params = path_params(&dir, None, spec.path_param_prefix.as_deref(), ctx.mode());
        add_templated_values(&spec.values, &mut params, ctx)?;
        sets.push(params);
    }
    Ok(sets)
}

/// Every non-hidden directory that is a proper prefix of a file path, as segments, sorted so a
/// directory comes right before its subdirectories.
fn directories(files: &[String]) -> BTreeSet<Vec<&str>> {
    let mut dirs = BTreeSet::new();
    for file in files {
        let segments: Vec<&str> = file.split('/').collect();
        let parents = &segments[..segments.len().saturating_sub(1)];
        for depth in 1..=parents.len() {
            let dir = &parents[..depth];
            if dir
                .last()
                .is_some_and(|s| s.starts_with('.') || s.is_empty())
            {
                break;
            }
            dirs.insert(dir.to_vec());
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::generator::GeneratorErrorReason;
    use crate::source::GitError;
    use crate::testing::{MemoryGit, MemoryInventory, fast, go, params, run_with};

    const REPO: &str = "https://git.example/apps.git";

    fn git() -> MemoryGit {
        MemoryGit::default().with_commit(
            REPO,
            "HEAD",
            "c1",
            &[
                ("README.md", ""),
                ("apps/a/kustomization.yaml", ""),
                ("apps/b/deep/values.yaml", ""),
                ("apps/My_App/x", ""),
                ("apps-extra/c/x", ""),
                (".github/workflows/ci.yaml", ""),
                ("apps/.hidden/x", ""),
            ],
        )
    }

    fn paths(spec: serde_json::Value) -> Vec<String> {
        let sets = run_with(&fast(), &MemoryInventory::default(), &git(), &spec).unwrap();
        sets.iter()
            .map(|p| p["path"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn dirs(items: serde_json::Value) -> serde_json::Value {
        json!({"git": {"repoURL": REPO, "directories": items}})
    }

    #[test]
    fn star_stays_in_a_segment_and_double_star_recurses() {
        assert_eq!(
            paths(dirs(json!([{"path": "apps/*"}]))),
            ["apps/My_App", "apps/a", "apps/b"]
        );
        assert_eq!(
            paths(dirs(json!([{"path": "apps/**"}]))),
            ["apps/My_App", "apps/a", "apps/b", "apps/b/deep"]
        );
        assert_eq!(paths(dirs(json!([{"path": "*"}]))), ["apps", "apps-extra"]);
    }

    #[test]
    fn exclude_removes_matches_whatever_the_order() {
        let items = json!([{"path": "apps/b", "exclude": true}, {"path": "apps/*"}, {"path": "apps-extra/*"}]);
        assert_eq!(
            paths(dirs(items)),
            ["apps/My_App", "apps/a", "apps-extra/c"]
        );
    }

    #[test]
    fn fasttemplate_path_params_with_segments_and_prefix() {
        let spec = json!({"git": {"repoURL": REPO, "directories": [{"path": "apps/My_App"}]}});
        let sets = run_with(&fast(), &MemoryInventory::default(), &git(), &spec).unwrap();
        assert_eq!(
            sets,
            vec![params(json!({
                "path": "apps/My_App",
                "path.basename": "My_App",
                "path.basenameNormalized": "my-app",
                "path[0]": "apps",
                "path[1]": "My_App",
            }))]
        );
        let spec = json!({"git": {"repoURL": REPO, "pathParamPrefix": "app", "directories": [{"path": "apps/a"}]}});
        let sets = run_with(&fast(), &MemoryInventory::default(), &git(), &spec).unwrap();
        assert_eq!(
            sets,
            vec![params(json!({
                "app.path": "apps/a",
                "app.path.basename": "a",
                "app.path.basenameNormalized": "a",
                "app.path[0]": "apps",
                "app.path[1]": "a",
            }))]
        );
    }

    #[test]
    fn gotemplate_path_params_are_nested() {
        let path = json!({"path": "apps/a", "basename": "a", "basenameNormalized": "a", "segments": ["apps", "a"]});
        let spec = json!({"git": {"repoURL": REPO, "directories": [{"path": "apps/a"}]}});
        let sets = run_with(&go(), &MemoryInventory::default(), &git(), &spec).unwrap();
        assert_eq!(sets, vec![params(json!({"path": path}))]);
        let spec = json!({"git": {"repoURL": REPO, "pathParamPrefix": "app", "directories": [{"path": "apps/a"}]}});
        let sets = run_with(&go(), &MemoryInventory::default(), &git(), &spec).unwrap();
        assert_eq!(sets, vec![params(json!({"app": {"path": path}}))]);
    }

    #[test]
    fn values_are_templated_with_path_params() {
        let spec = json!({"git": {"repoURL": REPO, "directories": [{"path": "apps/a"}], "values": {"ns": "team-{{path.basename}}"}}});
        let sets = run_with(&fast(), &MemoryInventory::default(), &git(), &spec).unwrap();
        assert_eq!(sets[0]["values.ns"], json!("team-a"));
    }

    #[test]
    fn errors_name_the_repository_and_glob() {
        let spec = json!({"git": {"repoURL": REPO, "revision": "v9", "directories": [{"path": "apps/*"}]}});
        let err = run_with(&fast(), &MemoryInventory::default(), &git(), &spec).unwrap_err();
        assert_eq!(err.at, "git");
        assert_eq!(
            err.reason,
            GeneratorErrorReason::Git {
                repo: REPO.into(),
                source: GitError::RevisionNotFound {
                    revision: "v9".into()
                }
            }
        );
        assert!(err.to_string().contains(REPO), "{err}");

        let err = run_with(
            &fast(),
            &MemoryInventory::default(),
            &git(),
            &dirs(json!([{"path": "apps/[a"}])),
        )
        .unwrap_err();
        assert!(
            matches!(err.reason, GeneratorErrorReason::InvalidGlob { ref pattern, .. } if pattern == "apps/[a"),
            "{err}"
        );

        let err = run_with(
            &fast(),
            &MemoryInventory::default(),
            &git(),
            &json!({"git": {"repoURL": REPO}}),
        )
        .unwrap_err();
        assert_eq!(err.reason, GeneratorErrorReason::NoGitPaths);
    }
}
