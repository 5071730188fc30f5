//! The ApplicationSet page: its conditions, the sync windows of its Applications
//! ([`super::sync_windows`]), the RollingSync drawn as a pipeline ([`super::pipeline_view`]),
//! then per RollingSync step the step's state,
//! `maxUpdate` in use, deadline and what keeps it closed (the step reports of `flotilla rollout
//! explain`, whose whole text follows), with each Application's rollout status, health, sync
//! and revision, all from one decision of the step function (see [`super::rollout_view`]), and
//! the history of its rollouts ([`super::rollout_history`]).
//! Without RollingSync, its Applications. Then its Applications filtered and paginated
//! ([`super::application_list`]); a step of more Applications than a page links to that list
//! filtered by the step instead of listing them.

use std::fmt::Write as _;

use super::action_offers::{application_set_offers, buttons};
use super::application_list::section;
use super::application_query::{ApplicationQuery, PAGE_SIZE};
use super::fleet::{health_status, sync_status};
use super::layout::Page;
use super::pipeline_view;
use super::rollout_history;
use super::rollout_view::current_rollout;
use super::snapshot::Snapshot;
use super::sync_windows;
use super::timeline::live_report;
use crate::simulate::timeline::svg;
use flotilla_core::api::application_set_status::ApplicationSetApplicationStatus;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::html::{badge, escape, link, table};
use flotilla_core::rollout::explain::explain_text;
use flotilla_core::rollout::{RolloutDecision, StepReport};

/// The page of ApplicationSet `name` with its Applications filtered by `query`; `None` when
/// the watches do not hold it.
#[must_use]
pub fn render(snapshot: &Snapshot, name: &str, query: &ApplicationQuery) -> Option<Page> {
    let appset = snapshot.appset(name)?;
    let applications: Vec<Application> = snapshot.generated_by(name).cloned().collect();
    let mut main = format!("<h1>ApplicationSet {}</h1>", escape(name));
    main.push_str(&buttons(name, &application_set_offers(appset)));
    main.push_str("<h2>Conditions</h2>");
    main.push_str(&conditions(appset));
    main.push_str(&sync_windows::section(snapshot, &applications));
    match current_rollout(appset, &applications, snapshot.now, &snapshot.projects) {
        Some((input, decision)) => {
            main.push_str(concat!(
                r#"<p class="none">As the controller's next pass decides from what it watches "#,
                "(its recorded status may be a pass behind).</p>"
            ));
            main.push_str(&pipeline_view::section(
                name,
                &input,
                &decision,
                &applications,
                snapshot.now,
            ));
            for report in &decision.step_reports {
                main.push_str(&step_section(report, &decision, &applications, name));
            }
            if !decision.unselected.is_empty() {
                main.push_str("<h2>No step: never synced by the rollout</h2>");
                let decided = &decision.application_status;
                main.push_str(&applications_table(
                    &decision.unselected,
                    decided,
                    &applications,
                ));
            }
            if let Some(report) = live_report("RollingSync", &decision, &applications, snapshot.now)
            {
                main.push_str("<h2>Timeline</h2>");
                main.push_str(&svg(&report));
            }
            let from_events = snapshot.rollouts_ended_of(appset);
            main.push_str(&rollout_history::section(appset, from_events, snapshot.now));
            let _ = write!(
                main,
                "<details><summary>rollout explain</summary><pre>{}</pre></details>",
                escape(&explain_text(name, &input, &decision))
            );
        }
        None => main.push_str("<p>AllAtOnce: every Application syncs as it changes.</p>"),
    }
    main.push_str(&section(
        &format!("/applicationsets/{name}"),
        query,
        snapshot,
        snapshot.generated_by(name),
    ));
    Some(Page {
        title: format!("ApplicationSet {name}"),
        main,
    })
}

fn conditions(appset: &ApplicationSet) -> String {
    let rows = appset
        .status
        .iter()
        .flat_map(|status| &status.conditions)
        .map(|c| {
            vec![
                escape(&format!("{:?}", c.type_)),
                badge(&format!("{:?}", c.status)),
                escape(&c.reason),
                escape(&c.message),
            ]
        });
    table(&["TYPE", "STATUS", "REASON", "MESSAGE"], rows)
}

