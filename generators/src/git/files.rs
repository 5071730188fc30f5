//! The git `files` generator: parameter sets read from the JSON/YAML files of the repository
//! selected by the `files` globs (legacy git semantics: `*` also crosses `/`). A file holding a
//! map gives one set, a list of maps one set per item; in fasttemplate mode the content is
//! flattened to dotted string keys. The file's `path` parameters are added to every set.

use serde_json::Value;

use super::paths::{PathPatterns, path_params, snapshot};
use crate::generator::{
    GenerateContext, GeneratorError, GeneratorErrorReason, add_templated_values,
};
use crate::params::{self, Params};
use crate::spec::GitGenerator;
use crate::template::TemplateMode;

/// Expands `spec.files`.
pub(crate) fn generate(
    spec: &GitGenerator,
    ctx: &GenerateContext<'_>,
) -> Result<Vec<Params>, GeneratorError> {
    let patterns = PathPatterns::compile(&spec.files, false)?;
    let tree = snapshot(spec, ctx)?;
    let mut sets = Vec::new();
    for path in tree.files.iter().filter(|path| patterns.selects(path)) {
        let file_error = |message: String| {
            GeneratorError::here(GeneratorErrorReason::GitFile {
                repo: spec.repo_url.clone(),
                path: path.clone(),
                message,
            })
        };
        let content = ctx
            .git()
            .read_file(&spec.repo_url, &tree.commit, path)
            .map_err(|source| {
                GeneratorError::here(GeneratorErrorReason::Git {
                    repo: spec.repo_url.clone(),
                    source,
                })
            })?;
        let (dir, filename) = path.rsplit_once('/').unwrap_or((".", path.as_str()));
        for object in parse_objects(path, &content).map_err(file_error)? {
            let mut params = match ctx.mode() {
                TemplateMode::Fast => params::flatten(&object)
                    .into_iter()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect(),
                TemplateMode::Go { .. } => object,
            };
            params.overwrite_with(&path_params(
                dir,
                Some(filename),
                spec.path_param_prefix.as_deref(),
                ctx.mode(),
            ));
            add_templated_values(&spec.values, &mut params, ctx).map_err(|e| match e.reason {
                GeneratorErrorReason::Template(t) => file_error(format!("values: {t}")),
                _ => e,
            })?;
            sets.push(params);
        }
    }
    Ok(sets)
}

