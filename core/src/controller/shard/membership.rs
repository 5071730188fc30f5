//! The membership protocol of sharded replicas, as a pure step function of the member Leases
//! read and a monotonic clock (flotilla's `controller::member_lease` reads and writes them).
//!
//! Every replica holds a Lease of its own in the control namespace (holder: its identity), and
//! writes in it the slots it *claims* (see [`super::slots`]). Every retry period it lists the
//! member Leases, then replaces its own with the `resourceVersion` it listed (create when there
//! is none), which renews it. The rules:
//! - **Liveness, without comparing clocks.** A member is live until its Lease has been seen
//!   unchanged, in listings that all succeeded, for a whole Lease duration on the reader's own
//!   clock (as [`super::super::leader::Elector`] judges the leader). An expired member's Lease
//!   is deleted with its `resourceVersion` as precondition: only the record seen unchanged goes.
//! - **Who should own what.** The slots are assigned over the live members by
//!   [`super::assignment::assign`]; a replica's *target* is its share.
//! - **Claiming.** A replica claims the slots of its target that no other member's Lease claims,
//!   expired ones included until they are deleted. It *acts* on a slot (reconciles and writes its
//!   Applications) only once a listing, made after the write that claimed it, shows its own Lease
//!   claiming it and no other Lease claiming it. Two replicas that want the same slot (their
//!   views of who is live may differ for a moment) cannot both act: each wrote its claim before
//!   its confirming listing, and the listing made later sees the other's claim (a Lease is
//!   deleted only after its holder stopped, and a holder whose Lease was deleted cannot renew it:
//!   its replace fails on the precondition).
//! - **Acting, and stopping.** A replica acts on its slots only until its *renew deadline*: the
//!   start of the round whose write last succeeded, plus [`LeaseTiming::renew_deadline`]. Its
//!   Lease can be found expired only a Lease duration after a listing that followed that write,
//!   so it stopped `duration − renew_deadline` before anyone may delete its Lease and claim its
//!   slots.
//! - **Handing over.** A slot that leaves a replica's target is dropped from what it acts on at
//!   once ([`Round::stop`]); the shell stops the work on those slots (and lets what it had sent
//!   settle) before the write that removes them from its claim. Only then can the new owner
//!   claim them. So an Application changes owner only after its old owner stopped writing it:
//!   when the old owner is alive, by its own release; when it is gone, by its Lease expiring.
//!   A replica that stops gracefully deletes its own Lease after stopping, and is replaced at
//!   once.

use std::collections::BTreeMap;
use std::time::Instant;

use k8s_openapi::api::coordination::v1::LeaseSpec;

use super::assignment::assign;
use super::slots::SlotSet;
use crate::controller::leader::LeaseTiming;

/// A member's Lease as listed.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberLease {
    /// The member's identity (the Lease's holder).
    pub identity: String,
    /// The Lease's name.
    pub name: String,
    /// Its `resourceVersion`, the precondition of a delete or replace.
    pub version: String,
    /// Its spec: a renewal changes it.
    pub spec: LeaseSpec,
    /// The slots it claims (an unreadable claim counts as every slot).
    pub claims: SlotSet,
}

/// What a replica does after a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    /// The live members, this replica included, sorted.
    pub members: Vec<String>,
    /// The Leases (name, resourceVersion) of expired members, to delete with that precondition.
    pub expired: Vec<(String, String)>,
    /// Slots this replica no longer acts on: their work must stop before [`Self::claims`] is
    /// written.
    pub stop: SlotSet,
    /// The slots to write in its own Lease.
    pub claims: SlotSet,
    /// Whether the claim holds slots neither acted on nor confirmed by this listing (list again
    /// soon to confirm them).
    pub pending: bool,
}

/// One replica's view of the membership between two listings.
#[derive(Clone, Debug)]
pub struct Membership {
    identity: String,
    timing: LeaseTiming,
    /// Each other member's record and since when it has been seen unchanged.
    observed: BTreeMap<String, (LeaseSpec, SlotSet, Instant)>,
    acting: SlotSet,
    acting_until: Option<Instant>,
    /// Slots the last listing confirmed: acted on once the write of the same round succeeds.
    confirmed: SlotSet,
}

