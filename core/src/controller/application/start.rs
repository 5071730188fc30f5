//! Starting a sync, decided: from what triggered it, the revision it asks for, the operation
//! whose sync options its settings read, who started it, the operation the status records as
//! Running, the request to consume, and the Event that announces it. The reconciler carries the
//! decision out in this order: a resumed operation whose request was never removed has it
//! removed; the status write that follows carries the Running operation with the compare that
//! decided the sync; a requested operation's state is stored, and only then its request removed
//! from `spec.operation` (a restart in between resumes the stored operation and consumes the
//! request, see [`super::decide::request_started`]).

use crate::api::application::{InitiatedBy, Operation, SyncOperation};
use crate::controller::event_reason::EventReason;

use super::decide::{Trigger, request_started};

/// What starting a sync does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncStart<'a> {
    /// The revision the sync asks for (a resumed operation's, a request's, else the compared
    /// one); empty for the compared manifests.
    pub revision: String,
    /// The requested or resumed operation, whose sync options the settings read.
    pub operation: Option<&'a SyncOperation>,
    /// Who started it.
    pub initiated_by: InitiatedBy,
    /// The request it consumes: its operation is stored, then `spec.operation` removed.
    pub requested: Option<&'a Operation>,
    /// How many self-heals in a row this is (0 for other syncs).
    pub self_heal_attempts_count: u32,
    /// Whether an interrupted operation continues (nothing new is recorded).
    pub resume: bool,
}

/// The start of the sync `trigger` asks for; `resumed` is `status.operation` (the operation an
/// interrupted one was started with) and `compared` the revision of the compared manifests.
#[must_use]
pub fn sync_start<'a>(
    trigger: &'a Trigger,
    resumed: Option<&'a Operation>,
    compared: Option<&str>,
) -> SyncStart<'a> {
    let automated = InitiatedBy {
        username: String::new(),
        automated: true,
    };
    let (revision, operation, initiated_by, requested) = match trigger {
        Trigger::Resume { revision } => (
            revision.clone().unwrap_or_default(),
            resumed.map(|op| &op.sync),
            resumed.map_or(automated, |op| op.initiated_by.clone()),
            None,
        ),
        Trigger::Requested(operation) => (
            operation.sync.requested_revision(),
            Some(&operation.sync),
            operation.initiated_by.clone(),
            Some(operation),
        ),
        Trigger::Automated | Trigger::SelfHeal { .. } => (
            compared.unwrap_or_default().to_owned(),
            None,
            automated,
            None,
        ),
    };
    SyncStart {
        revision,
        operation,
        initiated_by,
        requested,
        self_heal_attempts_count: match trigger {
            Trigger::SelfHeal { attempts } => *attempts,
            _ => 0,
        },
        resume: matches!(trigger, Trigger::Resume { .. }),
    }
}

impl SyncStart<'_> {
    /// The operation the status records as Running for a new start at `revision` (the
    /// manifests' to sync), with the settings' `prune` and `allow_empty`; none for a resume.
    #[must_use]
    pub fn running(&self, prune: bool, allow_empty: bool, revision: &str) -> Option<Operation> {
        if self.resume {
            return None;
        }
        let mut running = Operation {
            sync: SyncOperation {
                prune,
                sync_options: self
                    .requested
                    .map(|op| op.sync.sync_options.clone())
                    .unwrap_or_default(),
                allow_empty,
                self_heal_attempts_count: self.self_heal_attempts_count,
                ..SyncOperation::default()
            },
            initiated_by: self.initiated_by.clone(),
        };
        running.sync.set_revision(revision);
        Some(running)
    }

    /// The request a resumed operation was started by and that `spec.operation` still holds
    /// (`request`): the controller stopped before removing it, so it is removed now rather
    /// than run a second time.
    #[must_use]
    pub fn stale_request<'r>(
        &self,
        request: Option<&'r Operation>,
        resumed: Option<&Operation>,
    ) -> Option<&'r Operation> {
        let (request, running) = (request?, resumed?);
        (self.resume && request_started(request, running)).then_some(request)
    }

    /// The Event announcing the sync of `revision` (none for a local directory).
    #[must_use]
    pub fn event(&self, revision: Option<&str>) -> (EventReason, String) {
        if self.resume {
            return (
                EventReason::SyncResumed,
                "resuming the interrupted operation".to_owned(),
            );
        }
        (
            EventReason::SyncStarted,
            format!(
                "sync to {} started by {}",
                revision.unwrap_or("the local directory"),
                initiator(&self.initiated_by)
            ),
        )
    }
}