/// The maps a file holds: JSON for `.json` files, YAML otherwise. An empty file is one empty map.
fn parse_objects(path: &str, content: &[u8]) -> Result<Vec<Params>, String> {
    let text = std::str::from_utf8(content).map_err(|e| format!("not UTF-8: {e}"))?;
    let value: Value = if path.ends_with(".json") {
        serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?
    } else {
        serde_saphyr::from_str(text).map_err(|e| format!("invalid YAML: {e}"))?
    };
    let items = match value {
        Value::Null => vec![Value::Object(serde_json::Map::new())],
        Value::Object(_) => vec![value],
        Value::Array(items) => items,
        _ => return Err("expected a map or a list of maps".to_string()),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Object(map) => Ok(map.into_iter().collect()),
            _ => Err(format!("item {i}: expected a map")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::generator::GeneratorErrorReason;
    use crate::testing::{MemoryGit, MemoryInventory, fast, go, params, run_with};

    const REPO: &str = "https://git.example/config.git";

    fn git() -> MemoryGit {
        MemoryGit::default().with_commit(
            REPO,
            "main",
            "c2",
            &[
                ("clusters/eu/config.json", r#"{"cluster": {"name": "eu", "replicas": 3, "big": 1000000, "on": true, "none": null, "zones": ["a", "b"]}}"#),
                ("clusters/us/east/config.yaml", "cluster:\n  name: us-east\n  replicas: 1.5\n"),
                ("clusters/list.yaml", "- name: one\n- name: two\n"),
                ("clusters/skip/config.json", r#"{"cluster": {"name": "skip"}}"#),
                ("config.yaml", ""),
                ("broken/config.yaml", "a: [1"),
            ],
        )
    }

    fn files(items: serde_json::Value) -> serde_json::Value {
        json!({"git": {"repoURL": REPO, "revision": "main", "files": items}})
    }

    fn run(
        renderer: &crate::template::Renderer,
        spec: &serde_json::Value,
    ) -> Vec<crate::params::Params> {
        run_with(renderer, &MemoryInventory::default(), &git(), spec).unwrap()
    }

    #[test]
    fn fasttemplate_flattens_content_like_go() {
        let sets = run(
            &fast(),
            &files(json!([{"path": "clusters/eu/config.json"}])),
        );
        assert_eq!(
            sets,
            vec![params(json!({
                "cluster.name": "eu",
                "cluster.replicas": "3",
                "cluster.big": "1e+06",
                "cluster.on": "true",
                "cluster.none": "<nil>",
                "cluster.zones.0": "a",
                "cluster.zones.1": "b",
                "path": "clusters/eu",
                "path.basename": "eu",
                "path.basenameNormalized": "eu",
                "path.filename": "config.json",
                "path.filenameNormalized": "config.json",
                "path[0]": "clusters",
                "path[1]": "eu",
            }))]
        );
    }

    #[test]
    fn star_is_greedy_and_exclude_removes() {
        let paths = |spec| -> Vec<String> {
            run(&fast(), &spec)
                .iter()
                .map(|p| p["path"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        assert_eq!(
            paths(files(json!([{"path": "clusters/*/config.*"}]))),
            ["clusters/eu", "clusters/skip", "clusters/us/east"]
        );
        assert_eq!(
            paths(files(
                json!([{"path": "clusters/*/config.*"}, {"path": "clusters/skip/*", "exclude": true}])
            )),
            ["clusters/eu", "clusters/us/east"]
        );
        assert_eq!(
            paths(files(
                json!([{"path": "*.yaml"}, {"path": "broken/**", "exclude": true}])
            )),
            ["clusters", "clusters", "clusters/us/east", "."]
        );
    }

    #[test]
    fn a_list_in_a_file_gives_one_set_per_item() {
        let sets = run(&fast(), &files(json!([{"path": "clusters/list.yaml"}])));
        let names: Vec<_> = sets.iter().map(|p| p["name"].clone()).collect();
        assert_eq!(names, [json!("one"), json!("two")]);
        assert!(sets.iter().all(|p| p["path"] == json!("clusters")));
    }

    #[test]
    fn gotemplate_keeps_content_and_nests_path() {
        let spec = json!({"git": {"repoURL": REPO, "revision": "main", "pathParamPrefix": "src", "files": [{"path": "clusters/us/**"}]}});
        assert_eq!(
            run(&go(), &spec),
            vec![params(json!({
                "cluster": {"name": "us-east", "replicas": 1.5},
                "src": {"path": {
                    "path": "clusters/us/east",
                    "basename": "east",
                    "basenameNormalized": "east",
                    "filename": "config.yaml",
                    "filenameNormalized": "config.yaml",
                    "segments": ["clusters", "us", "east"],
                }},
            }))]
        );
    }

    #[test]
    fn a_file_at_the_root_has_path_dot_and_empty_content_is_one_set() {
        let sets = run(&fast(), &files(json!([{"path": "config.yaml"}])));
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0]["path"], json!("."));
        assert_eq!(sets[0]["path.filename"], json!("config.yaml"));
    }

    #[test]
    fn values_are_templated_per_set() {
        let spec = json!({"git": {"repoURL": REPO, "revision": "main", "files": [{"path": "clusters/list.yaml"}], "values": {"app": "{{name}}-{{path.basename}}"}}});
        let values: Vec<_> = run(&fast(), &spec)
            .iter()
            .map(|p| p["values.app"].clone())
            .collect();
        assert_eq!(values, [json!("one-clusters"), json!("two-clusters")]);
    }

    #[test]
    fn unparsable_file_is_named() {
        let err = run_with(
            &fast(),
            &MemoryInventory::default(),
            &git(),
            &files(json!([{"path": "broken/*"}])),
        )
        .unwrap_err();
        assert_eq!(err.at, "git");
        assert!(
            matches!(&err.reason, GeneratorErrorReason::GitFile { repo, path, .. } if repo == REPO && path == "broken/config.yaml"),
            "{err}"
        );
    }
}
