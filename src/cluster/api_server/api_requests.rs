//! The process's counts of what its API servers answered, by server: requests sent (each retry
//! too), refusals with HTTP 429 (API Priority and Fairness, or another limit, throttling the
//! controller) and retries. Kept process-wide, as the clients that count are made in many places;
//! exported as `flotilla_api_requests_total`, `flotilla_api_throttled_total` and
//! `flotilla_api_retries_total`.

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

/// The three families, shared by every client of the process.
struct Families {
    requests: Family<ServerLabels, Counter>,
    throttled: Family<ServerLabels, Counter>,
    retries: Family<ServerLabels, Counter>,
}

fn families() -> &'static Families {
    static FAMILIES: OnceLock<Families> = OnceLock::new();
    FAMILIES.get_or_init(|| Families {
        requests: Family::default(),
        throttled: Family::default(),
        retries: Family::default(),
    })
}

/// Adds the families to `registry` (the controller's `/metrics`).
pub fn register(registry: &mut Registry) {
    let families = families();
    registry.register(
        "flotilla_api_requests",
        "Requests sent to each Kubernetes API server (retries included)",
        families.requests.clone(),
    );
    registry.register(
        "flotilla_api_throttled",
        "Responses HTTP 429 Too Many Requests from each Kubernetes API server",
        families.throttled.clone(),
    );
    registry.register(
        "flotilla_api_retries",
        "Requests sent again after HTTP 429, 503 or 504, per Kubernetes API server",
        families.retries.clone(),
    );
}

/// The counters of one API server.
#[derive(Clone, Debug)]
pub struct ServerCounters {
    requests: Counter,
    throttled: Counter,
    retries: Counter,
}

/// What [`ServerCounters`] counted so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerCounts {
    /// Requests sent.
    pub requests: u64,
    /// Responses 429.
    pub throttled: u64,
    /// Requests sent again.
    pub retries: u64,
}

impl ServerCounters {
    /// The counters of the API server at `server` (its URL).
    #[must_use]
    pub fn for_server(server: &str) -> Self {
        let labels = ServerLabels {
            server: server.to_owned(),
        };
        let families = families();
        Self {
            requests: families.requests.get_or_create(&labels).clone(),
            throttled: families.throttled.get_or_create(&labels).clone(),
            retries: families.retries.get_or_create(&labels).clone(),
        }
    }

    /// Counts a request sent.
    pub fn sent(&self) {
        self.requests.inc();
    }

    /// Counts a response 429.
    pub fn throttled(&self) {
        self.throttled.inc();
    }

    /// Counts a request sent again.
    pub fn retried(&self) {
        self.retries.inc();
    }

    /// The counts so far.
    #[must_use]
    pub fn snapshot(&self) -> ServerCounts {
        ServerCounts {
            requests: self.requests.get(),
            throttled: self.throttled.get(),
            retries: self.retries.get(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_server_and_renders_them() {
        let counters = ServerCounters::for_server("https://counted.test/");
        counters.sent();
        counters.sent();
        counters.throttled();
        counters.retried();
        let again = ServerCounters::for_server("https://counted.test/");
        assert_eq!(
            again.snapshot(),
            ServerCounts {
                requests: 2,
                throttled: 1,
                retries: 1
            },
            "one server's counters are shared by all its clients"
        );
        let mut registry = Registry::default();
        register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "flotilla_api_requests_total{server=\"https://counted.test/\"} 2\n",
            "flotilla_api_throttled_total{server=\"https://counted.test/\"} 1\n",
            "flotilla_api_retries_total{server=\"https://counted.test/\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
    }
}
