//! The timeline picture: a self-contained Gantt chart (SVG, or HTML wrapping the SVG) with one
//! row per Application grouped by step, each bar split into PreSync / waves / PostSync /
//! SyncFail, failures marked in red with a cross, a tooltip per segment listing its objects, and
//! the time ranges during which a sync window held a step shaded, with the window named.
//! A large fleet stays readable: past [`MAX_APP_ROWS`] Application rows, the largest steps
//! collapse into aggregate bars, one per phase and wave with the number of Applications in it
//! (in the HTML, each collapsed step's rows unfold under a `<details>`). A wave has the same
//! colour on every row, and a wave that took no time is still drawn ([`MIN_BAR`] wide).
//! No scripts, fonts or links: it renders offline and can be attached to a pull request.

use std::fmt::Write;

use flotilla_core::html::escape;
use flotilla_core::sync::SyncPhase;

use super::driver::WaitKind;
use super::report::{AppReport, Report, StepTimes, format_seconds};

const LABEL_WIDTH: f64 = 240.0;
const CHART_WIDTH: f64 = 760.0;
const ROW: f64 = 22.0;
const TOP: f64 = 56.0;
const BAR: f64 = 14.0;
/// The most Application rows a chart draws; bigger steps collapse into aggregate bars.
pub const MAX_APP_ROWS: usize = 40;
/// The narrowest bar, so that a wave that took no time is still seen.
pub const MIN_BAR: f64 = 4.0;
const FAILED: &str = "#d62728";
const WINDOW: &str = "#f5c26b";
const WINDOW_EDGE: &str = "#b7791f";
const BAKE: &str = "#9fd8a8";
const BAKE_EDGE: &str = "#2f7d3c";
const APPROVAL: &str = "#c3b5f0";
const APPROVAL_EDGE: &str = "#5a3fb0";
const ANALYSIS: &str = "#9cc9f0";
const ANALYSIS_EDGE: &str = "#1f5f9e";
const ROLLBACK: &str = "#f0a3a3";
const ROLLBACK_EDGE: &str = "#a12b2b";

/// The chart as a standalone SVG document.
#[must_use]
pub fn svg(report: &Report) -> String {
    let groups = groups(report);
    chart(report, &title(report), &rows(&groups, &collapsed(&groups)))
}

/// The rows of `groups`, those marked in `collapse` collapsed.
fn rows<'a>(groups: &[Group<'a>], collapse: &[bool]) -> Vec<Row<'a>> {
    groups
        .iter()
        .zip(collapse)
        .flat_map(|(group, &collapse)| group.rows(collapse))
        .collect()
}

/// The chart in a minimal HTML page with the summary under it; each collapsed step's
/// Applications unfold under a `<details>` below the chart.
#[must_use]
pub fn html(report: &Report) -> String {
    let groups = groups(report);
    let collapse = collapsed(&groups);
    let mut details = String::new();
    for (group, _) in groups.iter().zip(&collapse).filter(|(_, c)| **c) {
        let _ = write!(
            details,
            "<details><summary>{}: each Application</summary>\n{}</details>\n",
            escape(&group.header),
            chart(report, &group.header, &group.rows(false))
        );
    }
    let mut summary = String::new();
    if let Some(condition) = &report.condition {
        let _ = write!(summary, "<p>{}</p>", escape(condition));
    }
    for blocked in &report.blocked {
        let _ = write!(
            summary,
            "<p><b>{}</b>: {}</p>",
            escape(&blocked.application),
            escape(&blocked.reason)
        );
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>{}</title></head>\n<body style=\"font-family: sans-serif\">\n{}{details}{summary}\n</body></html>\n",
        escape(&title(report)),
        chart(report, &title(report), &rows(&groups, &collapse))
    )
}

/// An SVG document titled `heading` drawing `rows` on the report's time axis.
fn chart(report: &Report, heading: &str, rows: &[Row<'_>]) -> String {
    let height = TOP + ROW * rows.len() as f64 + 70.0;
    let width = LABEL_WIDTH + CHART_WIDTH + 130.0;
    let total = report.total_seconds.max(1.0);
    let x = |t: f64| LABEL_WIDTH + t / total * CHART_WIDTH;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="20" font-size="15" font-weight="bold">{}</text>"#,
        escape(heading)
    );
    axis(&mut out, total, height, &x);
    for (i, row) in rows.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        match row {
            Row::Step(text) => {
                let _ = write!(
                    out,
                    r##"<rect x="0" y="{y}" width="{width}" height="{ROW}" fill="#eef1f5"/><text x="10" y="{}" font-weight="bold">{}</text>"##,
                    y + 15.0,
                    escape(text)
                );
            }
            Row::App(app) => app_row(&mut out, report, app, y, &x),
            Row::Aggregate(aggregate) => aggregate_row(&mut out, aggregate, y, &x),
        }
    }
    window_shading(&mut out, report, height, &x);
    legend(&mut out, height - 24.0);
    out.push_str("</svg>\n");
    out
}

