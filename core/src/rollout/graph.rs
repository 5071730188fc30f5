//! The RollingSync step graph (a Flotilla extension): a step may carry a `name` and wait for
//! the named steps in `dependsOn`; a step without `dependsOn` waits for the step before it in
//! the list, so a strategy without names is the line Argo CD follows. [`link`] checks the graph
//! (names unique and not empty, every dependency a step's name, no cycle) and orders the steps
//! so each comes after those it waits for; [`ancestors`] and [`critical_path`] read it. Steps of
//! other ApplicationSets in `dependsOn` are kept on the step ([`super::external`] judges them).
//! Pure.

use std::collections::BTreeSet;

use super::config::RolloutStep;
use crate::api::application_set::{ApplicationSetStep, RollingSyncStep, StepDependency};

/// Why the steps' `name` and `dependsOn` cannot be followed; each names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("strategy.rollingSync.steps[{index}].name: must not be empty")]
    EmptyName { index: usize },
    #[error(
        "strategy.rollingSync.steps[{index}].name {name:?}: steps[{first}] has this name already; step names must be unique"
    )]
    DuplicateName {
        index: usize,
        first: usize,
        name: String,
    },
    #[error(
        "strategy.rollingSync.steps[{index}].dependsOn[{entry}]: must name a step (it is empty)"
    )]
    EmptyDependency { index: usize, entry: usize },
    #[error(
        "strategy.rollingSync.steps[{index}].dependsOn[{entry}] {name:?}: no step has this name (names: {known})"
    )]
    UnknownDependency {
        index: usize,
        entry: usize,
        name: String,
        known: String,
    },
    #[error("strategy.rollingSync.steps[{index}].dependsOn[{entry}].{field}: must not be empty")]
    EmptyExternal {
        index: usize,
        entry: usize,
        field: &'static str,
    },
    #[error("strategy.rollingSync.steps: dependsOn makes a cycle: {cycle}")]
    Cycle { cycle: String },
}

/// `steps` with the steps each waits for, and the steps (0-based) in dependency order: the
/// earliest in the list first among those whose dependencies are all before it.
///
/// # Errors
/// The first problem found, in step order; a cycle once every step was read.
pub(super) fn link(
    mut steps: Vec<RolloutStep>,
    written: &[RollingSyncStep],
) -> Result<(Vec<RolloutStep>, Vec<usize>), GraphError> {
    let mut names: Vec<(&str, usize)> = Vec::new();
    for (index, step) in written.iter().enumerate() {
        let Some(name) = step.name.as_deref() else {
            continue;
        };
        if name.trim().is_empty() {
            return Err(GraphError::EmptyName { index });
        }
        if let Some(&(_, first)) = names.iter().find(|(known, _)| *known == name) {
            return Err(GraphError::DuplicateName {
                index,
                first,
                name: name.to_owned(),
            });
        }
        names.push((name, index));
    }
    for (index, (step, written)) in steps.iter_mut().zip(written).enumerate() {
        step.depends_on = match &written.depends_on {
            None => index.checked_sub(1).into_iter().collect(),
            Some(depends_on) => depends_on
                .iter()
                .enumerate()
                .filter_map(|(entry, dependency)| Some((entry, dependency.local()?)))
                .map(|(entry, name)| {
                    if name.trim().is_empty() {
                        return Err(GraphError::EmptyDependency { index, entry });
                    }
                    names
                        .iter()
                        .find(|(known, _)| *known == name)
                        .map(|&(_, step)| step)
                        .ok_or_else(|| GraphError::UnknownDependency {
                            index,
                            entry,
                            name: name.to_owned(),
                            known: if names.is_empty() {
                                "no step has a name".to_owned()
                            } else {
                                names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                            },
                        })
                })
                .collect::<Result<BTreeSet<usize>, GraphError>>()?
                .into_iter()
                .collect(),
        };
        step.external = external(index, written.depends_on.as_deref().unwrap_or_default())?;
    }
    let order = ordered(&steps)?;
    Ok((steps, order))
}

/// The steps of other ApplicationSets among `depends_on` (of step `index`, 0-based).
///
/// # Errors
/// An entry without `applicationSet` or `step`.
fn external(
    index: usize,
    depends_on: &[StepDependency],
) -> Result<Vec<ApplicationSetStep>, GraphError> {
    depends_on
        .iter()
        .enumerate()
        .filter_map(|(entry, dependency)| Some((entry, dependency.application_set()?)))
        .map(|(entry, step)| {
            let empty = |field: &'static str| GraphError::EmptyExternal {
                index,
                entry,
                field,
            };
            if step.application_set.trim().is_empty() {
                return Err(empty("applicationSet"));
            }
            if step.step.trim().is_empty() {
                return Err(empty("step"));
            }
            if step
                .namespace
                .as_deref()
                .is_some_and(|n| n.trim().is_empty())
            {
                return Err(empty("namespace"));
            }
            Ok(step.clone())
        })
        .collect()
}

