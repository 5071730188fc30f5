//! An ApplicationSet's RollingSync drawn as a pipeline: an inline SVG with one box per step,
//! placed by [`flotilla_core::rollout::pipeline_layout`] (steps that run side by side in one
//! column, an edge from each step to those that wait for it), each box with the step's state,
//! its Applications counted by health, the bake's countdown, the analysis, what it waits for,
//! and — for a step waiting for approval — the page's hidden Promote button (shown to a viewer
//! who gave a token, [`super::action_offers`]). A box links to the ApplicationSet's
//! Applications filtered to its step. Pure: from one decision of the step function.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::action_offers::{Offer, buttons};
use super::application_query::ApplicationQuery;
use super::fleet::health_status;
use crate::actions::action::Action;
use flotilla_core::api::Application;
use flotilla_core::api::application_set_status::RolloutStepStatus;
use flotilla_core::html::escape;
use flotilla_core::rollout::pipeline_layout::layout;
use flotilla_core::rollout::{RolloutConfig, RolloutDecision, RolloutInput, StepReport, StepState};
use flotilla_generators::duration::format_duration;

/// A step's box, and the space between boxes.
const WIDTH: usize = 230;
const HEIGHT: usize = 92;
const GAP_X: usize = 56;
const GAP_Y: usize = 18;
const MARGIN: usize = 8;
/// How many characters of a line a box shows (the whole text is its tooltip).
const LINE: usize = 34;

/// The pipeline of ApplicationSet `appset` as `decision` (from `input`) sees it at `now`.
#[must_use]
pub fn section(
    appset: &str,
    input: &RolloutInput,
    decision: &RolloutDecision,
    applications: &[Application],
    now: Timestamp,
) -> String {
    let reports = &decision.step_reports;
    if reports.is_empty() {
        return String::new();
    }
    let depends_on: Vec<Vec<usize>> = reports
        .iter()
        .map(|report| {
            report
                .waits_for()
                .iter()
                .filter_map(|step| step.checked_sub(1))
                .collect()
        })
        .collect();
    let grid = layout(&depends_on);
    let left = |column: usize| MARGIN + column * (WIDTH + GAP_X);
    let top = |row: usize| MARGIN + row * (HEIGHT + GAP_Y);
    let width = left(grid.columns) - GAP_X + MARGIN;
    let height = top(grid.rows) - GAP_Y + MARGIN;
    let mut out = format!(
        concat!(
            r#"<h2>Pipeline</h2><svg class="pipeline" role="img" aria-label="rollout pipeline" "#,
            r#"width="{width}" height="{height}" viewBox="0 0 {width} {height}" "#,
            r#"xmlns="http://www.w3.org/2000/svg">"#
        ),
        width = width,
        height = height,
    );
    for &(from, to) in &grid.edges {
        let (a, b) = (grid.positions[from], grid.positions[to]);
        let (x1, y1) = (left(a.column) + WIDTH, top(a.row) + HEIGHT / 2);
        let (x2, y2) = (left(b.column), top(b.row) + HEIGHT / 2);
        let bend = (x1 + x2) / 2;
        let _ = write!(
            out,
            r#"<path class="edge" data-from="{}" data-to="{}" d="M{x1} {y1} C{bend} {y1} {bend} {y2} {x2} {y2}" fill="none"/>"#,
            from + 1,
            to + 1
        );
    }
    let config = RolloutConfig::from_strategy(&input.strategy).ok();
    let health: BTreeMap<&str, &str> = applications
        .iter()
        .filter_map(|app| Some((app.metadata.name.as_deref()?, health_status(app))))
        .collect();
    for (report, position) in reports.iter().zip(&grid.positions) {
        let bake_time = config
            .as_ref()
            .and_then(|c| c.steps.get(position.step))
            .and_then(|step| step.bake_time);
        out.push_str(&step_box(
            appset,
            report,
            decision,
            &health,
            bake_time,
            now,
            (left(position.column), top(position.row)),
        ));
    }
    out.push_str("</svg>");
    out
}

