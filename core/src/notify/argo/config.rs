//! The `argocd-notifications-cm` ConfigMap, read as Argo CD's notifications controller reads it:
//! `trigger.<name>` (conditions: `when`, `send`, `oncePer`, `description`), `template.<name>`
//! (`message`, `title`, `email`, `slack`, `teams`, `webhook.<service>`), `service.<type>` and
//! `service.<type>.<name>` (webhook, slack, teams, email), `defaultTriggers`,
//! `defaultTriggers.<service>`, `subscriptions` and `context`. A `$key` in a service's settings
//! is the key of the `argocd-notifications-secret` Secret. Argo CD's default triggers and
//! templates ([`super::catalog`]) are there unless the ConfigMap defines the same name. Every
//! key and field is checked; what Flotilla does not implement is refused by name, with the key
//! it is in. Pure.

use std::collections::BTreeMap;

use flotilla_generators::template::{Renderer, TemplateMode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::catalog;
use super::subscription::GlobalSubscription;
use crate::rollout::condition::{Condition, TRIGGER};

/// The ConfigMap's name.
pub const CONFIG_MAP: &str = "argocd-notifications-cm";
/// The Secret `$key` values are read from.
pub const SECRET: &str = "argocd-notifications-secret";

/// One condition of a trigger.
#[derive(Clone, Debug, PartialEq)]
pub struct TriggerCondition {
    /// When it holds; `None` for Flotilla's rollout triggers, whose condition is built in.
    pub when: Option<Condition>,
    /// The templates of the notification it sends.
    pub send: Vec<String>,
    /// Its notification is sent once per value of this expression (and again only when the
    /// value changes); without it, once each time the condition becomes true.
    pub once_per: Option<Condition>,
    pub description: String,
}

/// A template: the fields of the notification, each a Go template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Template {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<EmailTemplate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<SlackTemplate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teams: Option<TeamsTemplate>,
    /// By webhook service name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub webhook: BTreeMap<String, WebhookTemplate>,
}

/// `email` of a template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EmailTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// `slack` of a template (`attachments` and `blocks` are JSON text).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SlackTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
}

/// `teams` of a template: a MessageCard's fields (`facts`, `sections` and `potentialAction`
/// are JSON text).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TeamsTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme_color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub potential_action: Option<String>,
}

/// `webhook.<service>` of a template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// A service: where notifications go, with its `$key`s replaced by the Secret's values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Service {
    Webhook(WebhookService),
    Slack(SlackService),
    Teams(TeamsService),
    Email(EmailService),
}

impl Service {
    /// Its type (`serviceType` of templates).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Webhook(_) => "webhook",
            Self::Slack(_) => "slack",
            Self::Teams(_) => "teams",
            Self::Email(_) => "email",
        }
    }
}

/// `service.webhook.<name>`: an HTTP request to `url` (plus the template's path).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookService {
    pub url: String,
    #[serde(default)]
    pub headers: Vec<Header>,
    #[serde(default)]
    pub basic_auth: Option<BasicAuth>,
}

/// One header of a webhook.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// A webhook's basic authentication.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    pub username: String,
    pub password: String,
}

/// `service.slack`: Slack's `chat.postMessage` with a bot `token` (at `apiURL`, Slack's own by
/// default), or an incoming `webhook` URL (Flotilla's addition).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SlackService {
    #[serde(default)]
    pub token: Option<String>,
    #[serde(default, rename = "apiURL")]
    pub api_url: Option<String>,
    #[serde(default)]
    pub webhook: Option<String>,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub icon: Option<String>,
    #[serde(default)]
    pub disable_unfurl: bool,
}

/// `service.teams`: an Office 365 connector's incoming webhook URL per recipient.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TeamsService {
    pub recipient_urls: BTreeMap<String, String>,
}

/// `service.email`: an SMTP server (STARTTLS when it offers it, TLS from the start on port
/// 465).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EmailService {
    pub host: String,
    pub port: u16,
    pub from: String,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
    /// The message is HTML.
    #[serde(default)]
    pub html: bool,
}

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NotificationsConfig {
    pub triggers: BTreeMap<String, Vec<TriggerCondition>>,
    pub templates: BTreeMap<String, Template>,
    /// By service name (`<name>` of `service.<type>.<name>`, else `<type>`).
    pub services: BTreeMap<String, Service>,
    /// The triggers of a subscription that names none.
    pub default_triggers: Vec<String>,
    /// By service name, instead of `default_triggers`.
    pub service_default_triggers: BTreeMap<String, Vec<String>>,
    /// Subscriptions of every Application.
    pub subscriptions: Vec<GlobalSubscription>,
    /// `context` of templates.
    pub context: BTreeMap<String, String>,
}

