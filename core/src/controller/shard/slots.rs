//! The slots Applications are sharded by: an Application falls in one of [`SLOTS`] slots by a
//! stable hash of its namespace and name (the same in every replica and every version), and a
//! replica owns whole slots. A [`SlotSet`] is written in a member's Lease as a hexadecimal
//! bitmap (256 characters).

use std::fmt;

use crate::stable_hash::stable_hash;

/// How many slots there are. Enough that each replica of a few has hundreds (loads even out
/// over them), few enough that a member's claim fits in a Lease annotation.
pub const SLOTS: usize = 1024;

const WORDS: usize = SLOTS / 64;

/// One slot, `0..SLOTS`.
pub type Slot = usize;

/// The slot of Application `namespace/name`.
#[must_use]
pub fn slot_of(namespace: &str, name: &str) -> Slot {
    let key = format!("{namespace}/{name}");
    // SLOTS is a power of two far below u64::MAX: the remainder fits.
    usize::try_from(stable_hash(key.as_bytes()) % SLOTS as u64).unwrap_or_default()
}

/// A set of slots.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SlotSet([u64; WORDS]);

/// A Lease's slot annotation that is not a bitmap of [`SLOTS`] bits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a slot bitmap of {} hexadecimal digits: {text:?}", SLOTS / 4)]
pub struct SlotsError {
    text: String,
}

impl SlotSet {
    /// No slot.
    #[must_use]
    pub const fn empty() -> Self {
        Self([0; WORDS])
    }

    /// Every slot.
    #[must_use]
    pub const fn all() -> Self {
        Self([u64::MAX; WORDS])
    }

    /// Whether `slot` is in the set.
    #[must_use]
    pub fn contains(&self, slot: Slot) -> bool {
        slot < SLOTS && self.0[slot / 64] & (1 << (slot % 64)) != 0
    }

    /// Adds `slot` (ignored when out of range).
    pub fn insert(&mut self, slot: Slot) {
        if slot < SLOTS {
            self.0[slot / 64] |= 1 << (slot % 64);
        }
    }

    /// How many slots are in the set.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set holds no slot.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    /// The slots of either set.
    #[must_use]
    pub fn union(&self, other: &Self) -> Self {
        Self(std::array::from_fn(|i| self.0[i] | other.0[i]))
    }

    /// The slots of both sets.
    #[must_use]
    pub fn intersection(&self, other: &Self) -> Self {
        Self(std::array::from_fn(|i| self.0[i] & other.0[i]))
    }

    /// The slots of `self` not in `other`.
    #[must_use]
    pub fn difference(&self, other: &Self) -> Self {
        Self(std::array::from_fn(|i| self.0[i] & !other.0[i]))
    }

    /// The set as written in a Lease: [`SLOTS`]/4 hexadecimal digits, slot 0 in the lowest bit
    /// of the first word.
    #[must_use]
    pub fn encode(&self) -> String {
        self.0.iter().map(|w| format!("{w:016x}")).collect()
    }

    /// Reads [`Self::encode`]'s text.
    ///
    /// # Errors
    /// Any other text.
    pub fn decode(text: &str) -> Result<Self, SlotsError> {
        let error = || SlotsError {
            text: text.chars().take(40).collect(),
        };
        if text.len() != SLOTS / 4 || !text.is_ascii() {
            return Err(error());
        }
        let mut words = [0; WORDS];
        for (i, word) in words.iter_mut().enumerate() {
            *word = u64::from_str_radix(&text[i * 16..(i + 1) * 16], 16).map_err(|_| error())?;
        }
        Ok(Self(words))
    }
}

impl FromIterator<Slot> for SlotSet {
    fn from_iter<I: IntoIterator<Item = Slot>>(slots: I) -> Self {
        let mut set = Self::empty();
        for slot in slots {
            set.insert(slot);
        }
        set
    }
}

impl fmt::Debug for SlotSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SlotSet({} slots)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stable_hash::mix;

    #[test]
    fn a_set_survives_its_encoding_and_bad_text_is_refused() {
        let set: SlotSet = [0, 1, 63, 64, 500, SLOTS - 1].into_iter().collect();
        let text = set.encode();
        assert_eq!(text.len(), 256);
        assert_eq!(SlotSet::decode(&text), Ok(set));
        assert_eq!(set.len(), 6);
        assert!(set.contains(SLOTS - 1) && !set.contains(2) && !set.contains(SLOTS));
        assert_eq!(
            SlotSet::decode(&SlotSet::all().encode()),
            Ok(SlotSet::all())
        );
        for bad in ["", "xyz", &"g".repeat(256), &"0".repeat(255)] {
            assert!(SlotSet::decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn set_operations() {
        let a: SlotSet = [1, 2, 3].into_iter().collect();
        let b: SlotSet = [3, 4].into_iter().collect();
        assert_eq!(a.union(&b), [1, 2, 3, 4].into_iter().collect());
        assert_eq!(a.intersection(&b), [3].into_iter().collect());
        assert_eq!(a.difference(&b), [1, 2].into_iter().collect());
        assert!(SlotSet::empty().is_empty() && !a.is_empty());
        assert_eq!(SlotSet::all().len(), SLOTS);
    }

    #[test]
    fn slots_are_stable_and_spread() {
        // Fixed values: a change of the hash would move every Application between replicas
        // of two versions.
        assert_eq!(stable_hash(b""), mix(0xcbf2_9ce4_8422_2325));
        assert_eq!(slot_of("argocd", "web"), slot_of("argocd", "web"));
        assert_ne!(slot_of("a", "bc"), slot_of("ab", "c"));
        let mut counts = vec![0u32; SLOTS];
        for i in 0..SLOTS * 20 {
            counts[slot_of("fleet", &format!("app-{i}"))] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(
            *min >= 3 && *max <= 45,
            "20 a slot on average: {min}..{max}"
        );
    }
}
