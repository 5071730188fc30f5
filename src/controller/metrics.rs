//! Reconcile counters, Applications by sync and health status, sync operations by result, and a
//! tiny `/metrics` endpoint in the Prometheus text format, served with
//! tokio's `TcpListener` (no web framework): one request per connection, then close.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::Future;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Counts Applications by (sync status, health status).
pub type ApplicationCounter = Box<dyn Fn() -> BTreeMap<(String, String), u64> + Send + Sync>;

/// Counters of one controller process.
#[derive(Default)]
pub struct Metrics {
    /// Reconciles by result: `ok` or the failed step's reason.
    reconciles: Mutex<BTreeMap<&'static str, u64>>,
    /// Application reconciles by result.
    application_reconciles: Mutex<BTreeMap<&'static str, u64>>,
    /// Counts the Applications by status when scraped (from the controller's watch), so no
    /// reconcile pays for counting them all.
    applications: Mutex<Option<ApplicationCounter>>,
    /// Sync operations by final phase.
    syncs: Mutex<BTreeMap<String, u64>>,
    leader: AtomicBool,
}

impl Metrics {
    /// Counts a reconcile that succeeded (`None`) or failed with `reason`.
    pub fn reconciled(&self, failure: Option<&'static str>) {
        if let Ok(mut counts) = self.reconciles.lock() {
            *counts.entry(failure.unwrap_or("ok")).or_default() += 1;
        }
    }

    /// Counts an Application reconcile that succeeded (`None`) or failed with `reason`.
    pub fn application_reconciled(&self, failure: Option<&'static str>) {
        if let Ok(mut counts) = self.application_reconciles.lock() {
            *counts.entry(failure.unwrap_or("ok")).or_default() += 1;
        }
    }

    /// Application reconciles counted so far, successful or not.
    #[must_use]
    pub fn application_reconcile_count(&self) -> u64 {
        self.application_reconciles
            .lock()
            .map(|counts| counts.values().sum())
            .unwrap_or_default()
    }

    /// Sets what counts the Applications per (sync, health) status on each scrape.
    pub fn count_applications_with(&self, counter: ApplicationCounter) {
        if let Ok(mut applications) = self.applications.lock() {
            *applications = Some(counter);
        }
    }

    /// Counts a sync operation that ended in `phase` (e.g. `Succeeded`).
    pub fn synced(&self, phase: &str) {
        if let Ok(mut counts) = self.syncs.lock() {
            *counts.entry(phase.to_owned()).or_default() += 1;
        }
    }

    /// Records whether this process holds the Lease.
    pub fn set_leader(&self, leader: bool) {
        self.leader.store(leader, Ordering::Relaxed);
    }

    /// Reconciles counted so far, successful or not.
    #[must_use]
    pub fn reconcile_count(&self) -> u64 {
        self.reconciles
            .lock()
            .map(|counts| counts.values().sum())
            .unwrap_or_default()
    }

    /// The counters in the Prometheus text exposition format.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let by_result = |counts: &Mutex<BTreeMap<&'static str, u64>>| -> Vec<(String, u64)> {
            counts
                .lock()
                .map(|c| {
                    c.iter()
                        .map(|(result, n)| (format!("result=\"{result}\""), *n))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (appsets, applications) = (
            by_result(&self.reconciles),
            by_result(&self.application_reconciles),
        );
        family(
            &mut out,
            ("flotilla_appset_reconciles_total", "counter"),
            "ApplicationSet reconciles by result.",
            appsets,
        );
        family(
            &mut out,
            ("flotilla_application_reconciles_total", "counter"),
            "Application reconciles by result.",
            applications,
        );
        let counts = self
            .applications
            .lock()
            .map(|counter| counter.as_ref().map(|count| count()).unwrap_or_default());
        let statuses = counts.map(|counts| {
            counts
                .iter()
                .map(|((sync, health), n)| (format!("sync=\"{sync}\",health=\"{health}\""), *n))
                .collect()
        });
        family(
            &mut out,
            ("flotilla_applications", "gauge"),
            "Applications by sync and health status.",
            statuses.unwrap_or_default(),
        );
        let syncs = self.syncs.lock().map(|counts| {
            counts
                .iter()
                .map(|(result, n)| (format!("result=\"{result}\""), *n))
                .collect()
        });
        family(
            &mut out,
            ("flotilla_sync_operations_total", "counter"),
            "Sync operations by result.",
            syncs.unwrap_or_default(),
        );
        let _ = write!(
            out,
            "# HELP flotilla_leader Whether this process holds the controller Lease.\n\
             # TYPE flotilla_leader gauge\nflotilla_leader {}\n",
            u8::from(self.leader.load(Ordering::Relaxed))
        );
        out
    }
}

/// Writes one metric family: its help and type lines, then one sample per label set.
fn family(out: &mut String, (name, kind): (&str, &str), help: &str, samples: Vec<(String, u64)>) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{{{labels}}} {value}");
    }
}

/// Answers every request on `listener` with the metrics until `stop` completes.
pub async fn serve(
    listener: TcpListener,
    metrics: std::sync::Arc<Metrics>,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((mut stream, _)) = accepted else {
            continue;
        };
        let metrics = std::sync::Arc::clone(&metrics);
        tokio::spawn(async move {
            // The request itself does not matter: every path answers with the metrics.
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request).await;
            let body = metrics.render();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn serves_counters_in_the_text_format() {
        let metrics = Arc::new(Metrics::default());
        metrics.reconciled(None);
        metrics.reconciled(None);
        metrics.reconciled(Some("RenderError"));
        metrics.set_leader(true);
        metrics.application_reconciled(None);
        metrics.synced("Succeeded");
        metrics.count_applications_with(Box::new(|| {
            BTreeMap::from([(("Synced".to_string(), "Healthy".to_string()), 3)])
        }));
        assert_eq!(metrics.reconcile_count(), 3);
        assert_eq!(metrics.application_reconcile_count(), 1);

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, Arc::clone(&metrics), async {
            let _ = stopped.await;
        }));
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
        assert!(response.contains("flotilla_appset_reconciles_total{result=\"ok\"} 2\n"));
        assert!(response.contains("flotilla_appset_reconciles_total{result=\"RenderError\"} 1\n"));
        assert!(response.contains("flotilla_leader 1\n"));
        assert!(response.contains("flotilla_application_reconciles_total{result=\"ok\"} 1\n"));
        assert!(response.contains("flotilla_applications{sync=\"Synced\",health=\"Healthy\"} 3\n"));
        assert!(response.contains("flotilla_sync_operations_total{result=\"Succeeded\"} 1\n"));
        stop.send(()).unwrap();
        server.await.unwrap();
    }
}
