//! The `flotilla-notifications` ConfigMap, read the way argocd-notifications reads its own
//! (services, templates, triggers; its concepts, not its format): `service.webhook.<name>` (a
//! generic JSON POST) and `service.slack.<name>` (a Slack-compatible incoming webhook) say where
//! messages go, `template.<name>` what they say (a Go template with the functions of
//! ApplicationSet templates), `trigger.<on-event>` which template goes to which destinations
//! when that event happens. A value `$key` in a URL or header is the key of the credentials
//! Secret. Every key and field is checked; an unknown one is refused by name. Pure.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::trigger::Trigger;

/// The ConfigMap's name.
pub const CONFIG_MAP: &str = "flotilla-notifications";
/// The Secret holding the credentials `$key` values name.
pub const SECRET: &str = "flotilla-notifications";

/// What kind of endpoint a destination is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceKind {
    /// A JSON POST of the event and its message.
    Webhook,
    /// A Slack incoming webhook (`{"text": …}`; Mattermost, Rocket.Chat and others take it too).
    Slack,
}

impl ServiceKind {
    /// The word of its keys (`service.<word>.<name>`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Webhook => "webhook",
            Self::Slack => "slack",
        }
    }
}

/// Where messages go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub kind: ServiceKind,
    /// The URL, or `$key` of the Secret.
    pub url: String,
    /// Headers sent with each POST (values may be `$key`).
    pub headers: BTreeMap<String, String>,
    /// Slack: the channel and user name to post as, when the webhook allows overriding them.
    pub channel: Option<String>,
    pub username: Option<String>,
}

/// A trigger's template and destinations (`<kind>.<name>` of services).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscription {
    pub template: String,
    pub destinations: Vec<String>,
}

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotificationConfig {
    /// Services by `<kind>.<name>`.
    pub services: BTreeMap<String, Service>,
    /// Message templates (Go template text) by name.
    pub templates: BTreeMap<String, String>,
    pub triggers: BTreeMap<Trigger, Subscription>,
}

/// A ConfigMap that cannot be used; nothing of it is.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("ConfigMap {CONFIG_MAP}: key {key}: {message}")]
    Key { key: String, message: String },
}

fn key_error(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Key {
        key: key.to_owned(),
        message: message.into(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookFields {
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SlackFields {
    url: String,
    channel: Option<String>,
    username: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TemplateFields {
    message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TriggerFields {
    template: String,
    destinations: Vec<String>,
}

fn parse<T: for<'de> Deserialize<'de>>(key: &str, text: &str) -> Result<T, ConfigError> {
    serde_saphyr::from_str(text).map_err(|error| key_error(key, error.to_string()))
}

impl NotificationConfig {
    /// The configuration of a ConfigMap's `data`.
    ///
    /// # Errors
    /// An unknown key, a value that is not what its key needs, a trigger naming a template or a
    /// destination that is not configured.
    pub fn parse(data: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut config = Self::default();
        let mut triggers = Vec::new();
        for (key, text) in data {
            if let Some(rest) = key.strip_prefix("service.") {
                let (kind, name) = rest.split_once('.').unwrap_or((rest, ""));
                if name.is_empty() {
                    return Err(key_error(key, "expected service.<webhook|slack>.<name>"));
                }
                let service = match kind {
                    "webhook" => {
                        let fields: WebhookFields = parse(key, text)?;
                        Service {
                            kind: ServiceKind::Webhook,
                            url: fields.url,
                            headers: fields.headers,
                            channel: None,
                            username: None,
                        }
                    }
                    "slack" => {
                        let fields: SlackFields = parse(key, text)?;
                        Service {
                            kind: ServiceKind::Slack,
                            url: fields.url,
                            headers: BTreeMap::new(),
                            channel: fields.channel,
                            username: fields.username,
                        }
                    }
                    other => {
                        return Err(key_error(
                            key,
                            format!("unknown service kind {other:?} (supported: webhook, slack)"),
                        ));
                    }
                };
                config.services.insert(rest.to_owned(), service);
            } else if let Some(name) = key.strip_prefix("template.") {
                let fields: TemplateFields = parse(key, text)?;
                config.templates.insert(name.to_owned(), fields.message);
            } else if let Some(name) = key.strip_prefix("trigger.") {
                let trigger = Trigger::parse(name).map_err(|message| key_error(key, message))?;
                let fields: TriggerFields = parse(key, text)?;
                triggers.push((key, trigger, fields));
            } else {
                return Err(key_error(
                    key,
                    "unknown key (expected service.<kind>.<name>, template.<name> or trigger.<on-event>)",
                ));
            }
        }
        for (key, trigger, fields) in triggers {
            if !config.templates.contains_key(&fields.template) {
                return Err(key_error(
                    key,
                    format!(
                        "template {:?} is not configured (template.{0})",
                        fields.template
                    ),
                ));
            }
            if let Some(missing) = fields
                .destinations
                .iter()
                .find(|d| !config.services.contains_key(*d))
            {
                return Err(key_error(
                    key,
                    format!("destination {missing:?} is not configured (service.{missing})"),
                ));
            }
            config.triggers.insert(
                trigger,
                Subscription {
                    template: fields.template,
                    destinations: fields.destinations,
                },
            );
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn services_templates_and_triggers_are_read() {
        let config = NotificationConfig::parse(&data(&[
            (
                "service.webhook.ops",
                "url: http://ops.example.com/hook\nheaders:\n  Authorization: $ops-token\n",
            ),
            ("service.slack.team", "url: $slack-url\nchannel: rollouts\n"),
            (
                "template.step",
                "message: 'step {{.step}} of {{.applicationSet}}'",
            ),
            (
                "trigger.on-step-started",
                "template: step\ndestinations: [webhook.ops, slack.team]",
            ),
        ]))
        .unwrap();
        assert_eq!(
            config.services["webhook.ops"].headers["Authorization"],
            "$ops-token"
        );
        assert_eq!(
            config.services["slack.team"].channel.as_deref(),
            Some("rollouts")
        );
        assert_eq!(
            config.triggers[&Trigger::StepStarted].destinations,
            ["webhook.ops", "slack.team"]
        );
    }

    #[test]
    fn unknown_and_dangling_names_are_refused() {
        let cases = [
            (vec![("triggers", "x")], "key triggers: unknown key"),
            (
                vec![("service.email.ops", "url: x")],
                "unknown service kind \"email\"",
            ),
            (
                vec![("template.t", "message: m\ntitle: t")],
                "unknown field",
            ),
            (
                vec![("trigger.on-step-started", "template: t\ndestinations: []")],
                "template \"t\" is not configured",
            ),
            (
                vec![
                    ("template.t", "message: m"),
                    (
                        "trigger.on-step-started",
                        "template: t\ndestinations: [webhook.x]",
                    ),
                ],
                "destination \"webhook.x\" is not configured",
            ),
            (
                vec![("trigger.on-deployed", "template: t\ndestinations: []")],
                "unknown trigger",
            ),
        ];
        for (entries, expected) in cases {
            let error = NotificationConfig::parse(&data(&entries))
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{entries:?}: {error}");
        }
    }
}
