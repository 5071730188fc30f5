//! `strategy.deletionOrder: Reverse` (Argo CD 3.x): a deleted RollingSync ApplicationSet's
//! Applications go step by step in reverse step order — the last step's first (in a step graph,
//! the steps in reverse dependency order: a step after every step that waits for it), then the
//! one before once every Application of the later step is gone (an Application with the
//! resources finalizer is gone once its resources are). Applications no step selects go last.
//! The same order removes the Applications that leave the generators' output
//! (`strategy.removalOrder`, a Flotilla extension: `Reverse` by default with RollingSync steps;
//! [`removal_step`]). Pure: each step is decided from the Applications that still exist and
//! whether each is being deleted, so a restarted controller resumes where the deletion stands;
//! [`deletion_progress`] tells from the same grouping what `status.deletion` shows (the step
//! being deleted and what is left), and [`deletion_text`] how `rollout explain` says it.

use std::collections::BTreeMap;

use super::config::{RolloutConfig, RolloutConfigError};
use crate::api::application_set::{DeletionOrder, RolloutStrategy, StrategyType};
use crate::api::application_set_status::{DeletionGroupStatus, DeletionProgress};

/// Why `deletionOrder` cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeletionOrderError {
    /// `Reverse` without a RollingSync strategy that has steps: there is no order to reverse.
    /// Argo CD then ignores the field and deletes every Application at once; Flotilla refuses it.
    #[error(
        "strategy.deletionOrder: Reverse needs strategy.type: RollingSync with at least one rollingSync step (the order it reverses); set deletionOrder: AllAtOnce or remove it"
    )]
    WithoutSteps,
    /// `removalOrder: Reverse` without a RollingSync strategy that has steps.
    #[error(
        "strategy.removalOrder: Reverse needs strategy.type: RollingSync with at least one rollingSync step (the order it reverses); set removalOrder: AllAtOnce or remove it"
    )]
    RemovalWithoutSteps,
}

/// Checks that `deletionOrder` and `removalOrder` can be followed: `Reverse` needs a
/// RollingSync with steps.
///
/// # Errors
/// [`DeletionOrderError::WithoutSteps`], [`DeletionOrderError::RemovalWithoutSteps`].
pub fn check_deletion_order(strategy: Option<&RolloutStrategy>) -> Result<(), DeletionOrderError> {
    let Some(strategy) = strategy else {
        return Ok(());
    };
    if has_steps(strategy) {
        return Ok(());
    }
    if strategy.deletion_order == Some(DeletionOrder::Reverse) {
        return Err(DeletionOrderError::WithoutSteps);
    }
    if strategy.removal_order == Some(DeletionOrder::Reverse) {
        return Err(DeletionOrderError::RemovalWithoutSteps);
    }
    Ok(())
}

/// `type: RollingSync` with at least one step.
fn has_steps(strategy: &RolloutStrategy) -> bool {
    strategy.type_ == StrategyType::RollingSync
        && strategy
            .rolling_sync
            .as_ref()
            .is_some_and(|rolling| !rolling.steps.is_empty())
}

/// Whether Applications that leave the generators' output are removed step by step
/// (`removalOrder`: `Reverse`, the default with RollingSync steps).
#[must_use]
pub fn removes_in_reverse(strategy: Option<&RolloutStrategy>) -> bool {
    strategy.is_some_and(|s| {
        has_steps(s) && s.removal_order.unwrap_or(DeletionOrder::Reverse) == DeletionOrder::Reverse
    })
}

/// Whether `strategy` asks for the Applications to be deleted in reverse step order (and can be
/// followed: see [`check_deletion_order`]).
#[must_use]
pub fn deletes_in_reverse(strategy: Option<&RolloutStrategy>) -> bool {
    strategy.is_some_and(|s| s.deletion_order == Some(DeletionOrder::Reverse))
        && check_deletion_order(strategy).is_ok()
}

/// One Application the ApplicationSet owns, as the deletion sees it.
#[derive(Clone, Copy, Debug)]
pub struct OwnedApplication<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    /// It has a deletion timestamp (its resources are being deleted).
    pub deleting: bool,
}

/// Which group of Applications a deletion step is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeletionGroup {
    /// The Applications no step selects: deleted last.
    Unselected,
    /// The Applications of this step (1-based).
    Step(usize),
}