impl Membership {
    /// A replica named `identity` that has read nothing and acts on nothing.
    #[must_use]
    pub fn new(identity: impl Into<String>, timing: LeaseTiming) -> Self {
        Self {
            identity: identity.into(),
            timing,
            observed: BTreeMap::new(),
            acting: SlotSet::empty(),
            acting_until: None,
            confirmed: SlotSet::empty(),
        }
    }

    /// This replica's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The timings it runs with.
    #[must_use]
    pub fn timing(&self) -> LeaseTiming {
        self.timing
    }

    /// The slots it may act on at `now`, and until when (empty and None: none).
    #[must_use]
    pub fn acting(&self, now: Instant) -> (SlotSet, Option<Instant>) {
        match self.acting_until {
            Some(until) if now < until => (self.acting, Some(until)),
            _ => (SlotSet::empty(), None),
        }
    }

    /// A listing that completed at `now` found `leases` (this replica's own among them, or not).
    pub fn read(&mut self, leases: &[MemberLease], now: Instant) -> Round {
        let mut stop = SlotSet::empty();
        let own = leases.iter().find(|lease| lease.identity == self.identity);
        if self.acting_until.is_none_or(|until| now >= until) || own.is_none() {
            stop = self.acting;
            self.acting = SlotSet::empty();
            self.acting_until = None;
        }
        let others: Vec<&MemberLease> = leases
            .iter()
            .filter(|lease| lease.identity != self.identity)
            .collect();
        self.observed
            .retain(|identity, _| others.iter().any(|lease| &lease.identity == identity));
        let mut members = vec![self.identity.clone()];
        let mut expired = Vec::new();
        let mut claimed_by_others = SlotSet::empty();
        for lease in &others {
            claimed_by_others = claimed_by_others.union(&lease.claims);
            let since = match self.observed.get(&lease.identity) {
                Some((spec, claims, since)) if *spec == lease.spec && *claims == lease.claims => {
                    *since
                }
                _ => {
                    self.observed.insert(
                        lease.identity.clone(),
                        (lease.spec.clone(), lease.claims, now),
                    );
                    now
                }
            };
            if self.timing.expired(&lease.spec, since, now) {
                expired.push((lease.name.clone(), lease.version.clone()));
            } else {
                members.push(lease.identity.clone());
            }
        }
        members.sort();
        members.dedup();
        let target = assign(members.iter().map(String::as_str))
            .remove(&self.identity)
            .unwrap_or_default();
        stop = stop.union(&self.acting.difference(&target));
        self.acting = self.acting.intersection(&target);
        let own_claims = own.map(|lease| lease.claims).unwrap_or_default();
        self.confirmed = own_claims
            .intersection(&target)
            .difference(&claimed_by_others)
            .difference(&self.acting);
        let claims = self.acting.union(&target.difference(&claimed_by_others));
        Round {
            members,
            expired,
            stop,
            pending: !claims
                .difference(&self.acting)
                .difference(&self.confirmed)
                .is_empty(),
            claims,
        }
    }

    /// The write of the round that started at `started` succeeded: the slots its listing
    /// confirmed join those acted on, and acting goes on until `started` plus the renew
    /// deadline.
    pub fn written(&mut self, started: Instant) {
        self.acting = self.acting.union(&self.confirmed);
        self.confirmed = SlotSet::empty();
        self.acting_until = Some(started + self.timing.renew_deadline);
    }

    /// Our Lease was deleted or written by someone else since the listing: act on nothing.
    pub fn lost(&mut self) {
        self.acting = SlotSet::empty();
        self.acting_until = None;
        self.confirmed = SlotSet::empty();
    }

    /// A listing or write failed or timed out: forget what was seen (counts towards expiry
    /// start again) and confirm nothing. Acting goes on until the renew deadline.
    pub fn failed(&mut self) {
        self.observed.clear();
        self.confirmed = SlotSet::empty();
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use k8s_openapi::jiff::Timestamp;

    use std::time::Duration;

    use super::*;
    use crate::controller::shard::slots::SLOTS;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// The Lease of `identity` renewed at (wall-clock) second `renewed`, claiming `claims`.
    fn lease(identity: &str, renewed: i64, claims: SlotSet) -> MemberLease {
        MemberLease {
            identity: identity.into(),
            name: format!("members-{identity}"),
            version: format!("{renewed}"),
            spec: LeaseSpec {
                holder_identity: Some(identity.into()),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(Timestamp::from_second(renewed).unwrap())),
                ..LeaseSpec::default()
            },
            claims,
        }
    }

