//! The rollouts older than `status.rolloutHistory` keeps ([`MAX_ROLLOUT_HISTORY`]), kept in the
//! ApplicationSet's Events while they last: each rollout that ends is a `RolloutEnded` Event
//! whose note records the whole entry ([`ended_note`], read back by [`from_note`]) and reads
//! well in `kubectl get events`; [`ended`] says which entries a pass ended, [`older`] which of
//! those read back are older than the status's. Pure.
//!
//! [`MAX_ROLLOUT_HISTORY`]: super::rollout_history::MAX_ROLLOUT_HISTORY

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::api::application_set_status::{RolloutHistoryEntry, RolloutHistoryOutcome};

/// The longest note the controller publishes (events.k8s.io takes 1 kB); a longer message is
/// cut.
const MAX_NOTE: usize = 1000;

/// The entries of `new` (the history after a pass) that ended in that pass: ended now, and
/// not ended so (same start, same outcome) in `old`.
#[must_use]
pub fn ended<'a>(
    old: &[RolloutHistoryEntry],
    new: &'a [RolloutHistoryEntry],
) -> Vec<&'a RolloutHistoryEntry> {
    new.iter()
        .filter(|entry| entry.outcome.ended())
        .filter(|entry| {
            !old.iter()
                .any(|o| o.started_at == entry.started_at && o.outcome == entry.outcome)
        })
        .collect()
}

/// `Complete: revisions abc,def (of 7), started T, finished T, step 2 failed, 3 synced back:
/// MESSAGE` — the optional parts only when set, the message cut to fit an Event's note.
#[must_use]
pub fn ended_note(entry: &RolloutHistoryEntry) -> String {
    let mut note = format!(
        "{}: revisions {}",
        entry.outcome.as_str(),
        entry.revisions.join(",")
    );
    if let Some(count) = entry.revisions_count {
        note.push_str(&format!(" (of {count})"));
    }
    note.push_str(&format!(", started {}", entry.started_at.0));
    if let Some(finished) = &entry.finished_at {
        note.push_str(&format!(", finished {}", finished.0));
    }
    if let Some(step) = entry.failed_step {
        note.push_str(&format!(", step {step} failed"));
    }
    if entry.rollbacks > 0 {
        note.push_str(&format!(", {} synced back", entry.rollbacks));
    }
    if !entry.message.is_empty() {
        note.push_str(": ");
        let room = MAX_NOTE.saturating_sub(note.len());
        let mut cut = entry.message.len().min(room);
        while !entry.message.is_char_boundary(cut) {
            cut -= 1;
        }
        note.push_str(&entry.message[..cut]);
    }
    note
}

/// The entry an [`ended_note`] records; `None` for any other text.
#[must_use]
pub fn from_note(note: &str) -> Option<RolloutHistoryEntry> {
    let (outcome, rest) = note.split_once(": revisions ")?;
    let outcome = [
        RolloutHistoryOutcome::Complete,
        RolloutHistoryOutcome::Failed,
        RolloutHistoryOutcome::RolledBack,
        RolloutHistoryOutcome::Superseded,
    ]
    .into_iter()
    .find(|o| o.as_str() == outcome)?;
    let (revisions, rest) = rest.split_once(", started ")?;
    let (revisions, revisions_count) = match revisions.split_once(" (of ") {
        Some((listed, count)) => (listed, Some(count.strip_suffix(')')?.parse().ok()?)),
        None => (revisions, None),
    };
    let (head, message) = rest.split_once(": ").unwrap_or((rest, ""));
    let mut parts = head.split(", ");
    let started_at = Time(parts.next()?.parse::<Timestamp>().ok()?);
    let mut entry = RolloutHistoryEntry {
        revisions: revisions
            .split(',')
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
            .collect(),
        revisions_count,
        started_at,
        finished_at: None,
        outcome,
        message: message.to_owned(),
        failed_step: None,
        rollbacks: 0,
    };
    for part in parts {
        if let Some(finished) = part.strip_prefix("finished ") {
            entry.finished_at = Some(Time(finished.parse().ok()?));
        } else if let Some(step) = part
            .strip_prefix("step ")
            .and_then(|s| s.strip_suffix(" failed"))
        {
            entry.failed_step = Some(step.parse().ok()?);
        } else {
            entry.rollbacks = part.strip_suffix(" synced back")?.parse().ok()?;
        }
    }
    Some(entry)
}

