//! The history of an ApplicationSet's rollouts, from `status.rolloutHistory` (newest first, the
//! last [`MAX_ROLLOUT_HISTORY`]) and, older than those, from its `RolloutEnded` Events while
//! they last ([`older`]): the revisions each brought its Applications to, when it started and
//! ended and how long it took, its outcome, the step that failed and how many Applications
//! were synced back. The rollout's other Events (`RolloutStepStarted`, `RolloutComplete`, …)
//! tell the same story step by step: `kubectl get events`. Pure.

use k8s_openapi::jiff::Timestamp;

use flotilla_core::api::ApplicationSet;
use flotilla_core::api::application_set_status::RolloutHistoryEntry;
use flotilla_core::controller::appset::rollout_history::MAX_ROLLOUT_HISTORY;
use flotilla_core::controller::appset::rollout_history_events::older;
use flotilla_core::html::{badge, escape};
use flotilla_generators::duration::format_duration;

/// The section, `None.` when nothing was recorded yet; `from_events`: the rollouts the
/// ApplicationSet's `RolloutEnded` Events record, oldest Event first.
#[must_use]
pub fn section(
    appset: &ApplicationSet,
    from_events: impl IntoIterator<Item = RolloutHistoryEntry>,
    now: Timestamp,
) -> String {
    let history = appset
        .status
        .as_ref()
        .map_or(&[][..], |status| status.rollout_history.as_slice());
    let older = older(history, from_events);
    let mut out = format!(
        r#"<h2 id="history">History of rollouts</h2><p class="none">Newest first: the last {MAX_ROLLOUT_HISTORY} from status, older ones from the ApplicationSet's Events while they last.</p>"#
    );
    if history.is_empty() && older.is_empty() {
        out.push_str(r#"<p class="none">None.</p>"#);
        return out;
    }
    out.push_str(concat!(
        r#"<table class="history"><thead><tr><th>REVISION</th><th>STARTED</th>"#,
        "<th>FINISHED</th><th>TOOK</th><th>OUTCOME</th><th>FAILED STEP</th>",
        "<th>ROLLBACKS</th><th>MESSAGE</th><th>FROM</th></tr></thead><tbody>"
    ));
    for entry in history {
        out.push_str(&row(entry, "status", now));
    }
    for entry in &older {
        out.push_str(&row(entry, "Events", now));
    }
    out.push_str("</tbody></table>");
    out
}

/// One rollout as a table row.
fn row(entry: &RolloutHistoryEntry, from: &str, now: Timestamp) -> String {
    let started = entry.started_at.0;
    let finished = entry.finished_at.as_ref().map(|t| t.0);
    let took = finished
        .unwrap_or(now)
        .duration_since(started)
        .as_secs()
        .max(0)
        .unsigned_abs();
    let mut revisions: Vec<String> = entry.revisions.iter().map(|r| short(r)).collect();
    if let Some(count) = entry.revisions_count {
        revisions.push(format!(
            "{} more",
            count.saturating_sub(revisions.len() as u64)
        ));
    }
    let outcome = entry.outcome.as_str();
    format!(
        concat!(
            r#"<tr data-outcome="{outcome}" data-from="{from}"><td title="{full}">{revisions}</td>"#,
            "<td>{started}</td><td>{finished}</td><td>{took}</td><td>{badge}</td><td>{step}</td>",
            "<td>{rollbacks}</td><td>{message}</td><td>{from}</td></tr>"
        ),
        outcome = outcome,
        from = from,
        full = escape(&entry.revisions.join(", ")),
        revisions = escape(&revisions.join(", ")),
        started = started,
        finished = finished.map_or_else(|| "-".to_owned(), |t| t.to_string()),
        took = format_duration(std::time::Duration::from_secs(took))
            + if finished.is_none() { " so far" } else { "" },
        badge = badge(outcome),
        step = entry
            .failed_step
            .map_or_else(|| "-".to_owned(), |step| step.to_string()),
        rollbacks = entry.rollbacks,
        message = escape(&entry.message),
    )
}

/// A commit's first 7 characters; any other revision (a tag, a chart version) whole.
fn short(revision: &str) -> String {
    if revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit()) {
        revision[..7].to_owned()
    } else {
        revision.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::test_fixtures::{APPSET, snapshot};

    #[test]
    fn lists_each_rollout_newest_first_escaped() {
        let snapshot = snapshot();
        let mut appset = snapshot.appset(APPSET).expect("the fixture").clone();
        assert!(section(&appset, [], snapshot.now).contains("None."));
        let status = appset.status.as_mut().expect("a status");
        status.rollout_history = serde_json::from_value(serde_json::json!([
            {"revisions": ["<script>v2"], "startedAt": "2026-01-01T00:00:30Z", "outcome": "Progressing"},
            {"revisions": ["0123456789abcdef0123456789abcdef01234567"], "startedAt": "2026-01-01T00:00:00Z",
             "finishedAt": "2026-01-01T00:00:20Z", "outcome": "RolledBack", "failedStep": 2, "rollbacks": 3,
             "message": "<script>step 2 failed"},
        ]))
        .expect("a history");
        let from_events = serde_json::from_value(serde_json::json!([
            {"revisions": ["<script>v0"], "startedAt": "2025-12-31T23:00:00Z",
             "finishedAt": "2025-12-31T23:10:00Z", "outcome": "Complete"},
            {"revisions": ["0123456789abcdef0123456789abcdef01234567"], "startedAt": "2026-01-01T00:00:00Z",
             "outcome": "Failed"}
        ]))
        .expect("entries");
        let from_events: Vec<RolloutHistoryEntry> = from_events;
        let html = section(&appset, from_events, snapshot.now);
        assert!(!html.contains("<script"), "{html}");
        let older = html
            .find(r#"data-from="Events""#)
            .expect("the older rollout, from Events");
        assert!(html.matches(r#"data-from="Events""#).count() == 1, "{html}");
        assert!(html[older..].contains(">10m0s<"), "{html}");
        let first = html.find("Progressing").expect("the running one");
        let second = html.find("RolledBack").expect("the rolled back one");
        assert!(first < second, "{html}");
        assert!(html.contains(">30s so far<"), "{html}");
        assert!(
            html.contains(">0123456<") && html.contains(">20s<"),
            "{html}"
        );
        assert!(html.contains("<td>2</td><td>3</td>"), "{html}");
    }
}
