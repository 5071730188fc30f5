//! Which notifications were sent about an object, kept on the object itself as Argo CD keeps
//! it: the annotation `notified.notifications.argoproj.io`, a JSON map from a key naming the
//! trigger's condition, the destination and (with `oncePer`) the value it is sent once per, to
//! the Unix time it was sent. A condition that stops holding forgets its key, so it is sent
//! again when it holds again — unless it has `oncePer`, whose key stays until the value
//! changes. Kept on the object, it survives restarts and moves with the object; the latest
//! [`KEPT`] keys are kept. Pure.

use std::collections::BTreeMap;

use super::subscription::Destination;
use crate::stable_hash::stable_hash;

/// The annotation.
pub const NOTIFIED: &str = "notified.notifications.argoproj.io";

/// Keys kept per object.
pub const KEPT: usize = 100;

/// The notifications sent about one object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notified {
    sent: BTreeMap<String, i64>,
}

/// What identifies one condition's notification to one destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotifiedKey {
    key: String,
    /// The condition has `oncePer`: its key is not forgotten when it stops holding.
    once_per: bool,
}

impl NotifiedKey {
    /// The key of condition `index` (of text `when`) of `trigger` to `destination`, once per
    /// `once_per` when it has one.
    #[must_use]
    pub fn new(
        trigger: &str,
        index: usize,
        when: &str,
        once_per: Option<&str>,
        destination: &Destination,
    ) -> Self {
        let hash = stable_hash(when.as_bytes());
        let key = format!(
            "{trigger}:[{index}].{hash:016x}:{}:{}",
            destination.service, destination.recipient
        );
        match once_per {
            Some(value) => Self {
                key: format!("{value}:{key}"),
                once_per: true,
            },
            None => Self {
                key,
                once_per: false,
            },
        }
    }

    /// Its text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.key
    }
}

impl Notified {
    /// What the annotation's value says (absent or not a JSON map of numbers: nothing).
    #[must_use]
    pub fn from_annotation(value: Option<&str>) -> Self {
        Self {
            sent: value
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_default(),
        }
    }

    /// The annotation's value.
    #[must_use]
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(&self.sent).unwrap_or_default()
    }

    /// Whether nothing is recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sent.is_empty()
    }

    /// Records whether `key`'s condition holds now (at Unix time `now`); whether its
    /// notification is due (it holds and was not sent).
    pub fn observe(&mut self, key: &NotifiedKey, holds: bool, now: i64) -> bool {
        if !holds {
            if !key.once_per {
                self.sent.remove(&key.key);
            }
            return false;
        }
        if self.sent.contains_key(&key.key) {
            return false;
        }
        self.sent.insert(key.key.clone(), now);
        while self.sent.len() > KEPT {
            let oldest = self
                .sent
                .iter()
                .min_by_key(|(key, at)| (**at, (*key).clone()))
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.sent.remove(&oldest);
            }
        }
        true
    }

    /// Forgets `key` (its delivery failed: it is due again).
    pub fn forget(&mut self, key: &NotifiedKey) {
        self.sent.remove(&key.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(service: &str) -> Destination {
        Destination {
            service: service.into(),
            recipient: "ops".into(),
        }
    }

    #[test]
    fn once_per_keys_stay_and_plain_keys_are_forgotten_when_the_condition_stops() {
        let mut notified = Notified::default();
        let plain = NotifiedKey::new("on-sync-running", 0, "x", None, &to("slack"));
        assert!(notified.observe(&plain, true, 1));
        assert!(
            !notified.observe(&plain, true, 2),
            "sent once while it holds"
        );
        assert!(!notified.observe(&plain, false, 3));
        assert!(notified.observe(&plain, true, 4), "holds again: due again");

        let first = NotifiedKey::new("on-deployed", 0, "x", Some("abc"), &to("slack"));
        assert!(notified.observe(&first, true, 5));
        assert!(!notified.observe(&first, false, 6));
        assert!(
            !notified.observe(&first, true, 7),
            "the same revision is not sent twice"
        );
        let second = NotifiedKey::new("on-deployed", 0, "x", Some("def"), &to("slack"));
        assert!(notified.observe(&second, true, 8), "a new revision is");

        let reread = Notified::from_annotation(Some(&notified.to_annotation()));
        assert_eq!(reread, notified);
        assert!(second.as_str().starts_with("def:on-deployed:[0]."));
        notified.forget(&second);
        assert!(
            notified.observe(&second, true, 9),
            "a failed delivery is due again"
        );
    }

    #[test]
    fn only_the_latest_keys_are_kept() {
        let mut notified = Notified::default();
        for n in 0..KEPT + 3 {
            let key = NotifiedKey::new("t", 0, "x", Some(&n.to_string()), &to("s"));
            #[allow(clippy::cast_possible_wrap, reason = "a small test number")]
            notified.observe(&key, true, n as i64);
        }
        assert_eq!(notified.sent.len(), KEPT);
        assert!(!notified.to_annotation().contains("\"0:t"));
    }
}
