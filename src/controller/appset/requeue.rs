//! How often an ApplicationSet is regenerated without an event: git generators re-resolve their
//! revision every `requeueAfterSeconds` (the controller's `--git-poll` when unset); list and
//! clusters generators react to watch events only.

use std::time::Duration;

use flotilla_generators::spec::{GeneratorSpec, NestedGeneratorSpec};
use serde_json::Value;

/// The shortest poll interval of the git generators in `generators` (nested in `matrix` and
/// `merge` too), or `None` when there is no git generator.
#[must_use]
pub fn git_poll_interval(generators: &[GeneratorSpec], default: Duration) -> Option<Duration> {
    let interval = |seconds: Option<u64>| seconds.map_or(default, Duration::from_secs);
    let mut intervals = Vec::new();
    for generator in generators {
        intervals.extend(
            generator
                .git
                .as_ref()
                .map(|g| interval(g.requeue_after_seconds)),
        );
        let nested = generator.matrix.iter().flat_map(|m| &m.generators);
        let nested = nested.chain(generator.merge.iter().flat_map(|m| &m.generators));
        for child in nested {
            intervals.extend(nested_intervals(child).into_iter().map(interval));
        }
    }
    intervals.into_iter().min()
}

/// `requeueAfterSeconds` of each git generator in a child of `matrix`/`merge`, including the
/// children of a nested `matrix`/`merge` (kept as raw JSON).
fn nested_intervals(child: &NestedGeneratorSpec) -> Vec<Option<u64>> {
    let mut found: Vec<Option<u64>> = child
        .git
        .iter()
        .map(|git| git.requeue_after_seconds)
        .collect();
    let raw_children = [&child.matrix, &child.merge]
        .into_iter()
        .flatten()
        .filter_map(|raw| raw.get("generators")?.as_array())
        .flatten();
    for grandchild in raw_children {
        if let Some(git) = grandchild.get("git") {
            found.push(git.get("requeueAfterSeconds").and_then(Value::as_u64));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generators(json: Value) -> Vec<GeneratorSpec> {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_shortest_git_interval_or_none() {
        let default = Duration::from_secs(180);
        let git = |extra: Value| {
            let mut g = serde_json::json!({"repoURL": "file:///r", "directories": [{"path": "*"}]});
            g.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            g
        };
        let cases = [
            (serde_json::json!([{"list": {"elements": []}}]), None),
            (
                serde_json::json!([{"git": git(serde_json::json!({}))}]),
                Some(180),
            ),
            (
                serde_json::json!([
                    {"git": git(serde_json::json!({"requeueAfterSeconds": 600}))},
                    {"matrix": {"generators": [
                        {"list": {"elements": []}},
                        {"git": git(serde_json::json!({"requeueAfterSeconds": 30}))}
                    ]}}
                ]),
                Some(30),
            ),
            (
                serde_json::json!([{"merge": {"mergeKeys": ["a"], "generators": [
                    {"list": {"elements": []}},
                    {"matrix": {"generators": [
                        {"git": git(serde_json::json!({"requeueAfterSeconds": 5}))},
                        {"list": {"elements": []}}
                    ]}}
                ]}}]),
                Some(5),
            ),
        ];
        for (index, (spec, expected)) in cases.into_iter().enumerate() {
            assert_eq!(
                git_poll_interval(&generators(spec), default),
                expected.map(Duration::from_secs),
                "case {index}"
            );
        }
    }
}
