//! Which Applications a sharded replica may act on now, as its member Lease loop
//! ([`super::member_lease`]) last established it: a set of slots and until when. Shared with the
//! Application controllers, which reconcile only the Applications of those slots and are
//! restarted when the set changes, and with the [`WritePermit`] of their clients, which refuses
//! every write once the deadline passed and every write to an Application outside the slots
//! (its spec, status or deletion), whatever task sends it. A replica that gives slots away
//! narrows the set first, waits until the controllers started with the wider set have stopped
//! ([`Ownership::quiesced`]), and only then writes its smaller claim.

use std::time::Instant;

use tokio::sync::watch;

use super::leadership::WritePermit;
use flotilla_core::controller::shard::slots::{SlotSet, slot_of};

/// The slots acted on, until when, and a generation counting changes of the slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Acting {
    slots: SlotSet,
    until: Option<Instant>,
    generation: u64,
}

/// A sharded replica's slots, set by the member Lease loop.
#[derive(Clone, Debug)]
pub struct Ownership {
    acting: watch::Sender<Acting>,
    /// The oldest generation whose controllers may still run (reported by the runner).
    running: watch::Sender<u64>,
}

impl Default for Ownership {
    fn default() -> Self {
        Self {
            acting: watch::Sender::new(Acting {
                slots: SlotSet::empty(),
                until: None,
                generation: 0,
            }),
            running: watch::Sender::new(0),
        }
    }
}

/// A write refused because this replica does not own the Application, or is no member now.
#[derive(Debug, thiserror::Error)]
pub enum NotOwner {
    #[error("not written: this replica's member Lease was not renewed by its renew deadline")]
    NotMember,
    #[error("not written: Application {namespace}/{name} belongs to another replica")]
    Application { namespace: String, name: String },
}

impl Ownership {
    /// Records the slots acted on until `until`; returns the generation, new when the slots
    /// changed, acting started or ended, or the last deadline had passed (acting was
    /// interrupted: the controllers must start again).
    pub fn set(&self, slots: SlotSet, until: Option<Instant>) -> u64 {
        let mut generation = 0;
        self.acting.send_modify(|acting| {
            let lapsed = acting.until.is_some_and(|until| until <= Instant::now());
            if lapsed || slots != acting.slots || acting.until.is_some() != until.is_some() {
                acting.generation += 1;
            }
            acting.slots = slots;
            acting.until = until;
            generation = acting.generation;
        });
        generation
    }

    /// The slots acted on now (empty once the deadline passed) and their generation.
    #[must_use]
    pub fn current(&self) -> (SlotSet, u64) {
        let acting = *self.acting.borrow();
        let slots = match acting.until {
            Some(until) if Instant::now() < until => acting.slots,
            _ => SlotSet::empty(),
        };
        (slots, acting.generation)
    }

    /// The slots the running controllers may write: those acted on now, provided the
    /// controllers were started in the current generation (none between a change and their
    /// restart, so a reconcile started before a lapse writes nothing after it).
    fn writable(&self) -> SlotSet {
        let (slots, generation) = self.current();
        if *self.running.borrow() == generation {
            slots
        } else {
            SlotSet::empty()
        }
    }

    /// Whether Application `namespace/name` is this replica's now.
    #[must_use]
    pub fn owns(&self, namespace: &str, name: &str) -> bool {
        self.writable().contains(slot_of(namespace, name))
    }