impl DeletionGroup {
    /// How messages name it: `step 3 of 3`, `step 3 of 3 (frontend)` for a named step, or
    /// `the Applications none of the 3 steps selects`.
    #[must_use]
    pub fn describe(self, config: &RolloutConfig) -> String {
        let steps = config.steps.len();
        match self {
            Self::Step(number) => {
                let name = config
                    .steps
                    .get(number.wrapping_sub(1))
                    .and_then(|step| step.name.as_deref())
                    .map_or_else(String::new, |name| format!(" ({name})"));
                format!("step {number} of {steps}{name}")
            }
            Self::Unselected => format!("the Applications none of the {steps} steps selects"),
        }
    }
}

/// What to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReverseDeletionStep {
    /// Delete these Applications of `group` (the latest group left; those not being deleted yet).
    Delete {
        group: DeletionGroup,
        applications: Vec<String>,
    },
    /// Every Application of `group` left is being deleted: wait until they are gone.
    Wait {
        group: DeletionGroup,
        applications: Vec<String>,
    },
    /// No owned Application is left: the ApplicationSet's finalizer may go.
    Done,
}

/// The next step of a reverse-order deletion over `applications` (the ones that still exist).
///
/// # Errors
/// [`RolloutConfigError::SelectedTwice`] when two steps select one Application (the order is
/// then unknown).
pub fn reverse_deletion_step(
    config: &RolloutConfig,
    applications: &[OwnedApplication<'_>],
) -> Result<ReverseDeletionStep, RolloutConfigError> {
    let Some((latest, of_latest)) = in_deletion_order(config, applications)?.into_iter().next()
    else {
        return Ok(ReverseDeletionStep::Done);
    };
    let to_delete: Vec<String> = of_latest
        .iter()
        .filter(|app| !app.deleting)
        .map(|app| app.name.to_owned())
        .collect();
    Ok(if to_delete.is_empty() {
        ReverseDeletionStep::Wait {
            group: latest,
            applications: of_latest.iter().map(|app| app.name.to_owned()).collect(),
        }
    } else {
        ReverseDeletionStep::Delete {
            group: latest,
            applications: to_delete,
        }
    })
}

/// `applications` grouped in deletion order: the latest step first, those no step selects last.
///
/// # Errors
/// [`RolloutConfigError::SelectedTwice`].
fn in_deletion_order<'a, 'b>(
    config: &RolloutConfig,
    applications: &'a [OwnedApplication<'b>],
) -> Result<Vec<(DeletionGroup, Vec<&'a OwnedApplication<'b>>)>, RolloutConfigError> {
    let steps = config.assign(applications.iter().map(|app| (app.name, app.labels)))?;
    let mut groups: BTreeMap<DeletionGroup, Vec<&OwnedApplication<'_>>> = BTreeMap::new();
    for (app, step) in applications.iter().zip(steps) {
        let group = step.map_or(DeletionGroup::Unselected, |index| {
            DeletionGroup::Step(index + 1)
        });
        groups.entry(group).or_default().push(app);
    }
    // The steps in reverse dependency order (for a list, the last step first), then the rest.
    let order = config
        .order
        .iter()
        .rev()
        .map(|&index| DeletionGroup::Step(index + 1))
        .chain(std::iter::once(DeletionGroup::Unselected));
    Ok(order
        .filter_map(|group| Some((group, groups.remove(&group)?)))
        .collect())
}

/// How the Applications that left the generators' output go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Removal {
    /// All at once (`removalOrder: AllAtOnce`, or no RollingSync steps).
    AllAtOnce,
    /// Step by step: this is the next step ([`reverse_deletion_step`] over them).
    InSteps(ReverseDeletionStep),
    /// Step by step, but two steps select one of them: the order is unknown.
    Unordered(RolloutConfigError),
}

