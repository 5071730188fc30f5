//! Who confirms the pruning of `Prune=confirm` objects while an operation runs, and when a
//! confirmation counts: when it was given at or after the moment it answers (the operation's
//! start for a prune, the deletion for `Delete=confirm`), Argo CD's rule for its
//! `argocd.argoproj.io/deletion-approved` annotation.

use k8s_openapi::jiff::Timestamp;
use tokio::sync::watch;

/// The source of a pruning confirmation for one operation.
#[derive(Debug, Clone, Copy)]
pub enum PruneConfirmation<'a> {
    /// Confirmed up front (`flotilla sync --confirm-prune`).
    Given,
    /// Confirmed once the time this reports (the controller: the Application's
    /// `argocd.argoproj.io/deletion-approved` annotation; `flotilla simulate`: never) is at or
    /// after the operation's start; the operation waits for it, within its timeout.
    Watched(&'a watch::Receiver<Option<Timestamp>>),
    /// Nobody can confirm while the operation runs (`flotilla sync` without `--confirm-prune`):
    /// the operation stops there, left Running with the objects named in its message, and a
    /// later run with a confirmation resumes it.
    Absent,
}

impl PruneConfirmation<'_> {
    /// Whether the pruning of an operation that started at `started` is confirmed now.
    #[must_use]
    pub fn confirmed(&self, started: Option<Timestamp>) -> bool {
        match self {
            Self::Given => true,
            Self::Watched(approved) => started.is_some_and(|started| {
                let approved = *approved.borrow();
                approved_since(approved, started)
            }),
            Self::Absent => false,
        }
    }
}

/// Whether an approval given at `approved` covers what happened at `since`.
#[must_use]
pub fn approved_since(approved: Option<Timestamp>, since: Timestamp) -> bool {
    approved.is_some_and(|approved| approved >= since)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_counts_from_the_moment_it_answers() {
        let at = |seconds: i64| Timestamp::from_second(seconds).unwrap();
        let cases = [
            (None, 10, false),
            (Some(9), 10, false),
            (Some(10), 10, true),
            (Some(11), 10, true),
        ];
        for (approved, since, expected) in cases {
            assert_eq!(
                approved_since(approved.map(at), at(since)),
                expected,
                "{approved:?} since {since}"
            );
        }
        let (_sender, watched) = watch::channel(Some(at(12)));
        assert!(PruneConfirmation::Watched(&watched).confirmed(Some(at(11))));
        assert!(!PruneConfirmation::Watched(&watched).confirmed(Some(at(13))));
        assert!(!PruneConfirmation::Watched(&watched).confirmed(None));
        assert!(PruneConfirmation::Given.confirmed(None));
        assert!(!PruneConfirmation::Absent.confirmed(Some(at(0))));
    }
}