/// `rollout/stack`, `alice`, or `automated sync`.
#[must_use]
pub fn initiator(initiated_by: &InitiatedBy) -> &str {
    if initiated_by.username.is_empty() {
        "automated sync"
    } else {
        &initiated_by.username
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(user: &str, revision: &str, options: &[&str]) -> Operation {
        Operation {
            sync: SyncOperation {
                revision: revision.to_owned(),
                sync_options: options.iter().map(|o| (*o).to_owned()).collect(),
                ..SyncOperation::default()
            },
            initiated_by: InitiatedBy {
                username: user.to_owned(),
                automated: false,
            },
        }
    }

    #[test]
    fn an_automated_sync_starts_at_the_compared_revision_as_the_automated_initiator() {
        let trigger = Trigger::Automated;
        let start = sync_start(&trigger, None, Some("abc"));
        assert_eq!(start.revision, "abc");
        assert!(start.initiated_by.automated && start.requested.is_none() && !start.resume);
        let running = start.running(true, false, "abc").unwrap();
        assert!(running.sync.prune);
        assert_eq!(running.sync.revision, "abc");
        assert_eq!(
            start.event(Some("abc")),
            (
                EventReason::SyncStarted,
                "sync to abc started by automated sync".to_owned()
            )
        );
    }

    #[test]
    fn a_self_heal_counts_its_attempts_in_the_running_operation() {
        let trigger = Trigger::SelfHeal { attempts: 3 };
        let start = sync_start(&trigger, None, None);
        assert_eq!(start.revision, "");
        let running = start.running(false, false, "").unwrap();
        assert_eq!(running.sync.self_heal_attempts_count, 3);
        assert_eq!(
            start.event(None).1,
            "sync to the local directory started by automated sync"
        );
    }

    #[test]
    fn a_request_is_consumed_with_its_revision_options_and_initiator() {
        let trigger = Trigger::Requested(request("alice", "v2", &["Replace=true"]));
        let start = sync_start(&trigger, None, Some("abc"));
        assert_eq!(start.revision, "v2");
        assert_eq!(
            start.requested.map(|r| r.initiated_by.username.as_str()),
            Some("alice")
        );
        assert_eq!(start.operation.map(|op| op.revision.as_str()), Some("v2"));
        let running = start.running(false, true, "0123").unwrap();
        assert_eq!(running.sync.sync_options, ["Replace=true"]);
        assert!(running.sync.allow_empty);
        assert_eq!(running.initiated_by.username, "alice");
        assert_eq!(start.event(Some("0123")).1, "sync to 0123 started by alice");
    }

    #[test]
    fn a_resume_records_nothing_new_and_consumes_only_the_request_that_started_it() {
        let started = request("alice", "", &[]);
        let trigger = Trigger::Resume {
            revision: Some("0123".to_owned()),
        };
        let start = sync_start(&trigger, Some(&started), Some("abc"));
        assert_eq!(start.revision, "0123");
        assert_eq!(start.initiated_by.username, "alice");
        assert!(start.running(true, false, "0123").is_none());
        assert_eq!(start.event(None).0, EventReason::SyncResumed);
        let same = request("alice", "", &[]);
        let newer = request("bob", "", &[]);
        assert_eq!(
            start.stale_request(Some(&same), Some(&started)),
            Some(&same)
        );
        assert_eq!(start.stale_request(Some(&newer), Some(&started)), None);
        let fresh = sync_start(&Trigger::Automated, None, None);
        assert_eq!(fresh.stale_request(Some(&same), Some(&started)), None);
    }
}
