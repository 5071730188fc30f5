//! `strategy.deletionOrder: Reverse` (Argo CD 3.x): a deleted RollingSync ApplicationSet's
//! Applications go step by step in reverse step order — the last step's first, then the one
//! before once every Application of the later step is gone (an Application with the resources
//! finalizer is gone once its resources are). Applications no step selects go last. Pure: each
//! step is decided from the owned Applications that still exist and whether each is being
//! deleted, so a restarted controller resumes where the deletion stands; [`deletion_progress`]
//! tells from the same grouping what `status.deletion` shows (the step being deleted and what
//! is left), and [`deletion_text`] how `rollout explain` says it.

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
}

/// Checks that `deletionOrder` can be followed: `Reverse` needs a RollingSync with steps.
///
/// # Errors
/// [`DeletionOrderError::WithoutSteps`].
pub fn check_deletion_order(strategy: Option<&RolloutStrategy>) -> Result<(), DeletionOrderError> {
    let Some(strategy) = strategy else {
        return Ok(());
    };
    let has_steps = strategy.type_ == StrategyType::RollingSync
        && strategy
            .rolling_sync
            .as_ref()
            .is_some_and(|rolling| !rolling.steps.is_empty());
    if strategy.deletion_order == Some(DeletionOrder::Reverse) && !has_steps {
        return Err(DeletionOrderError::WithoutSteps);
    }
    Ok(())
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
    Ok(groups.into_iter().rev().collect())
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
    use crate::api::application_set::{RollingSync, RollingSyncStep};
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

    fn next(apps: &[(String, BTreeMap<String, String>)], deleting: &[&str]) -> ReverseDeletionStep {
        let config = RolloutConfig::from_strategy(&three_tiers(Some(DeletionOrder::Reverse)))
            .expect("valid");
        let owned: Vec<OwnedApplication<'_>> = apps
            .iter()
            .map(|(name, labels)| OwnedApplication {
                name,
                labels,
                deleting: deleting.contains(&name.as_str()),
            })
            .collect();
        reverse_deletion_step(&config, &owned).expect("one step each")
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
            let owned: Vec<OwnedApplication<'_>> = apps
                .iter()
                .map(|(name, labels)| OwnedApplication {
                    name,
                    labels,
                    deleting: false,
                })
                .collect();
            deletion_progress(&config, &owned).expect("one step each")
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