/// One step: its state, budget, deadline, what happens next, and its Applications (a link to
/// them, filtered, when they fill more than a page).
fn step_section(
    report: &StepReport,
    decision: &RolloutDecision,
    applications: &[Application],
    appset: &str,
) -> String {
    let state = format!("{:?}", report.state);
    let names = decision
        .steps
        .get(&report.step)
        .map_or(&[][..], Vec::as_slice);
    format!(
        concat!(
            r#"<section class="step step-{state}" data-step="{step}" data-state="{state}">"#,
            "<h2>Step {step} {badge}</h2><p>{budget}</p>",
            r#"<p class="next">{next}</p>{table}</section>"#
        ),
        state = escape(&state),
        step = report.step,
        badge = badge(&state),
        budget = escape(&report.budget()),
        next = escape(&report.next),
        table = if names.len() > PAGE_SIZE {
            let filtered = ApplicationQuery {
                step: report.step.to_string(),
                ..ApplicationQuery::default()
            };
            link(
                &format!(
                    "/applicationsets/{appset}{}#applications",
                    filtered.to_query(1)
                ),
                &format!("{} Applications", names.len()),
            )
        } else {
            applications_table(names, &decision.application_status, applications)
        },
    )
}

/// `names` with their rollout status in `rollout` (none without a RollingSync), health, sync
/// and revision.
fn applications_table(
    names: &[String],
    rollout: &[ApplicationSetApplicationStatus],
    applications: &[Application],
) -> String {
    let rows = names.iter().map(|name| {
        let entry = rollout.iter().find(|entry| &entry.application == name);
        let application = applications
            .iter()
            .find(|application| application.metadata.name.as_deref() == Some(name.as_str()));
        let rollout = entry.map_or_else(
            || "-".to_owned(),
            |entry| {
                format!(
                    r#"<span data-application="{}" data-rollout="{status}">{}</span> {}"#,
                    escape(name),
                    badge(entry.status.as_str()),
                    escape(&entry.message),
                    status = entry.status.as_str(),
                )
            },
        );
        let revision = application
            .and_then(|a| a.status.as_ref())
            .and_then(|status| status.sync.as_ref())
            .map_or("", |sync| sync.revision.as_str());
        vec![
            link(&format!("/applications/{name}"), name),
            rollout,
            application.map_or_else(|| "not created".to_owned(), |a| badge(health_status(a))),
            application.map_or_else(String::new, |a| badge(sync_status(a))),
            escape(revision),
        ]
    });
    table(
        &["APPLICATION", "ROLLOUT", "HEALTH", "SYNC", "REVISION"],
        rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::test_fixtures::{APPSET, assert_escaped, snapshot};

    #[test]
    fn shows_each_step_with_its_applications_and_the_explain_text() {
        let page = render(&snapshot(), APPSET, &ApplicationQuery::default())
            .expect("the fixture's ApplicationSet");
        assert_escaped(&page.main);
        assert_escaped(&page.title.replace('<', "&lt;").replace('>', "&gt;"));
        for step in 1..=3 {
            assert!(
                page.main.contains(&format!(r#"data-step="{step}""#)),
                "{}",
                page.main
            );
        }
        assert!(
            page.main
                .contains(r#"data-application="shop-staging" data-rollout="Progressing""#)
        );
        assert!(page.main.contains("maxUpdate"), "{}", page.main);
        assert!(page.main.contains("<summary>rollout explain</summary>"));
        // The staging sync has started: the timeline draws it.
        assert!(page.main.contains("<h2>Timeline</h2><svg"), "{}", page.main);
        assert!(render(&snapshot(), "other", &ApplicationQuery::default()).is_none());
    }

    #[test]
    fn an_application_of_an_earlier_step_gone_degraded_shows_the_rollout_stalled_on_it() {
        let healthy = render(&snapshot(), APPSET, &ApplicationQuery::default())
            .expect("the fixture's ApplicationSet");
        assert!(!healthy.main.contains("shop-dev Degraded"));
        let mut snapshot = snapshot();
        for application in &mut snapshot.applications {
            if application.metadata.name.as_deref() == Some("shop-dev") {
                let mut degraded = (**application).clone();
                let health = &mut degraded.status.as_mut().expect("a status").health;
                let health = health.as_mut().expect("a health");
                health.status = flotilla_core::health::HealthStatus::Degraded;
                health.message = "Deployment dev/web: Degraded: replica lost".to_owned();
                *application = std::sync::Arc::new(degraded);
            }
        }
        let page = render(&snapshot, APPSET, &ApplicationQuery::default())
            .expect("the fixture's ApplicationSet");
        assert!(
            page.main.contains("shop-dev Degraded"),
            "the explain text names it: {}",
            page.main
        );
        assert!(page.main.contains("replica lost"), "{}", page.main);
    }
}
