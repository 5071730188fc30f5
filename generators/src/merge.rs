//! The `merge` generator: the first child's parameter sets are the base; each later child's sets
//! override the base sets that have the same values for every `mergeKeys` key. Base sets nobody
//! matches stay, later sets that match nothing are dropped, and within every child, the base
//! included, the merge-key values must be unique (Argo CD refuses a repeated key in any of them).
//! As in Argo CD, a merge key names a top-level parameter, in either template mode: in
//! goTemplate mode `values.env` is not looked up inside `values` (every set lacks it, so two sets
//! of a child are not unique); in fasttemplate mode it is the flat parameter of that name.
//! Overriding is a deep merge in goTemplate mode.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::generator::{
    GenerateContext, Generator, GeneratorError, GeneratorErrorReason, generate_child,
};
use crate::params::{self, Params};
use crate::spec::MergeGenerator;
use crate::template::TemplateMode;

impl Generator for MergeGenerator {
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError> {
        if self.generators.len() < 2 {
            return Err(GeneratorError::here(GeneratorErrorReason::MergeChildren(
                self.generators.len(),
            )));
        }
        if self.merge_keys.is_empty() {
            return Err(GeneratorError::here(GeneratorErrorReason::NoMergeKeys));
        }
        let mut base = generate_child(&self.generators[0], 0, ctx)?;
        index_by_key(&self.merge_keys, &base).map_err(|e| e.within("generators[0]"))?;
        for (i, child) in self.generators.iter().enumerate().skip(1) {
            let overrides = generate_child(child, i, ctx)?;
            let by_key = index_by_key(&self.merge_keys, &overrides)
                .map_err(|e| e.within(&format!("generators[{i}]")))?;
            for set in &mut base {
                if let Some(&found) = by_key.get(&merge_key(&self.merge_keys, set)) {
                    apply_override(set, &overrides[found], ctx.mode());
                }
            }
        }
        Ok(base)
    }

    fn template(&self) -> Option<&Value> {
        self.template.as_ref()
    }
}

/// The merge-key values of `set`, as JSON (`["prod","eu"]`); a missing key is `null`.
fn merge_key(keys: &[String], set: &Params) -> String {
    let values: Vec<&Value> = keys
        .iter()
        .map(|k| set.get(k).unwrap_or(&Value::Null))
        .collect();
    serde_json::to_string(&values).unwrap_or_default()
}

/// Position of each set by its merge key; a key seen twice is an error.
fn index_by_key(
    keys: &[String],
    sets: &[Params],
) -> Result<BTreeMap<String, usize>, GeneratorError> {
    let mut index = BTreeMap::new();
    for (i, set) in sets.iter().enumerate() {
        let key = merge_key(keys, set);
        if index.contains_key(&key) {
            return Err(GeneratorError::here(
                GeneratorErrorReason::DuplicateMergeKey { key },
            ));
        }
        index.insert(key, i);
    }
    Ok(index)
}