/// A translucent band over every row for each stretch a step waited for a sync window (amber),
/// baked (green), waited for approval or another ApplicationSet (violet), was analysed (blue) or
/// rolled back (red), with
/// the rollout's text as its tooltip and label.
fn window_shading(out: &mut String, report: &Report, height: f64, x: &dyn Fn(f64) -> f64) {
    for wait in &report.step_waits {
        let (x0, x1) = (x(wait.start), x(wait.end));
        let (class, fill, edge) = match wait.kind {
            WaitKind::Window => ("window-wait", WINDOW, WINDOW_EDGE),
            WaitKind::Bake => ("bake", BAKE, BAKE_EDGE),
            WaitKind::Approval => ("approval-wait", APPROVAL, APPROVAL_EDGE),
            WaitKind::Analysis => ("analysis", ANALYSIS, ANALYSIS_EDGE),
            WaitKind::Rollback => ("rollback-wait", ROLLBACK, ROLLBACK_EDGE),
            WaitKind::ApplicationSet => ("appset-wait", APPROVAL, APPROVAL_EDGE),
        };
        let text = format!(
            "step {} {} ({} to {})",
            wait.step,
            wait.reason,
            format_seconds(wait.start),
            format_seconds(wait.end)
        );
        let _ = write!(
            out,
            r##"<g class="{class}"><rect x="{x0:.1}" y="{}" width="{:.1}" height="{:.1}" fill="{fill}" fill-opacity="0.35" stroke="{edge}" stroke-dasharray="4 3"><title>{}</title></rect><text x="{:.1}" y="{}" fill="{edge}" font-size="11">{}</text></g>"##,
            TOP - 6.0,
            (x1 - x0).max(1.0),
            height - 50.0 - (TOP - 6.0),
            escape(&text),
            x0 + 3.0,
            height - 54.0,
            escape(&format!(
                "step {} {}",
                wait.step,
                wait.reason.split("; ").next().unwrap_or_default()
            ))
        );
    }
}

enum Row<'a> {
    Step(String),
    App(&'a AppReport),
    Aggregate(Aggregate),
}

/// The Applications of one step (or of none), in report order.
struct Group<'a> {
    header: String,
    apps: Vec<&'a AppReport>,
}

impl<'a> Group<'a> {
    /// Its header, then a row per Application, or (`collapse`) a row per aggregate bar.
    fn rows(&self, collapse: bool) -> Vec<Row<'a>> {
        let mut rows = Vec::new();
        if collapse {
            let failed = self.apps.iter().filter(|a| is_failure(a)).count();
            let never = self.apps.iter().filter(|a| a.segments.is_empty()).count();
            let mut header = format!("{}: {} Applications", self.header, self.apps.len());
            if failed > 0 {
                let _ = write!(header, ", {failed} failed");
            }
            if never > 0 {
                let _ = write!(header, ", {never} never synced");
            }
            rows.push(Row::Step(header));
            rows.extend(aggregates(&self.apps).into_iter().map(Row::Aggregate));
        } else {
            rows.push(Row::Step(self.header.clone()));
            rows.extend(self.apps.iter().map(|app| Row::App(app)));
        }
        rows
    }
}

fn is_failure(app: &AppReport) -> bool {
    !matches!(app.result.as_str(), "Succeeded" | "NotSynced")
}

/// The Applications grouped by step, in report order.
fn groups(report: &Report) -> Vec<Group<'_>> {
    let mut groups: Vec<(Option<usize>, Group<'_>)> = Vec::new();
    for app in &report.applications {
        if groups.last().is_none_or(|(step, _)| *step != app.step) {
            let header = match app.step {
                Some(step) => {
                    let times = report.steps.iter().find(|s| s.step == step);
                    let span = times
                        .and_then(|t| Some((t.start?, t.end?)))
                        .map(|(s, e)| format!(" ({} to {})", format_seconds(s), format_seconds(e)))
                        .unwrap_or_default();
                    let title = times.map_or_else(|| format!("Step {step}"), StepTimes::title);
                    format!("{title}{span}")
                }
                None => "No step (never synced by the rollout)".to_owned(),
            };
            groups.push((
                app.step,
                Group {
                    header,
                    apps: Vec::new(),
                },
            ));
        }
        if let Some((_, group)) = groups.last_mut() {
            group.apps.push(app);
        }
    }
    groups.into_iter().map(|(_, group)| group).collect()
}