/// One step's box at `(x, y)`.
fn step_box(
    appset: &str,
    report: &StepReport,
    decision: &RolloutDecision,
    health: &BTreeMap<&str, &str>,
    bake_time: Option<Duration>,
    now: Timestamp,
    (x, y): (usize, usize),
) -> String {
    let state = format!("{:?}", report.state);
    let filtered = ApplicationQuery {
        step: report.step.to_string(),
        ..ApplicationQuery::default()
    };
    let href = format!(
        "/applicationsets/{appset}{}#applications",
        filtered.to_query(1)
    );
    let title = match &report.name {
        Some(name) => format!("Step {} · {name}", report.step),
        None => format!("Step {}", report.step),
    };
    let detail = detail(report, decision, bake_time, now);
    let lines = [counts(report, decision, health), detail];
    let mut out = format!(
        concat!(
            r#"<g class="pipeline-step" data-pipeline-step="{step}" data-state="{state}" "#,
            r#"data-x="{x}" data-y="{y}"><a href="{href}"><title>{tooltip}</title>"#,
            r#"<rect class="st-{state}" x="{x}" y="{y}" width="{WIDTH}" height="{HEIGHT}" rx="6"/>"#,
            r#"<text class="title" x="{tx}" y="{t1}">{title}</text>"#,
            r#"<text class="state" x="{tx}" y="{t2}">{state}</text>"#
        ),
        step = report.step,
        state = escape(&state),
        href = escape(&href),
        tooltip = escape(&format!("{}: {}", report.title(), report.next)),
        title = escape(&clipped(&title)),
        WIDTH = WIDTH,
        HEIGHT = HEIGHT,
        x = x,
        y = y,
        tx = x + 10,
        t1 = y + 20,
        t2 = y + 40,
    );
    let until = (report.state == StepState::Baking)
        .then(|| bake_ends(report, decision, bake_time))
        .flatten();
    for (index, line) in lines.iter().enumerate() {
        // The bake's line ticks down in the browser (the page's script) between updates.
        let ticking = until
            .filter(|_| index == 1)
            .map_or_else(String::new, |until| format!(r#" data-until="{until}""#));
        let _ = write!(
            out,
            r#"<text class="line" x="{}" y="{}"{ticking}>{}</text>"#,
            x + 10,
            y + 60 + index * 18,
            escape(&clipped(line))
        );
    }
    out.push_str("</a>");
    if report.state == StepState::WaitingForApproval {
        let _ = write!(
            out,
            r#"<foreignObject x="{}" y="{}" width="{}" height="28">{}</foreignObject>"#,
            x + WIDTH - 128,
            y + 4,
            120,
            buttons(
                appset,
                &[Offer {
                    action: Action::Promote,
                    step: Some(report.step),
                }]
            )
        );
    }
    out.push_str("</g>");
    out
}

/// `2 Healthy · 1 Progressing` for the step's Applications (`health` by name; `not created` for
/// those not yet there); `no Applications` for none.
fn counts(
    report: &StepReport,
    decision: &RolloutDecision,
    health: &BTreeMap<&str, &str>,
) -> String {
    let names = decision
        .steps
        .get(&report.step)
        .map_or(&[][..], Vec::as_slice);
    if names.is_empty() {
        return "no Applications".to_owned();
    }
    let mut by_health: Vec<(&str, usize)> = Vec::new();
    for name in names {
        let health = health.get(name.as_str()).copied().unwrap_or("not created");
        match by_health.iter_mut().find(|(word, _)| *word == health) {
            Some((_, count)) => *count += 1,
            None => by_health.push((health, 1)),
        }
    }
    by_health.sort_unstable();
    by_health
        .iter()
        .map(|(health, count)| format!("{count} {health}"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// What the step's state adds: the bake's time left, the analysis, the approval, what a closed
/// step waits for, or why it is stuck.
fn detail(
    report: &StepReport,
    decision: &RolloutDecision,
    bake_time: Option<Duration>,
    now: Timestamp,
) -> String {
    let record = record(report, decision);
    match report.state {
        StepState::Baking => bake_ends(report, decision, bake_time).map_or_else(
            || "baking".to_owned(),
            |ends| {
                let left = ends.duration_since(now).as_secs().max(0).unsigned_abs();
                format!("bake: {} left", format_duration(Duration::from_secs(left)))
            },
        ),
        StepState::Analysing => {
            let analysis = record.and_then(|r| r.analysis.as_ref());
            match analysis {
                Some(a) if !a.message.is_empty() => {
                    format!("analysis: {} ({} failed)", a.message, a.failures)
                }
                _ => format!(
                    "analysis: {} running",
                    report.analysis.as_deref().unwrap_or("check")
                ),
            }
        }
        StepState::WaitingForApproval => "awaiting approval".to_owned(),
        StepState::Closed => {
            let after = report.waits_for();
            if after.is_empty() {
                "closed".to_owned()
            } else {
                flotilla_core::rollout::decision::after_steps(&after)
            }
        }
        StepState::Complete => record
            .and_then(|r| r.analysis.as_ref())
            .filter(|a| a.passed_at.is_some())
            .map_or_else(String::new, |_| "analysis passed".to_owned()),
        _ => report.next.clone(),
    }
}

/// The record of `report`'s step in `decision`, if it has one.
fn record<'a>(report: &StepReport, decision: &'a RolloutDecision) -> Option<&'a RolloutStepStatus> {
    decision
        .step_status
        .iter()
        .find(|record| usize::try_from(record.step).is_ok_and(|s| s == report.step))
}

/// When the bake of `report`'s step ends, while it bakes.
fn bake_ends(
    report: &StepReport,
    decision: &RolloutDecision,
    bake_time: Option<Duration>,
) -> Option<Timestamp> {
    record(report, decision)
        .zip(bake_time)
        .and_then(|(record, bake_time)| record.bake_ends_at(bake_time))
}

/// `text` cut to [`LINE`] characters, with an ellipsis when cut.
fn clipped(text: &str) -> String {
    if text.chars().count() <= LINE {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(LINE - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::rollout_view::current_rollout;
    use crate::web::test_fixtures::{APPSET, assert_escaped, snapshot};

    /// The pipeline of the fixture, its ApplicationSet's strategy changed by `strategy`.
    fn drawn(strategy: Option<serde_json::Value>) -> String {
        let mut snapshot = snapshot();
        if let Some(strategy) = strategy {
            let mut appset = (*snapshot.appsets[0]).clone();
            appset.spec.strategy = Some(serde_json::from_value(strategy).expect("a strategy"));
            snapshot.appsets[0] = std::sync::Arc::new(appset);
        }
        let appset = snapshot
            .appset(APPSET)
            .expect("the fixture's ApplicationSet");
        let applications: Vec<Application> = snapshot.generated_by(APPSET).cloned().collect();
        let (input, decision) =
            current_rollout(appset, &applications, snapshot.now, &snapshot.projects)
                .expect("a RollingSync");
        section(APPSET, &input, &decision, &applications, snapshot.now)
    }

    /// The `(x, y)` the box of `step` is drawn at.
    fn at(svg: &str, step: usize) -> (usize, usize) {
        let start = svg
            .find(&format!(r#"data-pipeline-step="{step}""#))
            .unwrap_or_else(|| panic!("step {step} in {svg}"));
        let number = |name: &str| -> usize {
            let from = start + svg[start..].find(name).expect("an attribute") + name.len();
            svg[from..]
                .split('"')
                .next()
                .expect("a value")
                .parse()
                .expect("a number")
        };
        (number(r#"data-x=""#), number(r#"data-y=""#))
    }

    #[test]
    fn a_list_is_a_line_of_boxes_each_linking_to_its_applications() {
        let svg = drawn(None);
        assert_escaped(&svg);
        let (one, two, three) = (at(&svg, 1), at(&svg, 2), at(&svg, 3));
        assert!(one.0 < two.0 && two.0 < three.0 && one.1 == two.1 && two.1 == three.1);
        assert!(
            svg.contains(r#"data-pipeline-step="2" data-state="Progressing""#),
            "{svg}"
        );
        assert!(
            svg.contains(r#"data-pipeline-step="3" data-state="Closed""#),
            "{svg}"
        );
        assert!(svg.contains(">after step 2<"), "{svg}");
        // Step 1 has one Healthy Application; staging is Progressing.
        assert!(
            svg.contains(">1 Healthy<") && svg.contains(">1 Progressing<"),
            "{svg}"
        );
        assert!(svg.contains("?step=2#applications"), "{svg}");
        assert_eq!(svg.matches(r#"class="edge""#).count(), 2);
    }

    #[test]
    fn parallel_steps_are_drawn_side_by_side_with_an_edge_from_and_to_each() {
        let step = |name: &str, env: &str, after: &[&str]| {
            serde_json::json!({"name": name, "dependsOn": after,
                "matchExpressions": [{"key": "env", "operator": "In", "values": [env]}]})
        };
        let svg = drawn(Some(
            serde_json::json!({"type": "RollingSync", "rollingSync": {"steps": [
                step("db", "dev", &[]), step("eu", "staging", &["db"]), step("us", "prod", &["db"]),
                step("fe", "none", &["eu", "us"]),
            ]}}),
        ));
        let (db, eu, us, fe) = (at(&svg, 1), at(&svg, 2), at(&svg, 3), at(&svg, 4));
        assert_eq!(eu.0, us.0, "eu and us in one column");
        assert_ne!(eu.1, us.1, "one above the other");
        assert!(db.0 < eu.0 && eu.0 < fe.0);
        for (from, to) in [(1, 2), (1, 3), (2, 4), (3, 4)] {
            assert!(
                svg.contains(&format!(r#"data-from="{from}" data-to="{to}""#)),
                "{from} → {to}: {svg}"
            );
        }
        assert!(svg.contains("Step 4 · fe"), "{svg}");
        assert!(svg.contains(">no Applications<"), "{svg}");
    }

    #[test]
    fn a_bake_counts_down_and_a_step_waiting_for_approval_carries_the_promote_button() {
        let record = |bake: Option<&str>, waiting: bool| {
            let mut status = flotilla_core::api::application_set_status::RolloutStepStatus {
                step: 1,
                ..Default::default()
            };
            status.bake_started_at = bake.map(|t| {
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(t.parse().expect("a time"))
            });
            if waiting {
                status.step = 2;
                status.waiting_for_approval_since = status.bake_started_at.take();
            }
            status
        };
        let decision = RolloutDecision {
            step_status: vec![
                record(Some("2026-01-01T00:00:30Z"), false),
                record(Some("2026-01-01T00:00:00Z"), true),
            ],
            ..RolloutDecision::default()
        };
        let report = |step: usize, state: StepState| StepReport {
            step,
            name: None,
            depends_on: None,
            state,
            max_update: "100%".to_owned(),
            limit: None,
            in_flight: 0,
            progress_deadline: None,
            bake_time: Some("2m0s".to_owned()),
            analysis: None,
            next: String::new(),
            after_application_sets: Vec::new(),
        };
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().expect("a time");
        assert_eq!(
            detail(
                &report(1, StepState::Baking),
                &decision,
                Some(Duration::from_secs(120)),
                now
            ),
            "bake: 1m30s left"
        );
        let baking = step_box(
            "stack",
            &report(1, StepState::Baking),
            &decision,
            &BTreeMap::new(),
            Some(Duration::from_secs(120)),
            now,
            (0, 0),
        );
        assert!(
            baking.contains(r#"data-until="2026-01-01T00:02:30Z">bake: 1m30s left<"#),
            "{baking}"
        );
        let waiting = step_box(
            "stack",
            &report(2, StepState::WaitingForApproval),
            &decision,
            &BTreeMap::new(),
            None,
            now,
            (0, 0),
        );
        assert!(waiting.contains(">awaiting approval<"), "{waiting}");
        assert!(
            waiting.contains(
                r#"data-action="promote" data-path="/applicationsets/stack/promote?step=2""#
            ),
            "{waiting}"
        );
    }
}
