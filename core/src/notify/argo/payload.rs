//! What a notification sends: its templates rendered (Go templates with the functions of
//! ApplicationSet templates; an absent key renders as Go's `<no value>`, as in Argo CD) and
//! merged in the order the trigger's `send` names them, then the request its service takes —
//! a webhook's method, URL, path and body; Slack's `chat.postMessage` (or an incoming webhook)
//! with `text`, `attachments` and `blocks`; a Teams MessageCard; an email. Pure: the shell
//! only performs the [`Request`].

use std::collections::BTreeMap;

use flotilla_generators::params::Params;
use flotilla_generators::template::{Renderer, TemplateMode};
use serde_json::{Value, json};

use super::config::{Service, Template};

/// Slack's Web API when `apiURL` is not set.
pub const SLACK_API: &str = "https://slack.com/api/";

/// A notification that cannot be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PayloadError {
    #[error("template {template}: {message}")]
    Template { template: String, message: String },
    #[error("service {service}: {message}")]
    Service { service: String, message: String },
}

/// How a successful answer looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Any 2xx.
    Success,
    /// Slack's Web API: 2xx with `{"ok": true, …}`.
    SlackOk,
    /// A Teams connector: 2xx with the body `1`.
    TeamsOne,
}

/// What the shell sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Http {
        method: String,
        url: String,
        headers: Vec<(String, String)>,
        /// Basic authentication (user name, password).
        basic_auth: Option<(String, String)>,
        body: String,
        answer: Answer,
    },
    Email(Email),
}

/// One email to one recipient.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Email {
    pub host: String,
    pub port: u16,
    pub username: Option<String>,
    pub password: Option<String>,
    pub from: String,
    pub to: String,
    pub subject: String,
    pub body: String,
    pub html: bool,
}

/// The templates `names` of `templates` rendered with `vars` and merged (a later one's fields
/// replace an earlier one's).
///
/// # Errors
/// A template that fails to render, or renders a field that no longer fits it.
pub fn render(
    names: &[String],
    templates: &BTreeMap<String, Template>,
    vars: &serde_json::Map<String, Value>,
) -> Result<Template, PayloadError> {
    let params: Params = vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let renderer = Renderer::new(TemplateMode::Go {
        missing_key_error: false,
    });
    let mut merged = Template::default();
    for name in names {
        let error = |message: String| PayloadError::Template {
            template: name.clone(),
            message,
        };
        let template = templates
            .get(name)
            .ok_or_else(|| error("is not configured".to_owned()))?;
        let value = serde_json::to_value(template).map_err(|e| error(e.to_string()))?;
        let rendered = renderer
            .render_value(&value, &params)
            .map_err(|e| error(e.to_string()))?;
        let rendered: Template =
            serde_json::from_value(rendered).map_err(|e| error(e.to_string()))?;
        merge(&mut merged, rendered);
    }
    Ok(merged)
}

fn merge(into: &mut Template, from: Template) {
    let Template {
        message,
        title,
        email,
        slack,
        teams,
        webhook,
    } = from;
    into.message = message.or(into.message.take());
    into.title = title.or(into.title.take());
    into.email = email.or(into.email.take());
    into.slack = slack.or(into.slack.take());
    into.teams = teams.or(into.teams.take());
    into.webhook.extend(webhook);
}

/// JSON text of a template field (`slack.attachments`), parsed.
fn json_field(service: &str, field: &str, text: &str) -> Result<Value, PayloadError> {
    serde_json::from_str(text).map_err(|error| PayloadError::Service {
        service: service.to_owned(),
        message: format!("the template's {field} is not JSON once rendered: {error}"),
    })
}