/// Which groups collapse: the biggest, until the Application rows left fit in
/// [`MAX_APP_ROWS`] (a group of one never collapses: its row is as small as an aggregate).
fn collapsed(groups: &[Group<'_>]) -> Vec<bool> {
    let mut collapse = vec![false; groups.len()];
    let mut app_rows: usize = groups.iter().map(|g| g.apps.len()).sum();
    let mut by_size: Vec<usize> = (0..groups.len()).collect();
    by_size.sort_by_key(|&i| std::cmp::Reverse(groups[i].apps.len()));
    for i in by_size {
        if app_rows <= MAX_APP_ROWS || groups[i].apps.len() <= 1 {
            break;
        }
        collapse[i] = true;
        app_rows -= groups[i].apps.len();
    }
    collapse
}

/// One phase and wave (failed or not) across the Applications of a collapsed step.
struct Aggregate {
    label: String,
    phase: SyncPhase,
    wave: i32,
    failed: bool,
    /// The first start and the last end.
    start: f64,
    end: f64,
    /// The shortest and longest time one Application spent in it.
    shortest: f64,
    longest: f64,
    count: usize,
}

/// The aggregate bars of `apps`, in order of their first start.
fn aggregates(apps: &[&AppReport]) -> Vec<Aggregate> {
    let mut bars: Vec<Aggregate> = Vec::new();
    for segment in apps.iter().flat_map(|app| &app.segments) {
        let took = segment.end - segment.start;
        let same = bars.iter_mut().find(|bar| {
            bar.label == segment.label && bar.phase == segment.phase && bar.failed == segment.failed
        });
        match same {
            Some(bar) => {
                bar.start = bar.start.min(segment.start);
                bar.end = bar.end.max(segment.end);
                bar.shortest = bar.shortest.min(took);
                bar.longest = bar.longest.max(took);
                bar.count += 1;
            }
            None => bars.push(Aggregate {
                label: segment.label.clone(),
                phase: segment.phase,
                wave: segment.wave,
                failed: segment.failed,
                start: segment.start,
                end: segment.end,
                shortest: took,
                longest: took,
                count: 1,
            }),
        }
    }
    bars.sort_by(|a, b| a.start.total_cmp(&b.start));
    bars
}

fn aggregate_row(out: &mut String, bar: &Aggregate, y: f64, x: &dyn Fn(f64) -> f64) {
    let failed = if bar.failed { " failed" } else { "" };
    let label = format!("{}{failed} ×{}", bar.label, bar.count);
    let (x0, x1) = (x(bar.start), x(bar.end));
    let fill = if bar.failed {
        FAILED
    } else {
        color(bar.phase, bar.wave)
    };
    let _ = write!(
        out,
        r#"<g class="aggregate-row" data-count="{}"><text x="20" y="{}">{}</text><rect class="aggregate" data-phase="{}" data-wave="{}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{BAR}" fill="{fill}" stroke="white" stroke-width="0.5"><title>{}</title></rect>"#,
        bar.count,
        y + 15.0,
        escape(&label),
        bar.phase,
        bar.wave,
        y + (ROW - BAR) / 2.0,
        (x1 - x0).max(MIN_BAR),
        escape(&format!(
            "{}{failed}: {} Applications, {} to {}; each took {} to {}",
            bar.label,
            bar.count,
            format_seconds(bar.start),
            format_seconds(bar.end),
            format_seconds(bar.shortest),
            format_seconds(bar.longest)
        ))
    );
    let count = format!("×{}", bar.count);
    if x1 - x0 > 7.0 * count.len() as f64 + 8.0 {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{}" fill="white" font-size="11">{count}</text>"#,
            x0 + 4.0,
            y + 15.0
        );
    }
    out.push_str("</g>");
}

fn title(report: &Report) -> String {
    format!(
        "{} rollout: {:?} after {}",
        report.strategy,
        report.ending,
        format_seconds(report.total_seconds)
    )
}

fn axis(out: &mut String, total: f64, height: f64, x: &dyn Fn(f64) -> f64) {
    let step = tick(total);
    let mut t = 0.0;
    while t <= total + 1e-9 {
        let px = x(t);
        let _ = write!(
            out,
            r##"<line x1="{px}" y1="{}" x2="{px}" y2="{}" stroke="#dddddd"/><text x="{px}" y="{}" text-anchor="middle" fill="#555555">{}</text>"##,
            TOP - 6.0,
            height - 50.0,
            TOP - 10.0,
            format_seconds(t)
        );
        t += step;
    }
}

/// A round tick interval giving at most about ten ticks.
fn tick(total: f64) -> f64 {
    [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
        10800.0, 21600.0, 43200.0, 86400.0, 172_800.0,
    ]
    .into_iter()
    .find(|step| total / step <= 10.0)
    .unwrap_or(604_800.0)
}

