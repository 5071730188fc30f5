//! Which notifications were delivered, kept in a ConfigMap so that each is sent once however
//! often its event is seen and whatever restarts in between: one key per object
//! (`applicationset.<name>`, `application.<namespace>.<name>`), holding the ids of the
//! deliveries made for it (event key and destination), the latest [`KEPT`]. An object seen for
//! the first time has its events from before the notifier started recorded without being sent
//! (configuring notifications does not announce every rollout of the past). Pure.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;

use super::config::NotificationConfig;
use super::occurrence::Occurrence;
use super::trigger::Trigger;

/// Delivery ids kept per object.
pub const KEPT: usize = 100;

/// One message to one destination.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// `<object>|<event key>|<destination>`: the same for the same event and destination,
    /// sent as `X-Flotilla-Delivery` so a receiver can tell a repeat.
    pub id: String,
    /// The ledger key of the object it is about.
    pub object: String,
    pub trigger: Trigger,
    /// The service (`<kind>.<name>`).
    pub destination: String,
    pub template: String,
    pub vars: serde_json::Map<String, serde_json::Value>,
}

/// The deliveries made, by object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    objects: BTreeMap<String, Vec<String>>,
}

/// The ledger key of an ApplicationSet.
#[must_use]
pub fn application_set_key(name: &str) -> String {
    format!("applicationset.{name}")
}

/// The ledger key of an Application.
#[must_use]
pub fn application_key(namespace: &str, name: &str) -> String {
    format!("application.{namespace}.{name}")
}

impl Ledger {
    /// The ledger a ConfigMap's `data` holds (a value that is not a JSON list of strings counts
    /// as empty).
    #[must_use]
    pub fn from_data(data: &BTreeMap<String, String>) -> Self {
        Self {
            objects: data
                .iter()
                .map(|(object, ids)| {
                    (
                        object.clone(),
                        serde_json::from_str(ids).unwrap_or_default(),
                    )
                })
                .collect(),
        }
    }

    /// The `data` of the ConfigMap holding it.
    #[must_use]
    pub fn to_data(&self) -> BTreeMap<String, String> {
        self.objects
            .iter()
            .map(|(object, ids)| {
                (
                    object.clone(),
                    serde_json::to_string(ids).unwrap_or_default(),
                )
            })
            .collect()
    }

    /// The deliveries `config` asks for the events `occurrences` of `object` that are not
    /// delivered yet. For an object without an entry, the events before `since` are recorded
    /// here as delivered (the rest are returned).
    pub fn due(
        &mut self,
        object: &str,
        occurrences: &[Occurrence],
        config: &NotificationConfig,
        since: Timestamp,
    ) -> Vec<Delivery> {
        let wanted: Vec<(Delivery, bool)> = occurrences
            .iter()
            .flat_map(|occurrence| {
                let subscription = config.triggers.get(&occurrence.trigger);
                subscription.into_iter().flat_map(move |subscription| {
                    subscription.destinations.iter().map(move |destination| {
                        let before = occurrence.at.is_none_or(|at| at < since);
                        let delivery = Delivery {
                            id: format!("{object}|{}|{destination}", occurrence.key),
                            object: object.to_owned(),
                            trigger: occurrence.trigger,
                            destination: destination.clone(),
                            template: subscription.template.clone(),
                            vars: occurrence.vars.clone(),
                        };
                        (delivery, before)
                    })
                })
            })
            .collect();
        let first_sight = !self.objects.contains_key(object);
        if first_sight {
            let past: Vec<String> = wanted
                .iter()
                .filter(|(_, before)| *before)
                .map(|(delivery, _)| delivery.id.clone())
                .collect();
            self.objects.insert(object.to_owned(), Vec::new());
            past.into_iter().for_each(|id| self.record(object, &id));
        }
        let done: BTreeSet<&String> = self.objects[object].iter().collect();
        let due: Vec<Delivery> = wanted
            .into_iter()
            .map(|(delivery, _)| delivery)
            .filter(|delivery| !done.contains(&delivery.id))
            .collect();
        due
    }