/// The steps in dependency order (Kahn's algorithm, the earliest ready step first).
fn ordered(steps: &[RolloutStep]) -> Result<Vec<usize>, GraphError> {
    let mut placed = vec![false; steps.len()];
    let mut order = Vec::with_capacity(steps.len());
    while let Some(next) =
        (0..steps.len()).find(|&i| !placed[i] && steps[i].depends_on.iter().all(|&d| placed[d]))
    {
        placed[next] = true;
        order.push(next);
    }
    if order.len() == steps.len() {
        return Ok(order);
    }
    // Follow unplaced dependencies from an unplaced step until one repeats: that is a cycle.
    let mut path: Vec<usize> = vec![(0..steps.len()).find(|&i| !placed[i]).unwrap_or(0)];
    loop {
        let last = path[path.len() - 1];
        let Some(&next) = steps[last].depends_on.iter().find(|&&d| !placed[d]) else {
            break;
        };
        if let Some(start) = path.iter().position(|&s| s == next) {
            // `path` follows "waits for"; the cycle reads in rollout order, reversed.
            let mut cycle: Vec<String> = path[start..]
                .iter()
                .chain(std::iter::once(&next))
                .map(|&s| steps[s].label())
                .collect();
            cycle.reverse();
            return Err(GraphError::Cycle {
                cycle: cycle.join(" → "),
            });
        }
        path.push(next);
    }
    Err(GraphError::Cycle {
        cycle: steps[path[0]].label(),
    })
}

/// Every step `step` waits for, directly or through others (0-based, sorted).
#[must_use]
pub fn ancestors(steps: &[RolloutStep], step: usize) -> BTreeSet<usize> {
    let mut found = BTreeSet::new();
    let mut todo = steps[step].depends_on.clone();
    while let Some(next) = todo.pop() {
        if found.insert(next) {
            todo.extend(&steps[next].depends_on);
        }
    }
    found
}

/// Whether the strategy is a graph rather than the list order: some step waits for something
/// other than the step before it.
#[must_use]
pub fn is_graph(steps: &[RolloutStep]) -> bool {
    steps
        .iter()
        .enumerate()
        .any(|(i, step)| step.depends_on != i.checked_sub(1).into_iter().collect::<Vec<_>>())
}