    fn share(members: &[&str], member: &str) -> SlotSet {
        assign(members.iter().copied())[member]
    }

    /// Runs a round at `now`: reads, and (when `writes`) the write succeeds.
    fn round(m: &mut Membership, leases: &[MemberLease], now: Instant, writes: bool) -> Round {
        let round = m.read(leases, now);
        if writes {
            m.written(now);
        }
        round
    }

    #[test]
    fn a_lone_replica_claims_everything_then_acts_after_seeing_its_claim() {
        let t = Instant::now();
        let mut a = Membership::new("a", LeaseTiming::default());
        let first = round(&mut a, &[], t, true);
        assert_eq!((first.claims, first.pending), (SlotSet::all(), true));
        assert_eq!(first.members, vec!["a".to_string()]);
        // Written, but not yet seen: nothing acted on.
        assert_eq!(a.acting(t).0, SlotSet::empty());
        // The next listing shows the claim: acted on once that round's write succeeds.
        let second = round(&mut a, &[lease("a", 1, SlotSet::all())], t + secs(2), true);
        assert!(!second.pending);
        assert_eq!(a.acting(t + secs(2)), (SlotSet::all(), Some(t + secs(12))));
        // No renewal: acting ends at the renew deadline.
        assert_eq!(a.acting(t + secs(12)), (SlotSet::empty(), None));
        let late = a.read(&[lease("a", 1, SlotSet::all())], t + secs(13));
        // The listing after the deadline says so: stop the work on every slot; claim again.
        assert_eq!((late.stop, late.claims), (SlotSet::all(), SlotSet::all()));
        assert_eq!(a.acting(t + secs(13)).0, SlotSet::empty());
    }

    #[test]
    fn a_joining_replica_acts_only_on_slots_the_old_owner_released() {
        let t = Instant::now();
        let mut a = Membership::new("a", LeaseTiming::default());
        round(&mut a, &[], t, true);
        round(&mut a, &[lease("a", 0, SlotSet::all())], t, true);
        let mut b = Membership::new("b", LeaseTiming::default());
        // b lists a claiming everything: it claims nothing yet.
        let b1 = round(&mut b, &[lease("a", 0, SlotSet::all())], t, true);
        assert_eq!((b1.claims, b1.pending), (SlotSet::empty(), false));
        let b_lease = lease("b", 0, SlotSet::empty());
        // a sees b: it stops acting on b's share first, then writes its smaller claim.
        let a2 = round(
            &mut a,
            &[lease("a", 0, SlotSet::all()), b_lease.clone()],
            t + secs(2),
            true,
        );
        let (a_share, b_share) = (share(&["a", "b"], "a"), share(&["a", "b"], "b"));
        assert_eq!((a2.stop, a2.claims), (b_share, a_share));
        assert_eq!(a.acting(t + secs(2)).0, a_share);
        // b sees the release, claims its share, and acts once it has seen its claim.
        let a_lease = lease("a", 2, a_share);
        let b2 = round(&mut b, &[a_lease.clone(), b_lease], t + secs(2), true);
        assert_eq!((b2.claims, b2.pending), (b_share, true));
        assert_eq!(b.acting(t + secs(2)).0, SlotSet::empty());
        round(
            &mut b,
            &[a_lease, lease("b", 2, b_share)],
            t + secs(2),
            true,
        );
        assert_eq!(b.acting(t + secs(2)).0, b_share);
        assert_eq!(a_share.len() + b_share.len(), SLOTS);
        assert!(a_share.intersection(&b_share).is_empty());
    }

