//! jq path expressions of `ignoreDifferences` (`jqPathExpressions`, e.g.
//! `.spec.template.spec.containers[] | select(.name == "istio-proxy")`), run with jaq (a
//! maintained Rust jq): an expression selects the paths `path(EXPR)` yields on an object.
//! Compiled once per expression and kept in the caller's [`JqFilters`] (compiling loads jq's
//! standard library, which costs far more than running a filter). Pure.

use std::fmt;
use std::sync::Arc;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use serde_json::Value;

use crate::memo::Memo;

/// At most this many paths are taken from one expression on one object (a generator such as
/// `repeat` would otherwise never end).
const MAX_PATHS: usize = 10_000;

/// At most this many compiled expressions are kept.
const KEPT: usize = 1024;

type Filter = jaq_core::Filter<data::JustLut<Val>>;

/// Why an expression cannot be used: jaq's parse or compile messages.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct JqError(String);

/// Compiled expressions by their text: the caller's, kept for as long as it compares (a
/// controller for its life).
#[derive(Debug)]
pub struct JqFilters(Memo<String, Result<JqPath, JqError>>);

impl Default for JqFilters {
    fn default() -> Self {
        Self(Memo::new(KEPT))
    }
}

impl PartialEq for JqFilters {
    /// Always: the filters hold only what expressions compile to, so they never make two sets
    /// of rules differ.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for JqFilters {}

impl JqFilters {
    /// `expression` compiled, or found compiled before.
    ///
    /// # Errors
    /// The expression does not parse or names an unknown filter.
    pub fn compile(&self, expression: &str) -> Result<JqPath, JqError> {
        self.0.get_or_parse(expression, || {
            Ok(JqPath {
                expression: expression.to_owned(),
                filter: Arc::new(compile(expression)?),
            })
        })
    }
}

/// A compiled path expression.
#[derive(Clone)]
pub struct JqPath {
    expression: String,
    filter: Arc<Filter>,
}

impl fmt::Debug for JqPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JqPath({:?})", self.expression)
    }
}

impl PartialEq for JqPath {
    fn eq(&self, other: &Self) -> bool {
        self.expression == other.expression
    }
}

impl Eq for JqPath {}

impl JqPath {
    /// The paths (as JSON pointer tokens: keys, and list indexes as text) that the expression
    /// selects in `value`; none when it fails on `value` (say, iterating a field the object
    /// lacks).
    #[must_use]
    pub fn paths(&self, value: &Value) -> Vec<Vec<String>> {
        paths(&self.filter, value)
    }
}

fn paths(filter: &Filter, value: &Value) -> Vec<Vec<String>> {
    let Ok(input) = jaq_json::read::parse_single(value.to_string().as_bytes()) else {
        return Vec::new();
    };
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut found = Vec::new();
    for output in filter.id.run((ctx, input)).map(unwrap_valr).take(MAX_PATHS) {
        let Ok(path) = output else {
            return Vec::new();
        };
        let Ok(Value::Array(steps)) = serde_json::from_str::<Value>(&path.to_string()) else {
            continue;
        };
        let tokens: Option<Vec<String>> = steps
            .iter()
            .map(|step| match step {
                Value::String(key) => Some(key.clone()),
                Value::Number(index) => index.as_u64().map(|i| i.to_string()),
                _ => None,
            })
            .collect();
        found.extend(tokens);
    }
    found
}

/// The filter `path(EXPR)`.
fn compile(expression: &str) -> Result<Filter, JqError> {
    let code = format!("path({expression})");
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let arena = Arena::default();
    let modules = Loader::new(defs)
        .load(
            &arena,
            File {
                code: code.as_str(),
                path: (),
            },
        )
        .map_err(|errors| JqError(format!("cannot parse {expression:?}: {errors:?}")))?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errors| JqError(format!("cannot compile {expression:?}: {errors:?}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn expressions_select_paths() {
        let filters = JqFilters::default();
        let deployment = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "app", "image": "app:1"},
            {"name": "istio-proxy", "image": "proxy:1"}]}}}});
        let cases = [
            (".spec.replicas", vec![vec!["spec", "replicas"]]),
            (
                r#".spec.template.spec.containers[] | select(.name == "istio-proxy")"#,
                vec![vec!["spec", "template", "spec", "containers", "1"]],
            ),
            (
                ".spec.template.spec.containers[].image",
                vec![
                    vec!["spec", "template", "spec", "containers", "0", "image"],
                    vec!["spec", "template", "spec", "containers", "1", "image"],
                ],
            ),
            (
                ".metadata.labels.absent",
                vec![vec!["metadata", "labels", "absent"]],
            ),
            (".spec.replicas[]", vec![]),
        ];
        for (expression, expected) in cases {
            let expected: Vec<Vec<String>> = expected
                .into_iter()
                .map(|p| p.into_iter().map(str::to_owned).collect())
                .collect();
            let compiled = filters.compile(expression).unwrap();
            assert_eq!(compiled.paths(&deployment), expected, "{expression}");
        }
    }

    #[test]
    fn bad_expressions_are_refused_and_good_ones_compiled_once() {
        let filters = JqFilters::default();
        assert!(filters.compile(".spec | select(").is_err());
        assert!(filters.compile("nosuchfilter").is_err());
        let first = filters.compile(".spec.replicas").unwrap();
        let again = filters.compile(".spec.replicas").unwrap();
        assert!(Arc::ptr_eq(&first.filter, &again.filter));
    }
}
