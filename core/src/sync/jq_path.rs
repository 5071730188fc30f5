//! jq path expressions of `ignoreDifferences` (`jqPathExpressions`, e.g.
//! `.spec.template.spec.containers[] | select(.name == "istio-proxy")`), run with jaq (a
//! maintained Rust jq): an expression selects the paths `path(EXPR)` yields on an object.
//! Compiled once per thread and expression, because jaq's compiled filters cannot be shared
//! between threads. Pure.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use serde_json::Value;

/// At most this many paths are taken from one expression on one object (a generator such as
/// `repeat` would otherwise never end).
const MAX_PATHS: usize = 10_000;

type Filter = jaq_core::Filter<data::JustLut<Val>>;

thread_local! {
    static COMPILED: RefCell<HashMap<String, Rc<Filter>>> = RefCell::new(HashMap::new());
}

/// Why an expression cannot be used: jaq's parse or compile messages.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct JqError(String);

/// Checks that `expression` compiles.
///
/// # Errors
/// The expression does not parse or names an unknown filter.
pub fn check(expression: &str) -> Result<(), JqError> {
    compiled(expression).map(drop)
}

/// The paths (as JSON pointer tokens: keys, and list indexes as text) that `expression`
/// selects in `value`; none when it does not compile or fails on `value` (say, iterating a
/// field the object lacks).
#[must_use]
pub fn paths(expression: &str, value: &Value) -> Vec<Vec<String>> {
    let Ok(filter) = compiled(expression) else {
        return Vec::new();
    };
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

/// The filter `path(EXPR)`, compiled on first use in this thread.
fn compiled(expression: &str) -> Result<Rc<Filter>, JqError> {
    if let Some(filter) = COMPILED.with_borrow(|cache| cache.get(expression).cloned()) {
        return Ok(filter);
    }
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
    let filter = Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errors| JqError(format!("cannot compile {expression:?}: {errors:?}")))?;
    let filter = Rc::new(filter);
    COMPILED.with_borrow_mut(|cache| cache.insert(expression.to_owned(), Rc::clone(&filter)));
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn expressions_select_paths() {
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
            assert_eq!(paths(expression, &deployment), expected, "{expression}");
        }
    }

    #[test]
    fn bad_expressions_are_refused() {
        assert!(check(".spec | select(").is_err());
        assert!(check("nosuchfilter").is_err());
        assert!(check(".spec.replicas").is_ok());
    }
}