    /// Records `id` as delivered for `object` (only the latest [`KEPT`] are kept).
    pub fn record(&mut self, object: &str, id: &str) {
        let ids = self.objects.entry(object.to_owned()).or_default();
        if !ids.iter().any(|known| known == id) {
            ids.push(id.to_owned());
        }
        if ids.len() > KEPT {
            ids.drain(..ids.len() - KEPT);
        }
    }

    /// Forgets the objects `present` does not accept (deleted ones).
    pub fn retain(&mut self, present: impl Fn(&str) -> bool) {
        self.objects.retain(|object, _| present(object));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::config::{Service, ServiceKind, Subscription};

    fn config() -> NotificationConfig {
        let mut config = NotificationConfig::default();
        config.services.insert(
            "webhook.ops".into(),
            Service {
                kind: ServiceKind::Webhook,
                url: "http://x".into(),
                headers: BTreeMap::new(),
                channel: None,
                username: None,
            },
        );
        config.templates.insert("t".into(), "m".into());
        config.triggers.insert(
            Trigger::StepStarted,
            Subscription {
                template: "t".into(),
                destinations: vec!["webhook.ops".into()],
            },
        );
        config
    }

    fn occurrence(trigger: Trigger, key: &str, at: Option<i64>) -> Occurrence {
        Occurrence {
            trigger,
            key: key.into(),
            at: at.map(|s| Timestamp::from_second(s).unwrap()),
            vars: serde_json::Map::new(),
        }
    }

    #[test]
    fn each_event_is_due_once_and_survives_the_configmap() {
        let mut ledger = Ledger::default();
        let since = Timestamp::from_second(100).unwrap();
        let seen = [
            occurrence(
                Trigger::StepStarted,
                "on-step-started/step-1/abc",
                Some(200),
            ),
            occurrence(
                Trigger::StepCompleted,
                "on-step-completed/step-1/abc",
                Some(200),
            ),
        ];
        let due = ledger.due("applicationset.a", &seen, &config(), since);
        assert_eq!(due.len(), 1, "only configured triggers");
        assert_eq!(
            due[0].id,
            "applicationset.a|on-step-started/step-1/abc|webhook.ops"
        );
        ledger.record("applicationset.a", &due[0].id);
        let reread = Ledger::from_data(&ledger.to_data());
        let mut reread = reread;
        assert!(
            reread
                .due("applicationset.a", &seen, &config(), since)
                .is_empty()
        );
    }

    #[test]
    fn at_first_sight_only_events_since_the_start_are_due() {
        let mut ledger = Ledger::default();
        let since = Timestamp::from_second(100).unwrap();
        let seen = [
            occurrence(Trigger::StepStarted, "on-step-started/step-1/old", Some(50)),
            occurrence(
                Trigger::StepStarted,
                "on-step-started/step-2/new",
                Some(150),
            ),
            occurrence(Trigger::StepStarted, "on-step-started/step-3/untimed", None),
        ];
        let due = ledger.due("applicationset.a", &seen, &config(), since);
        let ids: Vec<&str> = due.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(
            ids,
            ["applicationset.a|on-step-started/step-2/new|webhook.ops"]
        );
        // Later, an object known to the ledger gets every event not delivered, old or new.
        let later = [occurrence(
            Trigger::StepStarted,
            "on-step-started/step-4/x",
            Some(10),
        )];
        assert_eq!(
            ledger
                .due("applicationset.a", &later, &config(), since)
                .len(),
            1
        );
    }

    #[test]
    fn only_the_latest_ids_are_kept() {
        let mut ledger = Ledger::default();
        for n in 0..KEPT + 5 {
            ledger.record("o", &n.to_string());
        }
        let data = ledger.to_data();
        let ids: Vec<String> = serde_json::from_str(&data["o"]).unwrap();
        assert_eq!(ids.len(), KEPT);
        assert_eq!(ids[0], "5");
        ledger.retain(|object| object != "o");
        assert!(ledger.to_data().is_empty());
    }
}