/// The rollouts of `from_events` (read back from the Events, oldest Event first: a later one
/// of the same rollout replaces it) that started before every rollout of `status` (all of them
/// when it is empty), newest first.
#[must_use]
pub fn older(
    status: &[RolloutHistoryEntry],
    from_events: impl IntoIterator<Item = RolloutHistoryEntry>,
) -> Vec<RolloutHistoryEntry> {
    let oldest = status.iter().map(|entry| entry.started_at.0).min();
    let by_start: BTreeMap<Timestamp, RolloutHistoryEntry> = from_events
        .into_iter()
        .filter(|entry| oldest.is_none_or(|oldest| entry.started_at.0 < oldest))
        .map(|entry| (entry.started_at.0, entry))
        .collect();
    by_start.into_values().rev().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(started: &str, outcome: RolloutHistoryOutcome) -> RolloutHistoryEntry {
        RolloutHistoryEntry {
            revisions: vec!["0123456789abcdef0123456789abcdef01234567".into()],
            revisions_count: None,
            started_at: Time(started.parse().unwrap()),
            finished_at: None,
            outcome,
            message: String::new(),
            failed_step: None,
            rollbacks: 0,
        }
    }

    #[test]
    fn a_note_reads_back_as_the_entry_it_records() {
        let plain = RolloutHistoryEntry {
            finished_at: Some(Time("2026-12-05T12:03:00.5Z".parse().unwrap())),
            ..entry("2026-12-05T12:00:00Z", RolloutHistoryOutcome::Complete)
        };
        let full = RolloutHistoryEntry {
            revisions: vec!["v1.2".into(), "abc".into()],
            revisions_count: Some(7),
            failed_step: Some(2),
            rollbacks: 3,
            message: "step 2 (web): web-a Degraded: a, b; c".into(),
            ..plain.clone()
        };
        for recorded in [plain, full] {
            let note = ended_note(&recorded);
            assert_eq!(from_note(&note), Some(recorded), "{note}");
        }
        assert_eq!(
            ended_note(&entry(
                "2026-12-05T12:00:00Z",
                RolloutHistoryOutcome::Superseded
            )),
            "Superseded: revisions 0123456789abcdef0123456789abcdef01234567, started 2026-12-05T12:00:00Z"
        );
        assert_eq!(from_note("step 2 of 3 (web)"), None);
        assert_eq!(
            from_note("Progressing: revisions a, started 2026-12-05T12:00:00Z"),
            None
        );
        let long = RolloutHistoryEntry {
            message: "é".repeat(2000),
            ..entry("2026-12-05T12:00:00Z", RolloutHistoryOutcome::Failed)
        };
        assert!(ended_note(&long).len() <= MAX_NOTE);
    }

    #[test]
    fn a_pass_ends_each_rollout_once_and_the_older_ones_come_newest_first() {
        let running = entry("2026-12-05T12:00:00Z", RolloutHistoryOutcome::Progressing);
        let failed = entry("2026-12-05T12:00:00Z", RolloutHistoryOutcome::Failed);
        let rolled_back = entry("2026-12-05T12:00:00Z", RolloutHistoryOutcome::RolledBack);
        assert_eq!(
            ended(
                std::slice::from_ref(&running),
                std::slice::from_ref(&failed)
            ),
            [&failed]
        );
        assert!(ended(std::slice::from_ref(&failed), std::slice::from_ref(&failed)).is_empty());
        assert_eq!(
            ended(
                std::slice::from_ref(&failed),
                std::slice::from_ref(&rolled_back)
            ),
            [&rolled_back]
        );

        let status = [entry(
            "2026-12-05T12:02:00Z",
            RolloutHistoryOutcome::Complete,
        )];
        let read = [
            entry("2026-12-05T11:00:00Z", RolloutHistoryOutcome::Failed),
            entry("2026-12-05T11:30:00Z", RolloutHistoryOutcome::Complete),
            entry("2026-12-05T11:00:00Z", RolloutHistoryOutcome::RolledBack),
            entry("2026-12-05T12:02:00Z", RolloutHistoryOutcome::Complete),
        ];
        let starts: Vec<(String, &str)> = older(&status, read.clone())
            .iter()
            .map(|e| (e.started_at.0.to_string(), e.outcome.as_str()))
            .collect();
        assert_eq!(
            starts,
            [
                ("2026-12-05T11:30:00Z".to_owned(), "Complete"),
                ("2026-12-05T11:00:00Z".to_owned(), "RolledBack"),
            ]
        );
        assert_eq!(older(&[], read).len(), 3);
    }
}
