//! `AllAtOnce` under sync windows: each Application syncs as the controller's Application
//! reconciler lets an automated sync start ([`window_gate`]): at once when no window blocks
//! automated syncs, otherwise when its window opens. Pure: the windows' answers are given.

use jiff::Timestamp;

use flotilla_core::controller::application::decide::Trigger;
use flotilla_core::controller::application::window_gate::{WindowGate, window_gate};
use flotilla_core::project::windows::WindowBlock;

/// What one pass of an `AllAtOnce` simulation does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllAtOncePass {
    /// The Applications (indices) whose automated sync starts now.
    pub triggered: Vec<usize>,
    /// Why some wait (the first waiting Application's window), if any do.
    pub waiting: Option<String>,
    /// When the earliest of their windows opens.
    pub next_opening: Option<Timestamp>,
}

/// The pass for `pending`: the Applications not synced yet, each with what the windows that
/// apply to it say about an automated sync now (`None`: nothing blocks it).
#[must_use]
pub fn all_at_once_pass<'a>(
    pending: impl IntoIterator<Item = (usize, &'a str, Option<WindowBlock>)>,
) -> AllAtOncePass {
    let mut pass = AllAtOncePass::default();
    let mut waiting = Vec::new();
    for (index, name, block) in pending {
        match window_gate(&Trigger::Automated, |_| block.clone()) {
            WindowGate::Proceed => pass.triggered.push(index),
            WindowGate::Wait(block) | WindowGate::Refuse(block) => {
                if let Some(opens) = block.opens_at {
                    pass.next_opening = Some(pass.next_opening.map_or(opens, |t| t.min(opens)));
                }
                waiting.push(format!("{name} waits for {}", block.short()));
            }
        }
    }
    if let Some(first) = waiting.first() {
        pass.waiting = Some(match waiting.len() {
            1 => first.clone(),
            n => format!("{first} (and {} more)", n - 1),
        });
    }
    pass
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(window: &str, opens_at: Option<&str>) -> Option<WindowBlock> {
        Some(WindowBlock {
            window: window.to_owned(),
            summary: String::new(),
            opens_at: opens_at.map(|t| t.parse().unwrap()),
            opens: opens_at.map_or_else(String::new, |_| "Mon 08:00 UTC".to_owned()),
        })
    }

    #[test]
    fn open_applications_sync_and_blocked_ones_wait_for_the_earliest_opening() {
        let cases = [
            (vec![(0, "a", None), (1, "b", None)], vec![0, 1], None, None),
            (
                vec![
                    (0, "a", None),
                    (1, "b", block("freeze", Some("2026-12-07T08:00:00Z"))),
                    (2, "c", block("later", Some("2026-12-08T08:00:00Z"))),
                ],
                vec![0],
                Some("b waits for window 'freeze' (opens Mon 08:00 UTC) (and 1 more)"),
                Some("2026-12-07T08:00:00Z"),
            ),
            (
                vec![(3, "d", block("never", None))],
                vec![],
                Some("d waits for window 'never' (does not open within 28 days)"),
                None,
            ),
        ];
        for (pending, triggered, waiting, opening) in cases {
            let pass = all_at_once_pass(pending);
            assert_eq!(pass.triggered, triggered);
            assert_eq!(pass.waiting.as_deref(), waiting);
            assert_eq!(pass.next_opening, opening.map(|t| t.parse().unwrap()));
        }
    }
}