/// The request that sends `notification` to `recipient` of the service `name`.
///
/// # Errors
/// A template's JSON field that is not JSON once rendered; a Teams recipient without a URL.
pub fn request(
    name: &str,
    service: &Service,
    notification: &Template,
    recipient: &str,
) -> Result<Request, PayloadError> {
    let message = notification.message.clone().unwrap_or_default();
    let json_headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    match service {
        Service::Webhook(webhook) => {
            let template = notification.webhook.get(name);
            let mut url = webhook.url.clone();
            if let Some(path) = template
                .and_then(|t| t.path.as_deref())
                .filter(|p| !p.is_empty())
            {
                url = format!(
                    "{}/{}",
                    url.trim_end_matches('/'),
                    path.trim_start_matches('/')
                );
            }
            Ok(Request::Http {
                method: template
                    .and_then(|t| t.method.clone())
                    .unwrap_or_else(|| "GET".to_owned())
                    .to_ascii_uppercase(),
                url,
                headers: webhook
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect(),
                basic_auth: webhook
                    .basic_auth
                    .as_ref()
                    .map(|auth| (auth.username.clone(), auth.password.clone())),
                body: template.and_then(|t| t.body.clone()).unwrap_or_default(),
                answer: Answer::Success,
            })
        }
        Service::Slack(slack) => {
            let template = notification.slack.clone().unwrap_or_default();
            let mut body = json!({"text": message});
            if !recipient.is_empty() {
                body["channel"] = json!(recipient);
            }
            if let Some(text) = &template.attachments {
                body["attachments"] = json_field(name, "slack.attachments", text)?;
            }
            if let Some(text) = &template.blocks {
                body["blocks"] = json_field(name, "slack.blocks", text)?;
            }
            if let Some(username) = template.username.or_else(|| slack.username.clone()) {
                body["username"] = json!(username);
            }
            if let Some(icon) = template.icon.or_else(|| slack.icon.clone()) {
                let field = if icon.starts_with(':') {
                    "icon_emoji"
                } else {
                    "icon_url"
                };
                body[field] = json!(icon);
            }
            if slack.disable_unfurl {
                body["unfurl_links"] = json!(false);
                body["unfurl_media"] = json!(false);
            }
            let (url, headers, answer) = match (&slack.webhook, &slack.token) {
                (Some(webhook), _) => (webhook.clone(), json_headers, Answer::Success),
                (None, token) => {
                    let api = slack.api_url.as_deref().unwrap_or(SLACK_API);
                    let mut headers = json_headers;
                    headers.push((
                        "authorization".to_owned(),
                        format!("Bearer {}", token.as_deref().unwrap_or_default()),
                    ));
                    let url = format!("{}/chat.postMessage", api.trim_end_matches('/'));
                    (url, headers, Answer::SlackOk)
                }
            };
            Ok(Request::Http {
                method: "POST".to_owned(),
                url,
                headers,
                basic_auth: None,
                body: body.to_string(),
                answer,
            })
        }
        Service::Teams(teams) => {
            let url = teams
                .recipient_urls
                .get(recipient)
                .ok_or_else(|| PayloadError::Service {
                    service: name.to_owned(),
                    message: format!("recipientUrls has no {recipient:?}"),
                })?;
            let template = notification.teams.clone().unwrap_or_default();
            let mut card = json!({
                "@type": "MessageCard",
                "@context": "https://schema.org/extensions",
                "text": template.text.unwrap_or(message),
            });
            let title = template.title.or_else(|| notification.title.clone());
            for (field, value) in [
                ("title", title),
                ("summary", template.summary),
                ("themeColor", template.theme_color),
            ] {
                if let Some(value) = value {
                    card[field] = json!(value);
                }
            }
            let mut sections = match &template.sections {
                Some(text) => json_field(name, "teams.sections", text)?,
                None => json!([]),
            };
            if let Some(text) = &template.facts
                && let Some(list) = sections.as_array_mut()
            {
                list.push(json!({"facts": json_field(name, "teams.facts", text)?}));
            }
            if sections.as_array().is_none_or(|s| !s.is_empty()) {
                card["sections"] = sections;
            }
            if let Some(text) = &template.potential_action {
                card["potentialAction"] = json_field(name, "teams.potentialAction", text)?;
            }
            Ok(Request::Http {
                method: "POST".to_owned(),
                url: url.clone(),
                headers: json_headers,
                basic_auth: None,
                body: card.to_string(),
                answer: Answer::TeamsOne,
            })
        }
        Service::Email(_) if recipient.is_empty() => Err(PayloadError::Service {
            service: name.to_owned(),
            message:
                "an email needs a recipient address (subscribe.<trigger>.<service>: <address>)"
                    .to_owned(),
        }),
        Service::Email(email) => Ok(Request::Email(Email {
            host: email.host.clone(),
            port: email.port,
            username: email.username.clone(),
            password: email.password.clone(),
            from: email.from.clone(),
            to: recipient.to_owned(),
            subject: notification
                .email
                .as_ref()
                .and_then(|e| e.subject.clone())
                .or_else(|| notification.title.clone())
                .unwrap_or_default(),
            body: message,
            html: email.html,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::argo::config::{EmailService, TeamsService, TeamsTemplate};

    #[test]
    fn teams_gets_a_message_card_and_email_an_addressed_message() {
        let teams = Service::Teams(TeamsService {
            recipient_urls: [("ops".to_owned(), "http://teams/hook".to_owned())].into(),
        });
        let notification = Template {
            message: Some("web failed".into()),
            teams: Some(TeamsTemplate {
                title: Some("Sync failed".into()),
                facts: Some(r#"[{"name": "Sync Status", "value": "OutOfSync"}]"#.into()),
                potential_action: Some(r#"[{"@type": "OpenUri", "name": "Open"}]"#.into()),
                ..TeamsTemplate::default()
            }),
            ..Template::default()
        };
        let Ok(Request::Http {
            url, body, answer, ..
        }) = request("teams", &teams, &notification, "ops")
        else {
            panic!("a request")
        };
        assert_eq!(
            (url.as_str(), answer),
            ("http://teams/hook", Answer::TeamsOne)
        );
        let card: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            card,
            json!({
                "@type": "MessageCard", "@context": "https://schema.org/extensions",
                "text": "web failed", "title": "Sync failed",
                "sections": [{"facts": [{"name": "Sync Status", "value": "OutOfSync"}]}],
                "potentialAction": [{"@type": "OpenUri", "name": "Open"}],
            })
        );
        assert_eq!(
            request("teams", &teams, &notification, "nobody")
                .unwrap_err()
                .to_string(),
            "service teams: recipientUrls has no \"nobody\""
        );

        let email = Service::Email(EmailService {
            host: "smtp".into(),
            port: 587,
            from: "flotilla@example.com".into(),
            ..EmailService::default()
        });
        let Ok(Request::Email(sent)) = request("ops", &email, &notification, "a@example.com")
        else {
            panic!("an email")
        };
        assert_eq!(
            (sent.to.as_str(), sent.body.as_str()),
            ("a@example.com", "web failed")
        );
        assert!(
            request("ops", &email, &notification, "").is_err(),
            "no address"
        );
    }
}
