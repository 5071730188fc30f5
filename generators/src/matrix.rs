//! The `matrix` generator: the product of exactly two children. For each parameter set of the
//! first child, the second child's spec is rendered with that set (so it can say
//! `path: '{{path}}/config.json'`) and expanded; each pair is combined. fasttemplate: a key in
//! both sets must have the same value. goTemplate: deep merge where, as in Argo CD, the first
//! child's values win.

use serde_json::Value;

use crate::generator::{
    GenerateContext, Generator, GeneratorError, GeneratorErrorReason, generate_child,
};
use crate::params::{self, Params};
use crate::spec::{MatrixGenerator, NestedGeneratorSpec};
use crate::template::{PreparedTemplate, TemplateMode};

impl Generator for MatrixGenerator {
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError> {
        let [first, second] = self.generators.as_slice() else {
            return Err(GeneratorError::here(GeneratorErrorReason::MatrixChildren(
                self.generators.len(),
            )));
        };
        let second_child = SecondChild::prepare(second, ctx)?;
        let mut sets = Vec::new();
        // A second child with nothing templated expands the same way for every set of the first:
        // it is expanded once, with the first set, and its sets are reused.
        let mut untemplated: Option<Vec<Params>> = None;
        for a in generate_child(first, 0, ctx)? {
            if second_child.prepared.is_literal() {
                let bs = match &mut untemplated {
                    Some(bs) => bs,
                    None => untemplated.insert(generate_child(&second_child.render(&a)?, 1, ctx)?),
                };
                for b in bs.iter() {
                    sets.push(combine(&a, b.clone(), ctx.mode())?);
                }
            } else {
                let second = second_child.render(&a)?;
                for b in generate_child(&second, 1, ctx)? {
                    sets.push(combine(&a, b, ctx.mode())?);
                }
            }
        }
        Ok(sets)
    }

    fn template(&self) -> Option<&Value> {
        self.template.as_ref()
    }
}

/// The second child's spec, compiled once and rendered with each of the first child's parameter
/// sets (its `template`, which matrix ignores, is dropped first).
struct SecondChild<'a> {
    spec: &'a NestedGeneratorSpec,
    prepared: PreparedTemplate,
}

impl<'a> SecondChild<'a> {
    fn prepare(
        spec: &'a NestedGeneratorSpec,
        ctx: &GenerateContext<'_>,
    ) -> Result<Self, GeneratorError> {
        let mut raw = serde_json::to_value(spec).map_err(|e| located(invalid_child(&e)))?;
        for kind in raw.as_object_mut().into_iter().flat_map(|o| o.values_mut()) {
            if let Some(generator) = kind.as_object_mut() {
                generator.remove("template");
            }
        }
        let prepared = ctx
            .renderer()
            .prepare(&raw)
            .map_err(|e| located(GeneratorError::here(e)))?;
        Ok(Self { spec, prepared })
    }

    fn render(&self, params: &Params) -> Result<NestedGeneratorSpec, GeneratorError> {
        if params.is_empty() {
            return Ok(self.spec.clone());
        }
        let rendered = self
            .prepared
            .render(params)
            .map_err(|e| located(GeneratorError::here(e)))?;
        serde_json::from_value(rendered).map_err(|e| located(invalid_child(&e)))
    }
}

fn located(error: GeneratorError) -> GeneratorError {
    error.within("generators[1]")
}

fn invalid_child(error: &serde_json::Error) -> GeneratorError {
    GeneratorError::here(GeneratorErrorReason::InvalidNested {
        kind: "generator",
        message: format!("after rendering with the first generator's parameters: {error}"),
    })
}

