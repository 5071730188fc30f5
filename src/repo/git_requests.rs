//! The git requests of this process, counted and timed per repository as Argo CD's repo server
//! counts its own (`argocd_git_request_total`, `argocd_git_request_duration_seconds`):
//! `fetch` for each clone or fetch of a mirror, `ls-remote` for each revision resolved to a
//! commit (Argo CD asks the remote with `git ls-remote`; Flotilla resolves in its mirror,
//! fetched first unless a recent fetch serves).

use std::sync::OnceLock;
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

/// What a git request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitRequest {
    /// A clone or fetch of a mirror.
    Fetch,
    /// A revision resolved to a commit.
    LsRemote,
}

impl GitRequest {
    fn as_str(self) -> &'static str {
        match self {
            Self::Fetch => "fetch",
            Self::LsRemote => "ls-remote",
        }
    }
}

/// The labels of a request.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    repo: String,
    request_type: &'static str,
}

type Durations = Family<RequestLabels, Histogram, fn() -> Histogram>;

/// Argo CD's buckets for git request durations (seconds).
fn histogram() -> Histogram {
    Histogram::new([0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 10.0, 20.0])
}

/// The requests made (registered as `argocd_git_request`).
#[must_use]
pub fn requests() -> Family<RequestLabels, Counter> {
    static REQUESTS: OnceLock<Family<RequestLabels, Counter>> = OnceLock::new();
    REQUESTS.get_or_init(Family::default).clone()
}

/// Their durations (registered as `argocd_git_request_duration_seconds`).
#[must_use]
pub fn durations() -> Durations {
    static DURATIONS: OnceLock<Durations> = OnceLock::new();
    DURATIONS
        .get_or_init(|| Family::new_with_constructor(histogram))
        .clone()
}

/// Runs `request` of `kind` on `repo`, counting and timing it whether it succeeds or not.
pub fn counted<T>(repo: &str, kind: GitRequest, request: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let answer = request();
    let labels = RequestLabels {
        repo: repo.to_owned(),
        request_type: kind.as_str(),
    };
    requests().get_or_create(&labels).inc();
    durations()
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    answer
}