    /// Completes when the slots change from generation `generation`, or the deadline passes.
    pub async fn changed_from(&self, generation: u64) {
        let mut acting = self.acting.subscribe();
        loop {
            let now = *acting.borrow_and_update();
            if now.generation != generation {
                return;
            }
            match now.until {
                Some(until) if Instant::now() < until => {
                    tokio::select! {
                        () = tokio::time::sleep_until(until.into()) => return,
                        _ = acting.changed() => {}
                    }
                }
                _ => {
                    // Not acting: only a new generation matters. The sender lives in `self`.
                    if acting.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }

    /// The runner reports that no controller started before `generation` runs any more (and
    /// those it starts now run in `generation`).
    pub fn stopped_before(&self, generation: u64) {
        self.running.send_replace(generation);
    }

    /// Completes once no controller started before `generation` runs.
    pub async fn quiesced(&self, generation: u64) {
        let mut running = self.running.subscribe();
        while *running.borrow_and_update() < generation {
            if running.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

impl WritePermit for Ownership {
    fn permits(&self, path: &str) -> Result<(), tower::BoxError> {
        let slots = self.writable();
        if slots.is_empty() {
            return Err(NotOwner::NotMember.into());
        }
        match application_of_path(path) {
            Some((namespace, name)) if !slots.contains(slot_of(namespace, name)) => {
                Err(NotOwner::Application {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                }
                .into())
            }
            _ => Ok(()),
        }
    }
}

/// The Application an API path names
/// (`/apis/<group>/<version>/namespaces/<ns>/applications/<name>[/status]`), of any group.
fn application_of_path(path: &str) -> Option<(&str, &str)> {
    let mut parts = path.trim_start_matches('/').split('/');
    let (apis, _group, _version, namespaces, namespace, resource, name) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    (apis == "apis" && namespaces == "namespaces" && resource == "applications")
        .then_some((namespace, name))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use flotilla_core::controller::shard::slots::slot_of;

    const WEB: &str = "/apis/flotilla.dev/v1alpha1/namespaces/fleet/applications/web/status";
    const API: &str = "/apis/flotilla.dev/v1alpha1/namespaces/fleet/applications/api";

    #[test]
    fn writes_pass_only_for_owned_applications_while_a_member() {
        let ownership = Ownership::default();
        let config_map = "/api/v1/namespaces/shop/configmaps/web";
        assert!(ownership.permits(config_map).is_err(), "not a member yet");
        let web: SlotSet = [slot_of("fleet", "web")].into_iter().collect();
        assert_ne!(slot_of("fleet", "web"), slot_of("fleet", "api"));
        let later = Instant::now() + Duration::from_secs(60);
        let first = ownership.set(web, Some(later));
        assert!(
            ownership.permits(WEB).is_err(),
            "the controllers of this generation have not started"
        );
        ownership.stopped_before(first);
        assert!(ownership.permits(WEB).is_ok());
        assert!(ownership.permits(config_map).is_ok());
        assert!(
            ownership
                .permits("/apis/flotilla.dev/v1alpha1/namespaces/fleet/applications")
                .is_ok()
        );
        let refused = ownership.permits(API).unwrap_err().to_string();
        assert_eq!(
            refused,
            "not written: Application fleet/api belongs to another replica"
        );
        assert!(ownership.owns("fleet", "web") && !ownership.owns("fleet", "api"));
        // A renewal keeps the generation; a change of slots or the end of acting moves it.
        assert_eq!(ownership.set(web, Some(later)), first);
        assert_eq!(ownership.set(SlotSet::all(), Some(later)), first + 1);
        assert!(
            ownership.permits(WEB).is_err(),
            "not restarted since the change"
        );
        assert_eq!(ownership.set(SlotSet::all(), None), first + 2);
        assert!(ownership.permits(config_map).is_err());
        let lapsing = ownership.set(SlotSet::all(), Some(Instant::now()));
        ownership.stopped_before(lapsing);
        assert!(ownership.permits(WEB).is_err(), "the deadline passed");
        // Renewed after the lapse: a new generation, closed until the controllers restart.
        let renewed = ownership.set(SlotSet::all(), Some(later));
        assert_eq!(renewed, lapsing + 1);
        assert!(ownership.permits(WEB).is_err());
        ownership.stopped_before(renewed);
        assert!(ownership.permits(WEB).is_ok());
    }

    #[tokio::test]
    async fn changes_and_quiescence_are_announced() {
        let ownership = Ownership::default();
        let generation = ownership.set(
            SlotSet::all(),
            Some(Instant::now() + Duration::from_millis(50)),
        );
        // The deadline passing ends the generation's run.
        ownership.changed_from(generation).await;
        let waiting = ownership.clone();
        let quiesced = tokio::spawn(async move { waiting.quiesced(generation + 1).await });
        let next = ownership.set(SlotSet::empty(), None);
        ownership.changed_from(generation).await;
        ownership.stopped_before(next);
        quiesced.await.unwrap();
    }
}