/// The chain of steps that bounded a rollout: from the step that finished last back through,
/// at each step, the step it waited for that finished last. `depends_on` lists each step's
/// dependencies and `finish` its finish time (`None`: not finished, or no Applications), both
/// by 0-based index; the path is in rollout order.
#[must_use]
pub fn critical_path(depends_on: &[Vec<usize>], finish: &[Option<f64>]) -> Vec<usize> {
    let latest = |steps: &mut dyn Iterator<Item = usize>| {
        steps.max_by(|&a, &b| {
            let key = |s: usize| {
                finish
                    .get(s)
                    .copied()
                    .flatten()
                    .unwrap_or(f64::NEG_INFINITY)
            };
            key(a).total_cmp(&key(b)).then(a.cmp(&b))
        })
    };
    let Some(mut step) = latest(&mut (0..finish.len()).filter(|&s| finish[s].is_some())) else {
        return Vec::new();
    };
    let mut path = vec![step];
    // A valid graph has no cycle; the bound only guards a malformed one.
    while path.len() <= depends_on.len() {
        let Some(before) = latest(&mut depends_on.get(step).into_iter().flatten().copied()) else {
            break;
        };
        path.push(before);
        step = before;
    }
    path.reverse();
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::RolloutConfig;
    use crate::rollout::tests::strategy;

    /// A step named `name` (none when empty) waiting for `depends_on` (unset when `None`).
    fn step(name: &str, depends_on: Option<&[&str]>) -> RollingSyncStep {
        RollingSyncStep {
            name: (!name.is_empty()).then(|| name.to_owned()),
            depends_on: depends_on.map(|d| d.iter().map(|s| StepDependency::from(*s)).collect()),
            ..RollingSyncStep::default()
        }
    }

    #[test]
    fn dependencies_and_order() {
        // (steps, each step's dependencies, the order)
        type Case = (Vec<RollingSyncStep>, Vec<Vec<usize>>, Vec<usize>);
        let cases: Vec<Case> = vec![
            // No names: the list.
            (
                vec![step("", None), step("", None), step("", None)],
                vec![vec![], vec![0], vec![1]],
                vec![0, 1, 2],
            ),
            // db → (backend-eu ∥ backend-us) → frontend.
            (
                vec![
                    step("db", None),
                    step("backend-eu", Some(&["db"])),
                    step("backend-us", Some(&["db"])),
                    step("frontend", Some(&["backend-eu", "backend-us"])),
                ],
                vec![vec![], vec![0], vec![0], vec![1, 2]],
                vec![0, 1, 2, 3],
            ),
            // A later step waited for by an earlier one; `[]` starts with the first.
            (
                vec![
                    step("web", Some(&["api"])),
                    step("api", Some(&[])),
                    step("tools", Some(&[])),
                ],
                vec![vec![1], vec![], vec![]],
                vec![1, 0, 2],
            ),
            // Names with the list order kept where dependsOn is unset; a name twice in one list.
            (
                vec![
                    step("a", None),
                    step("", None),
                    step("c", Some(&["a", "a"])),
                ],
                vec![vec![], vec![0], vec![0]],
                vec![0, 1, 2],
            ),
        ];
        for (steps, depends_on, order) in cases {
            let config = RolloutConfig::from_strategy(&strategy(steps.clone())).expect("valid");
            let found: Vec<Vec<usize>> =
                config.steps.iter().map(|s| s.depends_on.clone()).collect();
            assert_eq!(found, depends_on, "{steps:?}");
            assert_eq!(config.order, order, "{steps:?}");
        }
    }

    #[test]
    fn bad_graphs_are_refused_by_field() {
        let cases: Vec<(Vec<RollingSyncStep>, &str)> = vec![
            (
                vec![step("db", None), step("db", Some(&[]))],
                "strategy.rollingSync.steps[1].name \"db\": steps[0] has this name already; step names must be unique",
            ),
            (
                vec![step(" ", None)],
                "strategy.rollingSync.steps[0].name: must not be empty",
            ),
            (
                vec![step("db", None), step("", Some(&["db", ""]))],
                "strategy.rollingSync.steps[1].dependsOn[1]: must name a step (it is empty)",
            ),
            (
                vec![step("db", None), step("web", Some(&["dbx"]))],
                "strategy.rollingSync.steps[1].dependsOn[0] \"dbx\": no step has this name (names: db, web)",
            ),
            (
                vec![step("", None), step("", Some(&["first"]))],
                "strategy.rollingSync.steps[1].dependsOn[0] \"first\": no step has this name (names: no step has a name)",
            ),
            (
                vec![step("a", Some(&["a"]))],
                "strategy.rollingSync.steps: dependsOn makes a cycle: step 1 (a) → step 1 (a)",
            ),
            (
                vec![step("a", Some(&["c"])), step("b", None), step("c", None)],
                "strategy.rollingSync.steps: dependsOn makes a cycle: step 1 (a) → step 2 (b) → step 3 (c) → step 1 (a)",
            ),
            (
                vec![
                    step("db", Some(&[])),
                    step("x", Some(&["y"])),
                    step("y", Some(&["x"])),
                ],
                "strategy.rollingSync.steps: dependsOn makes a cycle: step 2 (x) → step 3 (y) → step 2 (x)",
            ),
        ];
        for (steps, expected) in cases {
            let error = RolloutConfig::from_strategy(&strategy(steps)).unwrap_err();
            assert_eq!(error.to_string(), expected);
            assert_eq!(error.reason().as_str(), "InvalidStepGraph");
        }
    }

    #[test]
    fn ancestors_and_the_critical_path() {
        let config = RolloutConfig::from_strategy(&strategy(vec![
            step("db", None),
            step("backend-eu", Some(&["db"])),
            step("backend-us", Some(&["db"])),
            step("frontend", Some(&["backend-eu", "backend-us"])),
            step("docs", Some(&[])),
        ]))
        .expect("valid");
        assert!(is_graph(&config.steps));
        assert_eq!(ancestors(&config.steps, 3), BTreeSet::from([0, 1, 2]));
        assert_eq!(ancestors(&config.steps, 4), BTreeSet::new());
        let depends_on: Vec<Vec<usize>> =
            config.steps.iter().map(|s| s.depends_on.clone()).collect();
        // (finish time per step, the critical path)
        type Case = (&'static [Option<f64>], &'static [usize]);
        let cases: &[Case] = &[
            (
                &[Some(1.0), Some(5.0), Some(4.0), Some(9.0), Some(2.0)],
                &[0, 1, 3],
            ),
            (
                &[Some(1.0), Some(4.0), Some(5.0), Some(9.0), Some(2.0)],
                &[0, 2, 3],
            ),
            (
                &[Some(1.0), Some(4.0), Some(5.0), Some(9.0), Some(20.0)],
                &[4],
            ),
            (&[Some(1.0), Some(4.0), None, None, None], &[0, 1]),
            (&[None, None, None, None, None], &[]),
        ];
        for (finish, path) in cases {
            assert_eq!(critical_path(&depends_on, finish), *path, "{finish:?}");
        }
        let line = RolloutConfig::from_strategy(&strategy(vec![step("", None), step("", None)]))
            .expect("valid");
        assert!(!is_graph(&line.steps));
    }
}
