//! Live updates as server-sent events: the content of one page, sent when a viewer connects
//! and again whenever the watches change it, with a comment in between often enough to keep
//! the connection under the server's idle timeout.

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use hyper::body::Bytes;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::{Instant, sleep_until};

use super::routes::{not_found, page};
use super::watch::FleetWatch;

/// How often an unchanged page sends a comment (below the idle timeout of
/// [`crate::httpd::server::Limits`]).
pub const HEARTBEAT: Duration = Duration::from_secs(15);

/// The name of the event carrying a page's new content.
pub const PAGE_EVENT: &str = "page";

/// One event named `name` whose data is `data` (one `data:` line per line of it).
#[must_use]
pub fn event(name: &str, data: &str) -> String {
    let mut out = format!("event: {name}\n");
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out
}

/// The content of the page at `path` and `query` as the watch has it now.
fn content(watch: &FleetWatch, path: &str, query: Option<&str>) -> String {
    page(path, query, &watch.snapshot())
        .unwrap_or_else(not_found)
        .main
}

/// Where one viewer's stream stands.
struct Viewer {
    watch: Arc<FleetWatch>,
    changes: Receiver<()>,
    path: String,
    query: Option<String>,
    /// The content sent last (`None` before the first event).
    sent: Option<String>,
    /// When a heartbeat is due if nothing is sent before.
    heartbeat: Instant,
}

impl Viewer {
    /// The next chunk to send: the page when it changed, else a heartbeat; `None` once the
    /// watches are gone.
    async fn next(mut self) -> Option<(Bytes, Self)> {
        loop {
            let current = content(&self.watch, &self.path, self.query.as_deref());
            if self.sent.as_ref() != Some(&current) {
                let chunk = Bytes::from(event(PAGE_EVENT, &current));
                self.sent = Some(current);
                self.heartbeat = Instant::now() + HEARTBEAT;
                return Some((chunk, self));
            }
            tokio::select! {
                changed = self.changes.recv() => match changed {
                    Ok(()) | Err(RecvError::Lagged(_)) => self.drain(),
                    Err(RecvError::Closed) => return None,
                },
                () = sleep_until(self.heartbeat) => {
                    self.heartbeat = Instant::now() + HEARTBEAT;
                    return Some((Bytes::from_static(b": unchanged\n\n"), self));
                }
            }
        }
    }

    /// Takes the ticks already queued: one render covers them.
    fn drain(&mut self) {
        while !matches!(
            self.changes.try_recv(),
            Err(TryRecvError::Empty | TryRecvError::Closed)
        ) {}
    }
}

/// The events of the page at `path` and `query` for one viewer.
pub fn page_events(
    watch: Arc<FleetWatch>,
    path: String,
    query: Option<String>,
) -> impl Stream<Item = Bytes> + Send + 'static {
    let viewer = Viewer {
        changes: watch.subscribe(),
        watch,
        path,
        query,
        sent: None,
        heartbeat: Instant::now() + HEARTBEAT,
    };
    futures::stream::unfold(viewer, Viewer::next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_of_the_content_is_a_data_line() {
        assert_eq!(
            event("page", "<h1>a</h1>\n<p>b</p>"),
            "event: page\ndata: <h1>a</h1>\ndata: <p>b</p>\n\n"
        );
    }
}
