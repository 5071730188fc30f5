//! Who gets which trigger's notifications about an object: the annotations
//! `notifications.argoproj.io/subscribe.<trigger>.<service>: <recipient>;<recipient>` (and
//! `subscribe.<service>`, for the default triggers) of the object and of its AppProject, and the
//! ConfigMap's `subscriptions` (for the objects their `selector` matches). A subscription
//! naming a trigger or service that is not configured is a problem named by its annotation, not
//! a silent nothing. Pure.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::config::{ConfigError, NotificationsConfig, key_error};

/// The prefix of subscription annotations.
pub const SUBSCRIBE: &str = "notifications.argoproj.io/subscribe.";

/// One recipient of one service.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Destination {
    /// The service's name.
    pub service: String,
    /// A channel, address or recipient name (empty for a webhook).
    pub recipient: String,
}

/// The destinations of each trigger.
pub type Destinations = BTreeMap<String, BTreeSet<Destination>>;

/// One requirement of a `selector` (`key=value`, `key!=value`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    key: String,
    value: String,
    equal: bool,
}

/// An entry of the ConfigMap's `subscriptions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalSubscription {
    destinations: Vec<Destination>,
    /// Empty: the default triggers.
    triggers: Vec<String>,
    selector: Vec<Requirement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SubscriptionFields {
    recipients: Vec<String>,
    #[serde(default)]
    triggers: Vec<String>,
    #[serde(default)]
    selector: String,
}

impl GlobalSubscription {
    /// The ConfigMap's `subscriptions` (at `key`).
    ///
    /// # Errors
    /// Not a list of subscriptions, a selector other than `key=value` and `key!=value` terms.
    pub fn parse_all(key: &str, text: &str) -> Result<Vec<Self>, ConfigError> {
        let list: Vec<SubscriptionFields> =
            serde_saphyr::from_str(text).map_err(|error| key_error(key, error.to_string()))?;
        list.into_iter()
            .enumerate()
            .map(|(i, fields)| {
                let selector = fields
                    .selector
                    .split(',')
                    .map(str::trim)
                    .filter(|term| !term.is_empty())
                    .map(|term| {
                        let (key, value, equal) = if let Some((k, v)) = term.split_once("!=") {
                            (k, v, false)
                        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                            (k, v, true)
                        } else {
                            return Err(key_error(key, format!("[{i}].selector: {term:?} is not supported (only key=value and key!=value terms)")));
                        };
                        Ok(Requirement {
                            key: key.trim().to_owned(),
                            value: value.trim().to_owned(),
                            equal,
                        })
                    })
                    .collect::<Result<_, _>>()?;
                let destinations = fields
                    .recipients
                    .iter()
                    .map(|recipient| {
                        let (service, recipient) = recipient.split_once(':').unwrap_or((recipient, ""));
                        Destination {
                            service: service.trim().to_owned(),
                            recipient: recipient.trim().to_owned(),
                        }
                    })
                    .collect();
                Ok(Self {
                    destinations,
                    triggers: fields.triggers,
                    selector,
                })
            })
            .collect()
    }

    /// Its services and triggers exist in `config` (errors at `key`).
    pub(super) fn check(&self, key: &str, config: &NotificationsConfig) -> Result<(), ConfigError> {
        if let Some(missing) = self
            .destinations
            .iter()
            .find(|d| !config.services.contains_key(&d.service))
        {
            return Err(key_error(
                key,
                format!("service {:?} is not configured", missing.service),
            ));
        }
        if let Some(missing) = self
            .triggers
            .iter()
            .find(|t| !config.triggers.contains_key(*t))
        {
            return Err(key_error(
                key,
                format!("trigger {missing:?} is not configured"),
            ));
        }
        Ok(())
    }

    fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector
            .iter()
            .all(|r| (labels.get(&r.key) == Some(&r.value)) == r.equal)
    }
}

/// The recipients of an annotation's value (`;` or `,` between them; none is one empty one).
fn recipients(value: &str) -> Vec<String> {
    let all: Vec<String> = value
        .split([';', ','])
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect();
    if all.is_empty() {
        vec![String::new()]
    } else {
        all
    }
}

/// The default triggers of `service`.
fn defaults<'a>(config: &'a NotificationsConfig, service: &str) -> &'a [String] {
    config
        .service_default_triggers
        .get(service)
        .unwrap_or(&config.default_triggers)
}

/// The destinations of each trigger from the annotations of the object (`own`) and of its
/// project, and the ConfigMap's subscriptions selecting its `labels`; and the problems of the
/// annotations that name what is not configured (`annotation: problem`).
#[must_use]
pub fn destinations(
    own: &BTreeMap<String, String>,
    project: Option<&BTreeMap<String, String>>,
    labels: &BTreeMap<String, String>,
    config: &NotificationsConfig,
) -> (Destinations, Vec<String>) {
    let mut found = Destinations::new();
    let mut problems = Vec::new();
    let annotations = project.into_iter().flat_map(|p| p.iter()).chain(own.iter());
    for (annotation, value) in annotations {
        let Some(rest) = annotation.strip_prefix(SUBSCRIBE) else {
            continue;
        };
        let (triggers, service) = match rest.split_once('.') {
            Some((trigger, service)) => (vec![trigger.to_owned()], service),
            None => (defaults(config, rest).to_vec(), rest),
        };
        if !config.services.contains_key(service) {
            problems.push(format!(
                "{annotation}: service {service:?} is not configured in {}",
                super::config::CONFIG_MAP
            ));
            continue;
        }
        if triggers.is_empty() {
            problems.push(format!(
                "{annotation}: names no trigger and {} has no defaultTriggers",
                super::config::CONFIG_MAP
            ));
        }
        for trigger in triggers {
            if !config.triggers.contains_key(&trigger) {
                problems.push(format!(
                    "{annotation}: trigger {trigger:?} is not configured in {}",
                    super::config::CONFIG_MAP
                ));
                continue;
            }
            for recipient in recipients(value) {
                found
                    .entry(trigger.clone())
                    .or_default()
                    .insert(Destination {
                        service: service.to_owned(),
                        recipient,
                    });
            }
        }
    }
    for subscription in config.subscriptions.iter().filter(|s| s.selects(labels)) {
        for destination in &subscription.destinations {
            let triggers = if subscription.triggers.is_empty() {
                defaults(config, &destination.service)
            } else {
                &subscription.triggers
            };
            for trigger in triggers {
                found
                    .entry(trigger.clone())
                    .or_default()
                    .insert(destination.clone());
            }
        }
    }
    (found, problems)
}