/// A ConfigMap that cannot be used; nothing of it is.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("ConfigMap {CONFIG_MAP}: key {key}: {message}")]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

/// An error at `key`.
pub(super) fn key_error(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.to_owned(),
        message: message.into(),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(key: &str, text: &str) -> Result<T, ConfigError> {
    serde_saphyr::from_str(text).map_err(|error| key_error(key, error.to_string()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ConditionFields {
    #[serde(default)]
    when: Option<String>,
    send: Vec<String>,
    #[serde(default)]
    once_per: Option<String>,
    #[serde(default)]
    description: String,
}

/// A trigger's value: a list of conditions, or one.
#[derive(Deserialize)]
#[serde(untagged)]
enum ConditionList {
    Many(Vec<ConditionFields>),
    One(ConditionFields),
}

/// The conditions of `trigger.<name>` (at `key`) from `text`.
pub(super) fn trigger(
    key: &str,
    name: &str,
    text: &str,
) -> Result<Vec<TriggerCondition>, ConfigError> {
    let list = match parse::<ConditionList>(key, text) {
        Ok(ConditionList::Many(list)) => list,
        Ok(ConditionList::One(one)) => vec![one],
        // The list's error names the field.
        Err(_) => parse::<Vec<ConditionFields>>(key, text)?,
    };
    let rollout = catalog::is_rollout_trigger(name);
    list.into_iter()
        .enumerate()
        .map(|(i, fields)| {
            let at = |field: &str| format!("[{i}].{field}");
            let expression = |field: &str, text: &str| {
                Condition::parse_in(text, TRIGGER)
                    .map_err(|error| key_error(key, format!("{}: {error}", at(field))))
            };
            let when = match (&fields.when, rollout) {
                (Some(_), true) => {
                    return Err(key_error(
                        key,
                        format!("{}: {name} is Flotilla's rollout trigger: its condition is built in (only send and description may be set)", at("when")),
                    ));
                }
                (Some(text), false) => Some(expression("when", text)?),
                (None, true) => None,
                (None, false) => return Err(key_error(key, format!("{}: missing", at("when")))),
            };
            let once_per = match (&fields.once_per, rollout) {
                (Some(_), true) => {
                    return Err(key_error(
                        key,
                        format!("{}: {name} is Flotilla's rollout trigger: it is sent once per event", at("oncePer")),
                    ));
                }
                (Some(text), false) => Some(expression("oncePer", text)?),
                (None, _) => None,
            };
            if fields.send.is_empty() {
                return Err(key_error(key, format!("{}: names no template", at("send"))));
            }
            Ok(TriggerCondition {
                when,
                send: fields.send,
                once_per,
                description: fields.description,
            })
        })
        .collect()
}

/// `template.<name>` (at `key`) from `text`, its Go templates checked.
pub(super) fn template(key: &str, text: &str) -> Result<Template, ConfigError> {
    let template: Template = parse(key, text)?;
    let value = serde_json::to_value(&template).unwrap_or(Value::Null);
    Renderer::new(TemplateMode::Go {
        missing_key_error: false,
    })
    .prepare(&value)
    .map_err(|error| key_error(key, error.to_string()))?;
    Ok(template)
}

/// `text` with each `$key` replaced by the Secret's value of `key`.
fn resolve(
    key: &str,
    text: &str,
    secret: &BTreeMap<String, String>,
) -> Result<String, ConfigError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .unwrap_or(after.len());
        let name = after[..end].trim_end_matches('.');
        if name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        let value = secret.get(name).ok_or_else(|| {
            key_error(key, format!("${name}: Secret {SECRET} has no key {name:?}"))
        })?;
        out.push_str(value);
        rest = &after[name.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `service.<type>[.<name>]` (at `key`): its name and service, its `$key`s resolved.
fn service(
    key: &str,
    rest: &str,
    text: &str,
    secret: &BTreeMap<String, String>,
) -> Result<(String, Service), ConfigError> {
    let (kind, name) = rest.split_once('.').unwrap_or((rest, rest));
    let resolved = resolve(key, text, secret)?;
    let service = match kind {
        "webhook" => Service::Webhook(parse(key, &resolved)?),
        "slack" => {
            let slack: SlackService = parse(key, &resolved)?;
            if slack.token.is_none() == slack.webhook.is_none() {
                return Err(key_error(
                    key,
                    "set token (chat.postMessage) or webhook (an incoming webhook URL), one of them",
                ));
            }
            Service::Slack(slack)
        }
        "teams" => Service::Teams(parse(key, &resolved)?),
        "email" => Service::Email(parse(key, &resolved)?),
        other => {
            return Err(key_error(
                key,
                format!(
                    "service type {other:?} is not supported (supported: webhook, slack, teams, email)"
                ),
            ));
        }
    };
    if kind == "webhook" && name == kind {
        return Err(key_error(key, "expected service.webhook.<name>"));
    }
    Ok((name.to_owned(), service))
}

impl NotificationsConfig {
    /// The configuration of the ConfigMap's `data`, with the Secret's keys `secret`.
    ///
    /// # Errors
    /// An unknown key or field, a value that is not what its key needs, an expression or a
    /// template that does not parse, a `$key` the Secret lacks, a trigger naming a template
    /// that does not exist, a default trigger or subscription naming what does not exist.
    pub fn parse(
        data: &BTreeMap<String, String>,
        secret: &BTreeMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let mut config = Self {
            triggers: catalog::triggers(),
            templates: catalog::templates(),
            ..Self::default()
        };
        for (key, text) in data {
            if let Some(name) = key.strip_prefix("trigger.") {
                config
                    .triggers
                    .insert(name.to_owned(), trigger(key, name, text)?);
            } else if let Some(name) = key.strip_prefix("template.") {
                config
                    .templates
                    .insert(name.to_owned(), template(key, text)?);
            } else if let Some(rest) = key.strip_prefix("service.") {
                let (name, service) = service(key, rest, text, secret)?;
                config.services.insert(name, service);
            } else if key == "defaultTriggers" {
                config.default_triggers = parse(key, text)?;
            } else if let Some(service) = key.strip_prefix("defaultTriggers.") {
                config
                    .service_default_triggers
                    .insert(service.to_owned(), parse(key, text)?);
            } else if key == "subscriptions" {
                config.subscriptions = GlobalSubscription::parse_all(key, text)?;
            } else if key == "context" {
                config.context = parse(key, text)?;
            } else {
                return Err(key_error(
                    key,
                    "unknown key (expected trigger.<name>, template.<name>, service.<type>[.<name>], defaultTriggers[.<service>], subscriptions or context)",
                ));
            }
        }
        config.check()?;
        Ok(config)
    }

    /// Every name a trigger, default trigger or subscription uses exists.
    fn check(&self) -> Result<(), ConfigError> {
        for (name, conditions) in &self.triggers {
            for (i, condition) in conditions.iter().enumerate() {
                if let Some(missing) = condition
                    .send
                    .iter()
                    .find(|t| !self.templates.contains_key(*t))
                {
                    return Err(key_error(
                        &format!("trigger.{name}"),
                        format!(
                            "[{i}].send: template {missing:?} is not configured (template.{missing})"
                        ),
                    ));
                }
            }
        }
        let defaults = std::iter::once(("defaultTriggers".to_owned(), &self.default_triggers))
            .chain(
                self.service_default_triggers
                    .iter()
                    .map(|(service, triggers)| (format!("defaultTriggers.{service}"), triggers)),
            );
        for (key, triggers) in defaults {
            if let Some(missing) = triggers.iter().find(|t| !self.triggers.contains_key(*t)) {
                return Err(key_error(
                    &key,
                    format!("trigger {missing:?} is not configured"),
                ));
            }
        }
        for service in self.service_default_triggers.keys() {
            if !self.services.contains_key(service) {
                return Err(key_error(
                    &format!("defaultTriggers.{service}"),
                    format!("service {service:?} is not configured"),
                ));
            }
        }
        for subscription in &self.subscriptions {
            subscription.check("subscriptions", self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries.iter().map(|&(k, v)| (k.into(), v.into())).collect()
    }

    fn secret() -> BTreeMap<String, String> {
        data(&[("slack-token", "xoxb-1"), ("smtp-password", "pw")])
    }

    #[test]
    fn argo_cd_keys_are_read_with_the_secret_and_the_catalog() {
        let config = NotificationsConfig::parse(
            &data(&[
                ("service.slack", "token: $slack-token\napiURL: http://127.0.0.1:1/api\n"),
                ("service.webhook.ci", "url: http://ci\nheaders:\n- name: Authorization\n  value: token $slack-token\nbasicAuth:\n  username: u\n  password: $smtp-password\n"),
                ("service.email.ops", "host: 127.0.0.1\nport: 25\nfrom: flotilla@example.com\npassword: $smtp-password\n"),
                ("service.teams", "recipientUrls:\n  ops: http://teams\n"),
                ("template.mine", "message: hi {{.app.metadata.name}}\nwebhook:\n  ci:\n    method: POST\n    body: '{}'\n"),
                ("trigger.on-mine", "when: app.status.sync.status == 'Synced'\nsend: [mine]\n"),
                ("defaultTriggers", "- on-sync-failed\n"),
                ("defaultTriggers.ops", "- on-deployed\n"),
                ("subscriptions", "- recipients: [slack:ops, ci]\n  triggers: [on-mine]\n  selector: team=a\n"),
                ("context", "argocdUrl: https://flotilla.example.com\n"),
            ]),
            &secret(),
        )
        .unwrap();
        let Service::Slack(slack) = &config.services["slack"] else {
            panic!()
        };
        assert_eq!(slack.token.as_deref(), Some("xoxb-1"));
        let Service::Webhook(ci) = &config.services["ci"] else {
            panic!()
        };
        assert_eq!(ci.headers[0].value, "token xoxb-1");
        assert_eq!(ci.basic_auth.as_ref().unwrap().password, "pw");
        assert!(matches!(config.services["ops"], Service::Email(_)));
        assert_eq!(config.triggers["on-mine"].len(), 1);
        for catalog in [
            "on-created",
            "on-deleted",
            "on-deployed",
            "on-health-degraded",
            "on-sync-failed",
            "on-sync-running",
            "on-sync-status-unknown",
            "on-sync-succeeded",
            "on-step-started",
            "on-rolled-back",
        ] {
            assert!(config.triggers.contains_key(catalog), "{catalog}");
        }
        assert_eq!(config.triggers["on-deployed"][0].send, ["app-deployed"]);
        assert_eq!(config.context["argocdUrl"], "https://flotilla.example.com");
    }

    #[test]
    fn what_is_not_supported_is_refused_by_key_and_name() {
        let cases: [(&[(&str, &str)], &str); 11] = [
            (
                &[(
                    "trigger.on-x",
                    "- when: app.metadata.name matches '^a'\n  send: [app-created]",
                )],
                "key trigger.on-x: [0].when: \"app.metadata.name matches '^a'\" at character 19",
            ),
            (
                &[(
                    "trigger.on-x",
                    "- when: sprig.upper(app.metadata.name) == 'A'\n  send: [app-created]",
                )],
                "key trigger.on-x: [0].when: \"sprig.upper(app.metadata.name) == 'A'\" at character 1: unknown name \"sprig\"",
            ),
            (
                &[("trigger.on-x", "- when: 'true'\n  send: [nope]")],
                "key trigger.on-x: [0].send: template \"nope\" is not configured",
            ),
            (
                &[(
                    "trigger.on-step-started",
                    "- when: 'true'\n  send: [app-created]",
                )],
                "on-step-started is Flotilla's rollout trigger",
            ),
            (
                &[(
                    "template.t",
                    "message: x\nslack:\n  groupingKey: '{{.app.metadata.name}}'",
                )],
                "unknown field `groupingKey`, expected one of attachments, blocks, username, icon",
            ),
            (
                &[("template.t", "message: '{{ .app.metadata.name '")],
                "key template.t:",
            ),
            (
                &[("service.pagerduty", "token: x")],
                "key service.pagerduty: service type \"pagerduty\" is not supported",
            ),
            (
                &[("service.slack", "token: $nope")],
                "key service.slack: $nope: Secret argocd-notifications-secret has no key \"nope\"",
            ),
            (
                &[("service.slack", "token: x\nsigningSecret: y")],
                "unknown field `signingSecret`",
            ),
            (
                &[("defaultTriggers", "- on-nothing")],
                "key defaultTriggers: trigger \"on-nothing\" is not configured",
            ),
            (&[("triggers", "x")], "key triggers: unknown key"),
        ];
        for (entries, expected) in cases {
            let error = NotificationsConfig::parse(&data(entries), &secret())
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{entries:?}: {error}");
            assert!(
                error.starts_with("ConfigMap argocd-notifications-cm: key "),
                "{error}"
            );
        }
    }
}
