//! Counters of the API requests a [`super::kube_cluster::KubeCluster`] makes, by purpose, so the
//! cost of a sync (requests per applied object, polls) can be measured.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters; cheap to bump from concurrent tasks.
#[derive(Debug, Default)]
pub struct RequestCounter {
    applies: AtomicU64,
    gets: AtomicU64,
    lists: AtomicU64,
    deletes: AtomicU64,
    discovery: AtomicU64,
}

/// What a request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// A server-side apply (PATCH).
    Apply,
    /// A GET of one object (observing, polling).
    Get,
    /// A LIST (pods of a workload, tracked objects).
    List,
    /// A DELETE.
    Delete,
    /// A discovery request (API group versions and resources).
    Discovery,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// Applies.
    pub applies: u64,
    /// Gets.
    pub gets: u64,
    /// Lists.
    pub lists: u64,
    /// Deletes.
    pub deletes: u64,
    /// Discovery requests.
    pub discovery: u64,
}

impl RequestCounter {
    /// Counts `n` requests of `kind`.
    pub fn add(&self, kind: RequestKind, n: u64) {
        let counter = match kind {
            RequestKind::Apply => &self.applies,
            RequestKind::Get => &self.gets,
            RequestKind::List => &self.lists,
            RequestKind::Delete => &self.deletes,
            RequestKind::Discovery => &self.discovery,
        };
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The counts so far.
    #[must_use]
    pub fn snapshot(&self) -> RequestCounts {
        RequestCounts {
            applies: self.applies.load(Ordering::Relaxed),
            gets: self.gets.load(Ordering::Relaxed),
            lists: self.lists.load(Ordering::Relaxed),
            deletes: self.deletes.load(Ordering::Relaxed),
            discovery: self.discovery.load(Ordering::Relaxed),
        }
    }
}

impl RequestCounts {
    /// Every request counted.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.applies + self.gets + self.lists + self.deletes + self.discovery
    }
}

impl fmt::Display for RequestCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests: {} apply, {} get, {} list, {} delete, {} discovery",
            self.total(),
            self.applies,
            self.gets,
            self.lists,
            self.deletes,
            self.discovery
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind() {
        let counter = RequestCounter::default();
        counter.add(RequestKind::Apply, 3);
        counter.add(RequestKind::Get, 1);
        counter.add(RequestKind::Discovery, 2);
        let counts = counter.snapshot();
        assert_eq!(
            counts,
            RequestCounts {
                applies: 3,
                gets: 1,
                lists: 0,
                deletes: 0,
                discovery: 2
            }
        );
        assert_eq!(
            counts.to_string(),
            "6 requests: 3 apply, 1 get, 0 list, 0 delete, 2 discovery"
        );
    }
}
