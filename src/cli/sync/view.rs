//! The live view of a running sync on stderr: each step as a line, and what the operation waits
//! on — rewritten in place on a terminal, printed only when it changes otherwise.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use crate::sync::execute::SyncEvent;
use flotilla_generators::duration::format_duration;

/// Shows [`SyncEvent`]s on stderr.
pub struct LiveView {
    terminal: bool,
    last_wait: Mutex<Option<String>>,
}

impl LiveView {
    /// A view that rewrites lines in place when stderr is a terminal.
    #[must_use]
    pub fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            last_wait: Mutex::new(None),
        }
    }

    /// Shows one event.
    pub fn show(&self, event: &SyncEvent) {
        let mut last_wait = self
            .last_wait
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut stderr = std::io::stderr().lock();
        let line = match event {
            SyncEvent::Waiting(waiting) => {
                let text = format!("waiting on {waiting}");
                if last_wait.as_deref() == Some(text.as_str()) {
                    return;
                }
                if self.terminal {
                    let _ = write!(stderr, "\r\x1b[2K{text}");
                    let _ = stderr.flush();
                } else {
                    let _ = writeln!(stderr, "{text}");
                }
                *last_wait = Some(text);
                return;
            }
            SyncEvent::Step(step) => step.clone(),
            SyncEvent::Resumed {
                operation_id,
                recorded,
            } => format!("resuming operation {operation_id} ({recorded} results recorded)"),
            SyncEvent::Retrying {
                attempt,
                after,
                reason,
            } => format!(
                "retry {attempt} in {} after: {reason}",
                format_duration(*after)
            ),
            SyncEvent::Finished(phase) => format!("operation {phase:?}"),
        };
        if self.terminal && last_wait.is_some() {
            let _ = write!(stderr, "\r\x1b[2K");
        }
        *last_wait = None;
        let _ = writeln!(stderr, "{line}");
    }
}

impl Default for LiveView {
    fn default() -> Self {
        Self::new()
    }
}
