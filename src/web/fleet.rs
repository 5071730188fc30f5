//! The Fleet page: every ApplicationSet (those whose labels pass the label filter) with its
//! strategy, rollout condition, current step k/N and its Applications counted by sync and
//! health; then the namespace's Applications, filtered and paginated
//! ([`super::application_list`]).

use std::collections::BTreeMap;

use kube::ResourceExt;

use super::application_list::section;
use super::application_query::ApplicationQuery;
use super::label_filter::{parse, selects};
use super::layout::Page;
use super::snapshot::Snapshot;
use flotilla_core::api::application_set_status::{ConditionType, RolloutApplicationState};
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_input::rolling_sync;
use flotilla_core::html::{badge, escape, link, table};

/// The Fleet page for `query` (its label filter, kubectl's `-l` syntax, also filters the
/// ApplicationSets).
#[must_use]
pub fn render(snapshot: &Snapshot, query: &ApplicationQuery) -> Page {
    let mut main = String::from("<h1>Fleet</h1>");
    // A filter that cannot be read shows no ApplicationSet; the list below says why.
    let selector = parse(&query.label).ok();
    let rows = snapshot
        .appsets
        .iter()
        .filter(|appset| {
            selector
                .as_ref()
                .is_some_and(|selector| selects(selector, appset.metadata.labels.as_ref()))
        })
        .map(|appset| {
            let name = appset.name_any();
            let applications: Vec<&Application> = snapshot.generated_by(&name).collect();
            vec![
                link(&format!("/applicationsets/{name}"), &name),
                escape(&strategy(appset)),
                rollout_condition(appset),
                current_step(appset).map_or_else(|| "-".to_owned(), |(k, n)| format!("{k}/{n}")),
                applications.len().to_string(),
                counts(applications.iter().map(|a| sync_status(a))),
                counts(applications.iter().map(|a| health_status(a))),
            ]
        });
    main.push_str("<h2>ApplicationSets</h2>");
    main.push_str(&table(
        &[
            "APPLICATIONSET",
            "STRATEGY",
            "ROLLOUT",
            "STEP",
            "APPLICATIONS",
            "SYNC",
            "HEALTH",
        ],
        rows,
    ));
    main.push_str(&section(
        "/",
        query,
        snapshot,
        snapshot.applications.iter().map(AsRef::as_ref),
    ));
    Page {
        title: "Fleet".to_owned(),
        main,
    }
}

/// `RollingSync (3 steps)`, `RollingSync (3 steps, paused)` or `AllAtOnce`.
fn strategy(appset: &ApplicationSet) -> String {
    match rolling_sync(appset) {
        Some(strategy) => {
            let steps = strategy.rolling_sync.as_ref().map_or(0, |r| r.steps.len());
            let paused = if strategy.paused { ", paused" } else { "" };
            format!("RollingSync ({steps} steps{paused})")
        }
        None => "AllAtOnce".to_owned(),
    }
}

/// The `RolloutProgressing` condition as a badge and its reason; `-` without one.
fn rollout_condition(appset: &ApplicationSet) -> String {
    appset
        .status
        .iter()
        .flat_map(|status| &status.conditions)
        .find(|condition| condition.type_ == ConditionType::RolloutProgressing)
        .map_or_else(
            || "-".to_owned(),
            |condition| {
                let status = format!("{:?}", condition.status);
                format!("{} {}", badge(&status), escape(&condition.reason))
            },
        )
}

/// The first step (1-based) with an Application not yet Healthy, out of the number of steps;
/// every step done shows as N/N. `None` without a RollingSync or before its first pass.
#[must_use]
pub fn current_step(appset: &ApplicationSet) -> Option<(usize, usize)> {
    let steps = rolling_sync(appset)?.rolling_sync.as_ref()?.steps.len();
    let status = appset.status.as_ref()?;
    let recorded = &status.application_status;
    // A large rollout counts its Applications per step instead of listing them.
    let counted = &status.application_status_summary;
    if recorded.is_empty() && counted.is_empty() {
        return None;
    }
    let open = recorded
        .iter()
        .filter(|entry| entry.status != RolloutApplicationState::Healthy)
        .map(|entry| entry.step.as_str())
        .chain(
            counted
                .iter()
                .filter(|s| s.waiting + s.pending + s.progressing > 0)
                .map(|s| s.step.as_str()),
        )
        .filter_map(|step| step.parse::<usize>().ok())
        .filter(|step| *step >= 1)
        .min();
    Some((open.unwrap_or(steps), steps))
}

/// The sync status of `application` (`Unknown` before its first compare).
#[must_use]
pub fn sync_status(application: &Application) -> &str {
    application
        .status
        .as_ref()
        .and_then(|status| status.sync.as_ref())
        .map_or("Unknown", |sync| sync.status.as_str())
}

/// The health of `application` (`Unknown` before its first compare).
#[must_use]
pub fn health_status(application: &Application) -> &str {
    application
        .status
        .as_ref()
        .and_then(|status| status.health.as_ref())
        .map_or("Unknown", |health| health.status.as_str())
}

/// `Synced 3, OutOfSync 1` as badges; `-` when there are none.
fn counts<'a>(words: impl Iterator<Item = &'a str>) -> String {
    let mut counted: BTreeMap<&str, usize> = BTreeMap::new();
    for word in words {
        *counted.entry(word).or_default() += 1;
    }
    if counted.is_empty() {
        return "-".to_owned();
    }
    counted
        .into_iter()
        .map(|(word, count)| format!("{} {count}", badge(word)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::test_fixtures::{assert_escaped, snapshot};

    #[test]
    fn lists_each_application_set_with_its_step_and_counts() {
        let page = render(&snapshot(), &ApplicationQuery::default());
        assert_escaped(&page.main);
        assert!(page.main.contains("RollingSync (3 steps)"), "{}", page.main);
        assert!(page.main.contains("<td>2/3</td>"), "{}", page.main);
        assert!(
            page.main
                .contains(r#"<span class="badge s-OutOfSync">OutOfSync</span> 2"#)
        );
        assert!(page.main.contains("StepProgressing"));
    }

    #[test]
    fn the_label_filter_hides_application_sets_and_reports_bad_filters() {
        let label = |filter: &str| ApplicationQuery {
            label: filter.to_owned(),
            ..ApplicationQuery::default()
        };
        assert!(render(&snapshot(), &label("team")).main.contains("2/3"));
        assert!(
            !render(&snapshot(), &label("team=search"))
                .main
                .contains("2/3")
        );
        let bad = render(&snapshot(), &label("a,,<script>"));
        assert!(bad.main.contains(r#"class="error""#));
        assert_escaped(&bad.main);
    }
}