fn app_row(out: &mut String, report: &Report, app: &AppReport, y: f64, x: &dyn Fn(f64) -> f64) {
    let _ = write!(
        out,
        r#"<g class="app-row" data-app="{}"><text x="20" y="{}">{}</text>"#,
        escape(&app.name),
        y + 15.0,
        escape(&app.name)
    );
    if app.segments.is_empty() {
        let reason = report
            .blocked
            .iter()
            .find(|b| b.application == app.name)
            .map_or("", |b| b.reason.as_str());
        let note = format!("{}: {reason}", app.result);
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" fill="#888888" font-style="italic">{}</text>"##,
            LABEL_WIDTH + 4.0,
            y + 15.0,
            escape(&note)
        );
    }
    // Bars narrower than MIN_BAR are drawn last, so that the next wave does not hide them.
    let mut segments: Vec<_> = app.segments.iter().collect();
    segments.sort_by_key(|s| x(s.end) - x(s.start) < MIN_BAR);
    for segment in segments {
        let (x0, x1) = (x(segment.start), x(segment.end));
        let fill = if segment.failed {
            FAILED
        } else {
            color(segment.phase, segment.wave)
        };
        let _ = write!(
            out,
            r#"<rect class="segment" data-phase="{}" data-wave="{}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{BAR}" fill="{fill}" stroke="white" stroke-width="0.5"><title>{}</title></rect>"#,
            segment.phase,
            segment.wave,
            y + (ROW - BAR) / 2.0,
            (x1 - x0).max(MIN_BAR),
            escape(&format!(
                "{} {}: {} to {} ({})\n{}",
                app.name,
                segment.label,
                format_seconds(segment.start),
                format_seconds(segment.end),
                format_seconds(segment.end - segment.start),
                segment.objects.join("\n")
            ))
        );
        if x1 - x0 > 7.0 * segment.label.len() as f64 + 8.0 {
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{}" fill="white" font-size="11">{}</text>"#,
                x0 + 4.0,
                y + 15.0,
                escape(&segment.label)
            );
        }
        if segment.failed {
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{}" fill="{FAILED}" font-weight="bold">✕ {}</text>"#,
                x1 + 4.0,
                y + 15.0,
                escape(&segment.label)
            );
        }
    }
    if let Some((start, end)) = app.rollback {
        let (x0, x1) = (x(start), x(end));
        let _ = write!(
            out,
            r#"<rect class="rollback" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{BAR}" fill="{ROLLBACK}" stroke="{ROLLBACK_EDGE}"><title>{}</title></rect>"#,
            y + (ROW - BAR) / 2.0,
            (x1 - x0).max(MIN_BAR),
            escape(&format!(
                "{} rolled back: {} to {}",
                app.name,
                format_seconds(start),
                format_seconds(end)
            ))
        );
    }
    out.push_str("</g>");
}

/// Hooks by phase; Sync waves alternate two blues by wave number, so neighbouring waves stay
/// apart and a wave has the same colour on every row.
fn color(phase: SyncPhase, wave: i32) -> &'static str {
    match phase {
        SyncPhase::PreSync => "#8e6fc1",
        SyncPhase::PostSync => "#2ca02c",
        SyncPhase::SyncFail => "#ff7f0e",
        SyncPhase::Sync | SyncPhase::PreDelete | SyncPhase::PostDelete
            if wave.rem_euclid(2) == 0 =>
        {
            "#1f77b4"
        }
        SyncPhase::Sync | SyncPhase::PreDelete | SyncPhase::PostDelete => "#6baed6",
    }
}

fn legend(out: &mut String, y: f64) {
    let items: [(&str, &[&str]); 5] = [
        ("PreSync", &[color(SyncPhase::PreSync, 0)]),
        (
            "Sync waves",
            &[color(SyncPhase::Sync, 0), color(SyncPhase::Sync, 1)],
        ),
        ("PostSync", &[color(SyncPhase::PostSync, 0)]),
        ("SyncFail", &[color(SyncPhase::SyncFail, 0)]),
        ("failed", &[FAILED]),
    ];
    let mut px = 20.0;
    for (label, fills) in items {
        for fill in fills {
            let _ = write!(
                out,
                r#"<rect x="{px}" y="{}" width="14" height="12" fill="{fill}"/>"#,
                y - 10.0
            );
            px += 16.0;
        }
        let _ = write!(out, r#"<text x="{}" y="{y}">{label}</text>"#, px + 2.0);
        px += 7.0 * label.len() as f64 + 26.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_picks_round_ticks() {
        assert_eq!(escape(r#"<a & "b">"#), "&lt;a &amp; &quot;b&quot;&gt;");
        assert!((tick(45.0) - 5.0).abs() < f64::EPSILON);
        assert!((tick(600.0) - 60.0).abs() < f64::EPSILON);
        assert!((tick(64.0 * 3600.0) - 43200.0).abs() < f64::EPSILON);
    }
}
