//! What each listener counts: the connections it serves now and those it refused, by reason —
//! `busy` (every slot stayed taken for the queue wait: answered 503 with `Retry-After`),
//! `dropped` (even the queue was full: closed unanswered) and `header_timeout` (the request's
//! headers never finished). Exported as `flotilla_http_connections` and
//! `flotilla_http_refused_total`, labelled by listener (`metrics`, `web`, `webhook`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListenerLabels {
    listener: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusedLabels {
    listener: String,
    reason: String,
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Every slot stayed taken for the queue wait: answered 503.
    Busy,
    /// The queue was full too: closed unanswered.
    Dropped,
    /// Its request's headers did not arrive within the header-read timeout.
    HeaderTimeout,
}

impl Refusal {
    /// The `reason` label.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::Dropped => "dropped",
            Self::HeaderTimeout => "header_timeout",
        }
    }
}

/// The two families of a process, shared by its listeners.
#[derive(Clone, Debug, Default)]
pub struct ListenerFamilies {
    connections: Family<ListenerLabels, Gauge>,
    refused: Family<RefusedLabels, Counter>,
}

impl ListenerFamilies {
    /// Adds the families to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "flotilla_http_connections",
            "HTTP connections served now, per listener",
            self.connections.clone(),
        );
        registry.register(
            "flotilla_http_refused",
            "HTTP connections refused, per listener and reason (busy, dropped, header_timeout)",
            self.refused.clone(),
        );
    }

    /// The counters of the listener called `listener`.
    #[must_use]
    pub fn listener(&self, listener: &str) -> ListenerCounters {
        ListenerCounters {
            listener: listener.to_owned(),
            open: self
                .connections
                .get_or_create(&ListenerLabels {
                    listener: listener.to_owned(),
                })
                .clone(),
            refused: self.refused.clone(),
        }
    }
}

/// The counters of one listener.
#[derive(Clone, Debug)]
pub struct ListenerCounters {
    listener: String,
    open: Gauge,
    refused: Family<RefusedLabels, Counter>,
}

impl ListenerCounters {
    /// Counters registered nowhere (a listener whose figures nobody reads).
    #[must_use]
    pub fn unregistered(listener: &str) -> Self {
        ListenerFamilies::default().listener(listener)
    }

    /// A connection is served from now on.
    pub fn opened(&self) {
        self.open.inc();
    }

    /// A served connection ended.
    pub fn closed(&self) {
        self.open.dec();
    }

    /// A connection was refused for `why`.
    pub fn refused(&self, why: Refusal) {
        self.refused
            .get_or_create(&RefusedLabels {
                listener: self.listener.clone(),
                reason: why.as_str().to_owned(),
            })
            .inc();
    }

    /// Connections served now.
    #[must_use]
    pub fn open(&self) -> i64 {
        self.open.get()
    }

    /// Connections refused for `why` so far.
    #[must_use]
    pub fn refusals(&self, why: Refusal) -> u64 {
        self.refused
            .get_or_create(&RefusedLabels {
                listener: self.listener.clone(),
                reason: why.as_str().to_owned(),
            })
            .get()
    }
}