/// How `removed` — the owned Applications that left the generators' output and still exist —
/// go now, following `strategy.removalOrder`.
#[must_use]
pub fn removal(strategy: Option<&RolloutStrategy>, removed: &[OwnedApplication<'_>]) -> Removal {
    let config = match strategy.filter(|_| removes_in_reverse(strategy)) {
        Some(strategy) => RolloutConfig::from_strategy(strategy),
        None => return Removal::AllAtOnce,
    };
    match config.and_then(|config| reverse_deletion_step(&config, removed)) {
        Ok(step) => Removal::InSteps(step),
        Err(error) => Removal::Unordered(error),
    }
}

/// What `status.deletion` shows of a reverse-order deletion over `applications` (the ones that
/// still exist): the group being deleted and those left after it; `None` once none is left.
///
/// # Errors
/// [`RolloutConfigError::SelectedTwice`], as [`reverse_deletion_step`].
pub fn deletion_progress(
    config: &RolloutConfig,
    applications: &[OwnedApplication<'_>],
) -> Result<Option<DeletionProgress>, RolloutConfigError> {
    let mut groups = in_deletion_order(config, applications)?
        .into_iter()
        .map(|(group, apps)| DeletionGroupStatus {
            step: match group {
                DeletionGroup::Step(number) => number as u64,
                DeletionGroup::Unselected => 0,
            },
            applications: apps.iter().map(|app| app.name.to_owned()).collect(),
        });
    Ok(groups.next().map(|current| DeletionProgress {
        steps: config.steps.len() as u64,
        current,
        remaining: groups.collect(),
    }))
}

/// How `rollout explain` says where an ordered deletion stands, e.g. `deleting step 3 of 3
/// (frontend); left: step 2 (backend), step 1 (database)`.
#[must_use]
pub fn deletion_text(progress: &DeletionProgress) -> String {
    let group = |g: &DeletionGroupStatus| {
        let names = g.applications.join(", ");
        if g.step == 0 {
            format!("the Applications no step selects ({names})")
        } else {
            format!("step {} ({names})", g.step)
        }
    };
    let current = if progress.current.step == 0 {
        group(&progress.current)
    } else {
        format!(
            "step {} of {} ({})",
            progress.current.step,
            progress.steps,
            progress.current.applications.join(", ")
        )
    };
    let left = if progress.remaining.is_empty() {
        "nothing after it".to_owned()
    } else {
        let groups: Vec<String> = progress.remaining.iter().map(group).collect();
        format!("left: {}", groups.join(", "))
    };
    format!("deleting in reverse step order: {current}; {left}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::application_set::{RollingSync, RollingSyncStep, StepDependency};
    use flotilla_generators::selector::LabelSelectorRequirement;

    fn step(tier: &str) -> RollingSyncStep {
        RollingSyncStep {
            match_expressions: vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: vec![tier.into()],
            }],
            ..RollingSyncStep::default()
        }
    }

    fn three_tiers(order: Option<DeletionOrder>) -> RolloutStrategy {
        RolloutStrategy {
            type_: StrategyType::RollingSync,
            rolling_sync: Some(RollingSync {
                steps: vec![step("database"), step("backend"), step("frontend")],
                ..RollingSync::default()
            }),
            paused: false,
            deletion_order: order,
            removal_order: None,
        }
    }

    /// Applications `(name, tier)`, those named in `deleting` being deleted.
    fn labels(apps: &[(&str, &str)]) -> Vec<(String, BTreeMap<String, String>)> {
        apps.iter()
            .map(|(name, tier)| {
                let mut labels = BTreeMap::new();
                if !tier.is_empty() {
                    labels.insert("tier".to_owned(), (*tier).to_owned());
                }
                ((*name).to_owned(), labels)
            })
            .collect()
    }

    /// `apps` as owned Applications, those named in `deleting` being deleted.
    fn owned<'a>(
        apps: &'a [(String, BTreeMap<String, String>)],
        deleting: &[&str],
    ) -> Vec<OwnedApplication<'a>> {
        apps.iter()
            .map(|(name, labels)| OwnedApplication {
                name,
                labels,
                deleting: deleting.contains(&name.as_str()),
            })
            .collect()
    }

    fn next(apps: &[(String, BTreeMap<String, String>)], deleting: &[&str]) -> ReverseDeletionStep {
        let config = RolloutConfig::from_strategy(&three_tiers(Some(DeletionOrder::Reverse)))
            .expect("valid");
        reverse_deletion_step(&config, &owned(apps, deleting)).expect("one step each")
    }

    fn delete(group: DeletionGroup, names: &[&str]) -> ReverseDeletionStep {
        ReverseDeletionStep::Delete {
            group,
            applications: names.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    fn wait(group: DeletionGroup, names: &[&str]) -> ReverseDeletionStep {
        ReverseDeletionStep::Wait {
            group,
            applications: names.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    #[test]
    fn the_last_step_goes_first_and_each_step_waits_for_the_later_one_to_be_gone() {
        use DeletionGroup::{Step, Unselected};
        let all = labels(&[
            ("db-eu", "database"),
            ("db-us", "database"),
            ("api", "backend"),
            ("web-eu", "frontend"),
            ("web-us", "frontend"),
            ("tools", ""),
        ]);
        // Replayed from what exists at each moment, as a restarted controller sees it.
        assert_eq!(next(&all, &[]), delete(Step(3), &["web-eu", "web-us"]));
        assert_eq!(next(&all, &["web-eu"]), delete(Step(3), &["web-us"]));
        assert_eq!(
            next(&all, &["web-eu", "web-us"]),
            wait(Step(3), &["web-eu", "web-us"])
        );
        // One frontend is gone, the other still deleting: the backend waits.
        let one_left: Vec<_> = all.iter().filter(|(n, _)| n != "web-eu").cloned().collect();
        assert_eq!(next(&one_left, &["web-us"]), wait(Step(3), &["web-us"]));
        let backend: Vec<_> = all
            .iter()
            .filter(|(n, _)| !n.starts_with("web"))
            .cloned()
            .collect();
        assert_eq!(next(&backend, &[]), delete(Step(2), &["api"]));
        assert_eq!(next(&backend, &["api"]), wait(Step(2), &["api"]));
        let database = labels(&[("db-eu", "database"), ("db-us", "database"), ("tools", "")]);
        assert_eq!(next(&database, &[]), delete(Step(1), &["db-eu", "db-us"]));
        assert_eq!(
            next(&labels(&[("tools", "")]), &[]),
            delete(Unselected, &["tools"])
        );
        assert_eq!(next(&[], &[]), ReverseDeletionStep::Done);
    }

    #[test]
    fn the_progress_names_the_step_being_deleted_and_what_is_left() {
        let config = RolloutConfig::from_strategy(&three_tiers(Some(DeletionOrder::Reverse)))
            .expect("valid");
        let progress = |apps: &[(String, BTreeMap<String, String>)]| {
            deletion_progress(&config, &owned(apps, &[])).expect("one step each")
        };
        let group = |step: u64, names: &[&str]| DeletionGroupStatus {
            step,
            applications: names.iter().map(|n| (*n).to_owned()).collect(),
        };
        let all = labels(&[
            ("db-eu", "database"),
            ("db-us", "database"),
            ("api", "backend"),
            ("web", "frontend"),
            ("tools", ""),
        ]);
        let started = progress(&all).expect("in progress");
        assert_eq!(
            started,
            DeletionProgress {
                steps: 3,
                current: group(3, &["web"]),
                remaining: vec![
                    group(2, &["api"]),
                    group(1, &["db-eu", "db-us"]),
                    group(0, &["tools"])
                ],
            }
        );
        assert_eq!(
            deletion_text(&started),
            "deleting in reverse step order: step 3 of 3 (web); left: step 2 (api), step 1 (db-eu, db-us), the Applications no step selects (tools)"
        );
        let last = progress(&labels(&[("tools", "")])).expect("in progress");
        assert_eq!(
            deletion_text(&last),
            "deleting in reverse step order: the Applications no step selects (tools); nothing after it"
        );
        assert_eq!(progress(&[]), None);
    }

    #[test]
    fn an_application_two_steps_select_has_no_order() {
        let config = RolloutConfig::from_strategy(&three_tiers(Some(DeletionOrder::Reverse)))
            .expect("valid");
        let mut strategy = three_tiers(Some(DeletionOrder::Reverse));
        if let Some(rolling) = strategy.rolling_sync.as_mut() {
            rolling.steps.push(step("frontend"));
        }
        let twice = RolloutConfig::from_strategy(&strategy).expect("valid");
        let apps = labels(&[("web", "frontend")]);
        let owned = [OwnedApplication {
            name: &apps[0].0,
            labels: &apps[0].1,
            deleting: false,
        }];
        assert!(reverse_deletion_step(&config, &owned).is_ok());
        assert!(matches!(
            reverse_deletion_step(&twice, &owned),
            Err(RolloutConfigError::SelectedTwice { .. })
        ));
    }

    #[test]
    fn removed_applications_go_in_steps_unless_all_at_once_is_asked_for() {
        use DeletionGroup::Step;
        let apps = labels(&[("db", "database"), ("api", "backend"), ("web", "frontend")]);
        let owned = owned(&apps, &["web"]);
        let all_at_once = RolloutStrategy {
            removal_order: Some(DeletionOrder::AllAtOnce),
            ..three_tiers(None)
        };
        let no_steps = RolloutStrategy {
            type_: StrategyType::AllAtOnce,
            ..three_tiers(None)
        };
        let in_steps = three_tiers(None);
        // (strategy, what the removal does)
        let cases: Vec<(Option<&RolloutStrategy>, Removal)> = vec![
            (Some(&in_steps), Removal::InSteps(wait(Step(3), &["web"]))),
            (Some(&all_at_once), Removal::AllAtOnce),
            (Some(&no_steps), Removal::AllAtOnce),
            (None, Removal::AllAtOnce),
        ];
        for (strategy, expected) in cases {
            assert_eq!(removal(strategy, &owned), expected, "{strategy:?}");
        }
        let without_web = &owned[..2];
        assert_eq!(
            removal(Some(&three_tiers(None)), without_web),
            Removal::InSteps(delete(Step(2), &["api"]))
        );
        let mut twice = three_tiers(None);
        if let Some(rolling) = twice.rolling_sync.as_mut() {
            rolling.steps.push(step("frontend"));
        }
        assert!(matches!(
            removal(Some(&twice), &owned),
            Removal::Unordered(RolloutConfigError::SelectedTwice { .. })
        ));
        assert_eq!(
            check_deletion_order(Some(&RolloutStrategy {
                removal_order: Some(DeletionOrder::Reverse),
                ..no_steps
            })),
            Err(DeletionOrderError::RemovalWithoutSteps)
        );
    }

    #[test]
    fn a_step_graph_is_deleted_in_reverse_dependency_order() {
        use DeletionGroup::{Step, Unselected};
        let named = |name: &str, tier: &str, depends_on: &[&str]| RollingSyncStep {
            name: Some(name.to_owned()),
            depends_on: Some(
                depends_on
                    .iter()
                    .map(|d| StepDependency::from(*d))
                    .collect(),
            ),
            ..step(tier)
        };
        // The frontend listed first, waiting for the backend, which waits for the database.
        let strategy = RolloutStrategy {
            rolling_sync: Some(RollingSync {
                steps: vec![
                    named("frontend", "frontend", &["backend"]),
                    named("database", "database", &[]),
                    named("backend", "backend", &["database"]),
                ],
                ..RollingSync::default()
            }),
            ..three_tiers(Some(DeletionOrder::Reverse))
        };
        let config = RolloutConfig::from_strategy(&strategy).expect("valid");
        let apps = labels(&[
            ("db", "database"),
            ("api", "backend"),
            ("web", "frontend"),
            ("tools", ""),
        ]);
        let mut left: Vec<(String, BTreeMap<String, String>)> = apps.clone();
        let mut seen = Vec::new();
        while let Some((group, names)) = {
            match reverse_deletion_step(&config, &owned(&left, &[])).expect("ordered") {
                ReverseDeletionStep::Delete {
                    group,
                    applications,
                } => Some((group, applications)),
                _ => None,
            }
        } {
            seen.push((group, group.describe(&config)));
            left.retain(|(name, _)| !names.contains(name));
        }
        assert_eq!(
            seen,
            [
                (Step(1), "step 1 of 3 (frontend)".to_owned()),
                (Step(3), "step 3 of 3 (backend)".to_owned()),
                (Step(2), "step 2 of 3 (database)".to_owned()),
                (
                    Unselected,
                    "the Applications none of the 3 steps selects".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn reverse_needs_rolling_sync_steps() {
        assert_eq!(check_deletion_order(None), Ok(()));
        assert_eq!(
            check_deletion_order(Some(&three_tiers(Some(DeletionOrder::Reverse)))),
            Ok(())
        );
        let all_at_once = RolloutStrategy {
            type_: StrategyType::AllAtOnce,
            ..three_tiers(Some(DeletionOrder::Reverse))
        };
        assert_eq!(
            check_deletion_order(Some(&all_at_once)),
            Err(DeletionOrderError::WithoutSteps)
        );
        assert!(!deletes_in_reverse(Some(&all_at_once)));
        let no_steps = RolloutStrategy {
            rolling_sync: Some(RollingSync::default()),
            ..three_tiers(Some(DeletionOrder::Reverse))
        };
        assert_eq!(
            check_deletion_order(Some(&no_steps)),
            Err(DeletionOrderError::WithoutSteps)
        );
        let explicit_all_at_once = RolloutStrategy {
            type_: StrategyType::AllAtOnce,
            ..three_tiers(Some(DeletionOrder::AllAtOnce))
        };
        assert_eq!(check_deletion_order(Some(&explicit_all_at_once)), Ok(()));
        assert!(!deletes_in_reverse(Some(&explicit_all_at_once)));
        assert!(deletes_in_reverse(Some(&three_tiers(Some(
            DeletionOrder::Reverse
        )))));
    }
}