    #[test]
    fn a_dead_members_slots_are_claimed_only_after_its_lease_expired_and_was_deleted() {
        let t = Instant::now();
        let (a_share, b_share) = (share(&["a", "b"], "a"), share(&["a", "b"], "b"));
        let mut b = Membership::new("b", LeaseTiming::default());
        let dead = lease("a", 0, a_share);
        let mine = lease("b", 0, b_share);
        round(&mut b, &[dead.clone(), mine.clone()], t, true);
        round(&mut b, &[dead.clone(), mine.clone()], t, true);
        assert_eq!(b.acting(t).0, b_share);
        // Seen unchanged for less than a Lease duration: a is live, its slots are its own.
        let waiting = round(&mut b, &[dead.clone(), mine.clone()], t + secs(14), true);
        assert!(waiting.expired.is_empty());
        assert_eq!(waiting.claims, b_share);
        // A whole duration: a has expired; b must delete its Lease (precondition: the record
        // seen), and still claims nothing of a's while that Lease exists.
        let expired = round(&mut b, &[dead.clone(), mine.clone()], t + secs(15), true);
        assert_eq!(
            expired.expired,
            vec![("members-a".to_string(), "0".to_string())]
        );
        assert_eq!(expired.members, vec!["b".to_string()]);
        assert_eq!(expired.claims, b_share);
        // Deleted: b claims everything, and acts on a's slots once it has seen its claim.
        let claimed = round(&mut b, &[mine], t + secs(16), true);
        assert_eq!((claimed.claims, claimed.pending), (SlotSet::all(), true));
        assert_eq!(b.acting(t + secs(16)).0, b_share);
        round(
            &mut b,
            &[lease("b", 16, SlotSet::all())],
            t + secs(16),
            true,
        );
        assert_eq!(b.acting(t + secs(16)).0, SlotSet::all());
    }

    #[test]
    fn a_renewal_or_a_failed_listing_restarts_the_count() {
        let t = Instant::now();
        let mut b = Membership::new("b", LeaseTiming::default());
        let mine = lease("b", 0, SlotSet::empty());
        round(
            &mut b,
            &[lease("a", 0, SlotSet::all()), mine.clone()],
            t,
            true,
        );
        let renewed = lease("a", 10, SlotSet::all());
        round(&mut b, &[renewed.clone(), mine.clone()], t + secs(10), true);
        let r = round(&mut b, &[renewed.clone(), mine.clone()], t + secs(20), true);
        assert!(r.expired.is_empty(), "seen unchanged for 10 s only");
        b.failed();
        let r = round(&mut b, &[renewed.clone(), mine.clone()], t + secs(30), true);
        assert!(
            r.expired.is_empty(),
            "the count started again after the failure"
        );
        let r = round(&mut b, &[renewed, mine], t + secs(45), true);
        assert_eq!(r.expired.len(), 1);
    }

    #[test]
    fn two_replicas_that_want_the_same_slot_do_not_act_on_it() {
        let t = Instant::now();
        // c's view has not caught up: it still thinks it alone is live besides nothing, and
        // claims everything; b claims everything too. Both listings see the other's claim.
        let mut b = Membership::new("b", LeaseTiming::default());
        let mut c = Membership::new("c", LeaseTiming::default());
        let both = [lease("b", 0, SlotSet::all()), lease("c", 0, SlotSet::all())];
        round(&mut b, &both, t, true);
        round(&mut c, &both, t, true);
        assert_eq!(b.acting(t).0, SlotSet::empty());
        assert_eq!(c.acting(t).0, SlotSet::empty());
        // Each now claims only its share, and then acts on it alone.
        let b1 = round(&mut b, &both, t + secs(1), true);
        assert_eq!(b1.claims, SlotSet::empty(), "c claims every slot");
        let c1 = round(&mut c, &both, t + secs(1), true);
        assert_eq!(c1.claims, SlotSet::empty());
        let shares = [
            lease("b", 2, share(&["b", "c"], "b")),
            lease("c", 2, share(&["b", "c"], "c")),
        ];
        round(&mut b, &shares, t + secs(2), true);
        round(&mut c, &shares, t + secs(2), true);
        let (acting_b, acting_c) = (b.acting(t + secs(2)).0, c.acting(t + secs(2)).0);
        assert_eq!(acting_b, share(&["b", "c"], "b"));
        assert!(acting_b.intersection(&acting_c).is_empty());
    }

    #[test]
    fn a_deleted_own_lease_or_a_lost_write_stops_everything() {
        let t = Instant::now();
        let mut a = Membership::new("a", LeaseTiming::default());
        round(&mut a, &[], t, true);
        round(&mut a, &[lease("a", 0, SlotSet::all())], t, true);
        let gone = a.read(&[], t + secs(1));
        assert_eq!(gone.stop, SlotSet::all());
        assert_eq!(a.acting(t + secs(1)).0, SlotSet::empty());
        let mut b = Membership::new("b", LeaseTiming::default());
        round(&mut b, &[], t, true);
        round(&mut b, &[lease("b", 0, SlotSet::all())], t, true);
        b.read(&[lease("b", 0, SlotSet::all())], t + secs(1));
        b.lost();
        assert_eq!(b.acting(t + secs(1)), (SlotSet::empty(), None));
    }
}
