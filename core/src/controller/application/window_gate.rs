//! What sync windows make of a sync the Application reconciler would start: an interrupted
//! operation resumes (syncs already started finish); an automated sync, or one a rollout
//! requested, waits while a window blocks automated syncs; a sync a person requested is refused
//! while a window blocks manual syncs (`manualSync` lets it through). Pure: the windows'
//! answer is an argument.

use super::decide::Trigger;
use crate::project::windows::{SyncKind, WindowBlock};

/// The windows' answer for one trigger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowGate {
    /// Sync now.
    Proceed,
    /// Do not start it yet; ask again when the window opens (a requested operation is kept).
    Wait(WindowBlock),
    /// A requested manual sync that windows forbid: it fails at once, naming the window.
    Refuse(WindowBlock),
}

/// Whether `trigger` may start now; `block` tells what the windows that apply to the
/// Application say about a sync of a kind at this instant.
#[must_use]
pub fn window_gate(
    trigger: &Trigger,
    block: impl Fn(SyncKind) -> Option<WindowBlock>,
) -> WindowGate {
    match trigger {
        Trigger::Resume { .. } => WindowGate::Proceed,
        Trigger::Automated | Trigger::SelfHeal { .. } => {
            block(SyncKind::Automated).map_or(WindowGate::Proceed, WindowGate::Wait)
        }
        Trigger::Requested(operation) if operation.initiated_by.automated => {
            block(SyncKind::Automated).map_or(WindowGate::Proceed, WindowGate::Wait)
        }
        Trigger::Requested(_) => {
            block(SyncKind::Manual).map_or(WindowGate::Proceed, WindowGate::Refuse)
        }
    }
}

/// The message of a manual sync refused by `block`.
#[must_use]
pub fn refused_message(block: &WindowBlock) -> String {
    format!("sync refused: blocked by {}", block.text())
}

/// The `SyncError` condition of an automated sync that waits for `block`.
#[must_use]
pub fn waiting_message(block: &WindowBlock) -> String {
    format!("automated sync waits for {}", block.text())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::application::{InitiatedBy, Operation, SyncOperation};

    fn block(window: &str) -> WindowBlock {
        WindowBlock {
            window: window.to_owned(),
            summary: "deny * * * * * for 1h, UTC".to_owned(),
            opens_at: None,
            opens: "Mon 08:00 UTC".to_owned(),
        }
    }

    fn requested(automated: bool) -> Trigger {
        Trigger::Requested(Operation {
            sync: SyncOperation::default(),
            initiated_by: InitiatedBy {
                username: if automated { "rollout/stack" } else { "alice" }.to_owned(),
                automated,
            },
        })
    }

    #[test]
    fn automated_syncs_wait_manual_ones_are_refused_started_ones_finish() {
        // Windows that block automated syncs only (a deny window with manualSync).
        let automated_only = |kind| (kind == SyncKind::Automated).then(|| block("freeze"));
        let both = |_| Some(block("freeze"));
        let resume = Trigger::Resume { revision: None };
        let cases = [
            (
                &resume,
                both as fn(SyncKind) -> Option<WindowBlock>,
                WindowGate::Proceed,
            ),
            (
                &Trigger::Automated,
                automated_only,
                WindowGate::Wait(block("freeze")),
            ),
            (
                &requested(true),
                automated_only,
                WindowGate::Wait(block("freeze")),
            ),
            (&requested(false), automated_only, WindowGate::Proceed),
            (&requested(false), both, WindowGate::Refuse(block("freeze"))),
            (&Trigger::Automated, |_| None, WindowGate::Proceed),
        ];
        for (index, (trigger, windows, expected)) in cases.into_iter().enumerate() {
            assert_eq!(window_gate(trigger, windows), expected, "case {index}");
        }
        assert_eq!(
            refused_message(&block("freeze")),
            "sync refused: blocked by window 'freeze' (deny * * * * * for 1h, UTC) — opens Mon 08:00 UTC"
        );
    }
}