fn apply_override(base: &mut Params, overlay: &Params, mode: &TemplateMode) {
    match mode {
        TemplateMode::Fast => base.overwrite_with(overlay),
        TemplateMode::Go { .. } => params::deep_merge(base, overlay),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::generator::GeneratorErrorReason;
    use crate::testing::{MemoryGit, MemoryInventory, cluster, fast, go, params, run, run_with};

    #[test]
    fn later_children_override_matching_base_sets() {
        let spec = json!({"merge": {"mergeKeys": ["env", "region"], "generators": [
            {"list": {"elements": [
                {"env": "prod", "region": "eu", "size": "s"},
                {"env": "prod", "region": "us", "size": "s"},
                {"env": "dev", "region": "eu", "size": "s"},
            ]}},
            {"list": {"elements": [
                {"env": "prod", "region": "us", "size": "l", "extra": "1"},
                {"env": "test", "region": "eu", "size": "xl"},
            ]}},
            {"list": {"elements": [{"env": "dev", "region": "eu", "size": "m"}]}},
        ]}});
        assert_eq!(
            run(&fast(), &spec).unwrap(),
            vec![
                params(json!({"env": "prod", "region": "eu", "size": "s"})),
                params(json!({"env": "prod", "region": "us", "size": "l", "extra": "1"})),
                params(json!({"env": "dev", "region": "eu", "size": "m"})),
            ]
        );
    }

    #[test]
    fn clusters_overridden_by_a_list_by_name() {
        let inventory = MemoryInventory(vec![
            cluster("a", "https://a", &[("env", "prod")]),
            cluster("b", "https://b", &[("env", "prod")]),
        ]);
        let spec = json!({"merge": {"mergeKeys": ["server"], "generators": [
            {"clusters": {"selector": {"matchLabels": {"env": "prod"}}, "values": {"kafka": "false"}}},
            {"list": {"elements": [{"server": "https://b", "values": {"kafka": "true"}}]}},
        ]}});
        let sets = run_with(&fast(), &inventory, &MemoryGit::default(), &spec).unwrap();
        let kafka: Vec<_> = sets.iter().map(|p| p["values.kafka"].clone()).collect();
        assert_eq!(kafka, [json!("false"), json!("true")]);
    }

    #[test]
    fn gotemplate_overrides_deep_merge() {
        let spec = json!({"merge": {"mergeKeys": ["name"], "generators": [
            {"list": {"elements": [{"name": "x", "app": {"replicas": 1, "image": "v1"}}]}},
            {"list": {"elements": [{"name": "x", "app": {"replicas": 3}}]}},
        ]}});
        assert_eq!(
            run(&go(), &spec).unwrap(),
            vec![params(
                json!({"name": "x", "app": {"replicas": 3, "image": "v1"}})
            )]
        );
    }

    #[test]
    fn a_nested_merge_key_under_gotemplate_is_not_unique() {
        let spec = json!({"merge": {"mergeKeys": ["values.env"], "generators": [
            {"list": {"elements": [{"values": {"env": "a"}}, {"values": {"env": "b"}}]}},
            {"list": {"elements": [{"values": {"env": "a", "x": "1"}}, {"values": {"env": "b"}}]}},
        ]}});
        let err = run(&go(), &spec).unwrap_err();
        assert_eq!(err.at, "merge.generators[0]", "the base first");
        assert_eq!(
            err.reason,
            GeneratorErrorReason::DuplicateMergeKey {
                key: "[null]".into()
            }
        );
        // In fasttemplate mode the flat parameter `values.env` is the key.
        let flat = json!({"merge": {"mergeKeys": ["values.env"], "generators": [
            {"list": {"elements": [{"values.env": "a"}, {"values.env": "b"}]}},
            {"list": {"elements": [{"values.env": "b", "x": "1"}]}},
        ]}});
        assert_eq!(run(&fast(), &flat).unwrap()[1]["x"], json!("1"));
    }

    #[test]
    fn base_sets_must_not_share_a_key() {
        let spec = json!({"merge": {"mergeKeys": ["env"], "generators": [
            {"list": {"elements": [{"env": "prod", "app": "a"}, {"env": "prod", "app": "b"}]}},
            {"list": {"elements": [{"env": "prod", "size": "l"}]}},
        ]}});
        let err = run(&fast(), &spec).unwrap_err();
        assert_eq!(err.at, "merge.generators[0]");
        assert_eq!(
            err.reason,
            GeneratorErrorReason::DuplicateMergeKey {
                key: r#"["prod"]"#.into()
            }
        );
    }

    #[test]
    fn duplicate_keys_and_bad_shapes_are_errors() {
        let duplicate = json!({"merge": {"mergeKeys": ["env"], "generators": [
            {"list": {"elements": [{"env": "prod"}]}},
            {"list": {"elements": [{"env": "prod", "a": "1"}, {"env": "prod", "a": "2"}]}},
        ]}});
        let err = run(&fast(), &duplicate).unwrap_err();
        assert_eq!(err.at, "merge.generators[1]");
        assert_eq!(
            err.reason,
            GeneratorErrorReason::DuplicateMergeKey {
                key: r#"["prod"]"#.into()
            }
        );

        let one_child =
            json!({"merge": {"mergeKeys": ["env"], "generators": [{"list": {"elements": []}}]}});
        assert_eq!(
            run(&fast(), &one_child).unwrap_err().reason,
            GeneratorErrorReason::MergeChildren(1)
        );

        let no_keys =
            json!({"merge": {"mergeKeys": [], "generators": [{"list": {}}, {"list": {}}]}});
        assert_eq!(
            run(&fast(), &no_keys).unwrap_err().reason,
            GeneratorErrorReason::NoMergeKeys
        );
    }
}
