//! Which live member owns each slot: consistent hashing with bounded loads. Each slot ranks the
//! members by a stable hash of (member, slot) — rendezvous hashing, the form of consistent
//! hashing without a ring — and goes to the first of them that has fewer than the bound,
//! `ceil(SLOTS × (1 + ε) / members)` slots, slots taken in their fixed order. Every replica
//! computes the same assignment from the same member names. A member that joins takes only the
//! slots it now ranks first in (about `1/N` of them, from everyone); a member that goes gives
//! away only its own; the bound moves a few more only when a member would exceed it.

use std::collections::BTreeMap;

use super::slots::{SLOTS, Slot, SlotSet};
use crate::stable_hash::{mix, stable_hash};

/// ε of the load bound: no member owns more than 25% above the mean.
pub const LOAD_SLACK: f64 = 0.25;

/// The most slots one of `members` members may own.
#[must_use]
pub fn load_bound(members: usize) -> usize {
    if members == 0 {
        return 0;
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let bound = ((SLOTS as f64) * (1.0 + LOAD_SLACK) / members as f64).ceil() as usize;
    bound.min(SLOTS)
}

/// The slots of each of `members` (duplicates count once; no member: empty).
#[must_use]
pub fn assign<'a>(members: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, SlotSet> {
    let members: std::collections::BTreeSet<&str> = members.into_iter().collect();
    let seeds: Vec<(&str, u64)> = members
        .iter()
        .map(|member| (*member, stable_hash(member.as_bytes())))
        .collect();
    let bound = load_bound(seeds.len());
    let mut owned: BTreeMap<String, SlotSet> = members
        .iter()
        .map(|member| ((*member).to_owned(), SlotSet::empty()))
        .collect();
    let mut loads = vec![0usize; seeds.len()];
    let mut ranking: Vec<(u64, usize)> = Vec::with_capacity(seeds.len());
    for slot in 0..SLOTS {
        ranking.clear();
        ranking.extend(
            seeds
                .iter()
                .enumerate()
                .map(|(index, (_, seed))| (score(*seed, slot), index)),
        );
        // Highest score first; the index breaks (astronomically unlikely) ties.
        ranking.sort_unstable_by(|a, b| b.cmp(a));
        if let Some(&(_, index)) = ranking.iter().find(|(_, index)| loads[*index] < bound) {
            loads[index] += 1;
            if let Some(set) = owned.get_mut(seeds[index].0) {
                set.insert(slot);
            }
        }
    }
    owned
}

/// The rendezvous score of a member (by the hash of its name) for `slot`.
fn score(seed: u64, slot: Slot) -> u64 {
    mix(seed ^ (slot as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("flotilla-controller-{i}")).collect()
    }

    fn of(members: &[String]) -> BTreeMap<String, SlotSet> {
        assign(members.iter().map(String::as_str))
    }

    /// How many slots changed owner between two assignments.
    fn moved(before: &BTreeMap<String, SlotSet>, after: &BTreeMap<String, SlotSet>) -> usize {
        (0..SLOTS)
            .filter(|slot| {
                let owner = |a: &BTreeMap<String, SlotSet>| {
                    a.iter()
                        .find(|(_, set)| set.contains(*slot))
                        .map(|(m, _)| m.clone())
                };
                owner(before) != owner(after)
            })
            .count()
    }

    #[test]
    fn every_slot_has_exactly_one_owner_and_loads_are_bounded() {
        for n in 1..=12 {
            let assignment = of(&names(n));
            let mut all = SlotSet::empty();
            let mut total = 0;
            for set in assignment.values() {
                assert!(set.len() <= load_bound(n), "{n} members: {}", set.len());
                assert!(all.intersection(set).is_empty(), "a slot with two owners");
                all = all.union(set);
                total += set.len();
            }
            assert_eq!((total, all), (SLOTS, SlotSet::all()), "{n} members");
        }
        assert_eq!(load_bound(3), 427);
        assert!(assign([]).is_empty());
    }

    #[test]
    fn the_same_members_in_any_order_give_the_same_assignment() {
        let mut members = names(5);
        let first = of(&members);
        members.reverse();
        members.push(members[0].clone());
        assert_eq!(of(&members), first);
    }

    #[test]
    fn a_join_or_a_loss_moves_about_one_nth() {
        for n in 2..=10 {
            let before = of(&names(n));
            let joined = of(&names(n + 1));
            let moved_on_join = moved(&before, &joined);
            // The newcomer's fair share is SLOTS/(n+1); allow 20% of it for the hash's spread.
            let share = SLOTS / (n + 1);
            assert!(
                moved_on_join <= share + share / 5,
                "{n} → {}: {moved_on_join} of {SLOTS} moved (share {share})",
                n + 1
            );
            // Only slots now owned by the newcomer moved.
            let newcomer = &joined[&names(n + 1)[n]];
            assert_eq!(moved_on_join, newcomer.len());
            // A loss: the lost member's slots move, (nearly) nothing else.
            let mut survivors = names(n);
            let lost = survivors.remove(n / 2);
            let after = of(&survivors);
            let moved_on_loss = moved(&before, &after);
            let lost_slots = before[&lost].len();
            assert!(
                moved_on_loss >= lost_slots && moved_on_loss <= lost_slots + SLOTS / 50,
                "{n} → {}: {moved_on_loss} moved, {lost_slots} were the lost member's",
                n - 1
            );
        }
    }
}