fn combine(a: &Params, b: Params, mode: &TemplateMode) -> Result<Params, GeneratorError> {
    match mode {
        TemplateMode::Fast => {
            for (key, value) in b.iter() {
                match a.get(key) {
                    Some(existing) if existing != value => {
                        return Err(GeneratorError::here(
                            GeneratorErrorReason::ConflictingParam {
                                key: key.to_string(),
                                first: params::format_scalar(existing),
                                second: params::format_scalar(value),
                            },
                        ));
                    }
                    _ => {}
                }
            }
            let mut combined = a.clone();
            combined.overwrite_with(&b);
            Ok(combined)
        }
        TemplateMode::Go { .. } => {
            let mut combined = b;
            params::deep_merge(&mut combined, a);
            Ok(combined)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use crate::generator::GeneratorErrorReason;
    use crate::source::{Cluster, ClusterInventory, InventoryError};
    use crate::testing::{
        MemoryGit, MemoryInventory, cluster, fast, go, params, run, run_sets, run_with,
    };

    const REPO: &str = "https://git.example/apps.git";

    fn git() -> MemoryGit {
        MemoryGit::default().with_commit(
            REPO,
            "HEAD",
            "c1",
            &[
                ("apps/a/config.json", r#"{"replicas": "1"}"#),
                ("apps/b/config.json", r#"{"replicas": "2"}"#),
            ],
        )
    }

    #[test]
    fn product_of_two_lists() {
        let spec = json!({"matrix": {"generators": [
            {"list": {"elements": [{"env": "dev"}, {"env": "prod"}]}},
            {"list": {"elements": [{"app": "x"}, {"app": "y"}]}},
        ]}});
        let pairs: Vec<_> = run(&fast(), &spec)
            .unwrap()
            .iter()
            .map(|p| format!("{}-{}", p["env"], p["app"]))
            .collect();
        assert_eq!(
            pairs,
            [
                r#""dev"-"x""#,
                r#""dev"-"y""#,
                r#""prod"-"x""#,
                r#""prod"-"y""#
            ]
        );
    }

    #[test]
    fn second_child_uses_first_child_params() {
        let spec = json!({"matrix": {"generators": [
            {"git": {"repoURL": REPO, "directories": [{"path": "apps/*"}]}},
            {"git": {"repoURL": REPO, "files": [{"path": "{{path}}/config.json"}]}},
        ]}});
        let git = git();
        let sets = run_with(&fast(), &MemoryInventory::default(), &git, &spec).unwrap();
        let got: Vec<_> = sets
            .iter()
            .map(|p| (p["path"].clone(), p["replicas"].clone()))
            .collect();
        assert_eq!(
            got,
            [(json!("apps/a"), json!("1")), (json!("apps/b"), json!("2"))]
        );
        assert_eq!(
            git.resolves(),
            1,
            "the revision is resolved once per generation"
        );
    }

    #[test]
    fn elements_yaml_from_first_child_in_gotemplate() {
        let spec = json!({"matrix": {"generators": [
            {"list": {"elements": [{"name": "a", "shards": [{"n": 1}, {"n": 2}]}]}},
            {"list": {"elementsYaml": "{{ .shards | toJson }}"}},
        ]}});
        assert_eq!(
            run(&go(), &spec).unwrap(),
            vec![
                params(json!({"name": "a", "shards": [{"n": 1}, {"n": 2}], "n": 1})),
                params(json!({"name": "a", "shards": [{"n": 1}, {"n": 2}], "n": 2})),
            ]
        );
    }

    /// An inventory that counts how often it is read.
    struct CountingInventory(MemoryInventory, AtomicUsize);

    impl ClusterInventory for CountingInventory {
        fn clusters(&self) -> Result<Vec<Cluster>, InventoryError> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.clusters()
        }
    }

    #[test]
    fn an_untemplated_second_child_is_expanded_once() {
        let inventory = CountingInventory(
            MemoryInventory(vec![
                cluster("a", "https://a", &[("env", "x")]),
                cluster("b", "https://b", &[("env", "x")]),
            ]),
            AtomicUsize::new(0),
        );
        let first = json!({"list": {"elements": [{"app": "1"}, {"app": "2"}, {"app": "3"}]}});
        let cases = [
            (
                json!({"clusters": {"selector": {"matchLabels": {"env": "x"}}}}),
                1,
            ),
            (
                json!({"clusters": {"selector": {"matchLabels": {"env": "x"}}, "values": {"v": "{{app}}"}}}),
                3,
            ),
        ];
        for (second, reads) in cases {
            inventory.1.store(0, Ordering::Relaxed);
            let spec = json!({"matrix": {"generators": [first, second]}});
            let sets = run_with(&fast(), &inventory, &MemoryGit::default(), &spec).unwrap();
            let got: Vec<_> = sets
                .iter()
                .map(|p| format!("{}-{}", p["app"], p["name"]))
                .collect();
            assert_eq!(
                got,
                [
                    r#""1"-"a""#,
                    r#""1"-"b""#,
                    r#""2"-"a""#,
                    r#""2"-"b""#,
                    r#""3"-"a""#,
                    r#""3"-"b""#
                ],
                "{second}"
            );
            assert_eq!(inventory.1.load(Ordering::Relaxed), reads, "{second}");
        }
    }

    #[test]
    fn fasttemplate_conflicting_keys_are_an_error() {
        let spec = json!({"matrix": {"generators": [
            {"list": {"elements": [{"env": "dev", "same": "1"}]}},
            {"list": {"elements": [{"env": "prod", "same": "1"}]}},
        ]}});
        let err = run(&fast(), &spec).unwrap_err();
        assert_eq!(err.at, "matrix");
        assert_eq!(
            err.reason,
            GeneratorErrorReason::ConflictingParam {
                key: "env".into(),
                first: "dev".into(),
                second: "prod".into()
            }
        );
    }

    #[test]
    fn gotemplate_deep_merges_with_first_child_winning() {
        let spec = json!({"matrix": {"generators": [
            {"list": {"elements": [{"m": {"a": 1, "b": 1}, "s": "first"}]}},
            {"list": {"elements": [{"m": {"b": 2, "c": 2}, "s": "second", "t": "x"}]}},
        ]}});
        assert_eq!(
            run(&go(), &spec).unwrap(),
            vec![params(
                json!({"m": {"a": 1, "b": 1, "c": 2}, "s": "first", "t": "x"})
            )]
        );
    }

    #[test]
    fn needs_exactly_two_children() {
        for children in [
            json!([{"list": {"elements": []}}]),
            json!([{"list": {}}, {"list": {}}, {"list": {}}]),
        ] {
            let err = run(&fast(), &json!({"matrix": {"generators": children}})).unwrap_err();
            assert!(
                matches!(err.reason, GeneratorErrorReason::MatrixChildren(_)),
                "{err}"
            );
        }
    }

    #[test]
    fn nested_merge_and_depth_limit() {
        let spec = json!({"matrix": {"generators": [
            {"merge": {"mergeKeys": ["env"], "generators": [
                {"list": {"elements": [{"env": "dev", "size": "s"}, {"env": "prod", "size": "s"}]}},
                {"list": {"elements": [{"env": "prod", "size": "l"}]}},
            ]}},
            {"list": {"elements": [{"app": "x"}]}},
        ]}});
        assert_eq!(
            run(&fast(), &spec).unwrap(),
            vec![
                params(json!({"env": "dev", "size": "s", "app": "x"})),
                params(json!({"env": "prod", "size": "l", "app": "x"})),
            ]
        );

        let too_deep = json!({"matrix": {"generators": [
            {"list": {"elements": [{"a": "1"}]}},
            {"matrix": {"generators": [{"list": {}}, {"matrix": {"generators": []}}]}},
        ]}});
        let err = run(&fast(), &too_deep).unwrap_err();
        assert_eq!(err.at, "matrix.generators[1].matrix.generators[1]");
        assert_eq!(
            err.reason,
            GeneratorErrorReason::NestedTooDeep { kind: "matrix" }
        );
    }

    #[test]
    fn errors_are_located_and_template_is_returned() {
        let spec = json!({"matrix": {
            "generators": [{"list": {"elements": [{"a": "1"}]}}, {"list": {}, "clusters": {}}],
            "template": {"metadata": {"name": "x"}},
        }});
        let err = run(&fast(), &spec).unwrap_err();
        assert_eq!(
            err.to_string(),
            "matrix.generators[1]: several generator kinds are set (list, clusters); set exactly one"
        );

        let spec = json!({"matrix": {
            "generators": [{"list": {"elements": [{"a": "1"}]}}, {"list": {"elements": [{"b": "2"}]}}],
            "template": {"metadata": {"name": "x"}},
        }});
        let sets = run_sets(
            &fast(),
            &MemoryInventory::default(),
            &MemoryGit::default(),
            &spec,
        )
        .unwrap();
        assert_eq!(sets[0].template, Some(json!({"metadata": {"name": "x"}})));
    }
}
