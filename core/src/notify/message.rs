//! What a delivery sends: its template rendered with the event's variables by the engine of
//! ApplicationSet templates (Go templates with sprig's functions, `missingkey=error`), as the
//! body its service takes — a generic webhook gets the event as JSON with the message, a Slack
//! incoming webhook `{"text": …}` (with `channel` and `username` when configured). Pure.

use flotilla_generators::params::Params;
use flotilla_generators::template::{Renderer, TemplateError, TemplateMode};
use serde_json::{Value, json};

use super::config::{Service, ServiceKind};
use super::ledger::Delivery;

/// The message of `delivery` from its template's `text`.
///
/// # Errors
/// The template does not parse, uses a variable the event does not have, or fails.
pub fn render(text: &str, delivery: &Delivery) -> Result<String, TemplateError> {
    let params: Params = delivery
        .vars
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    Renderer::new(TemplateMode::Go {
        missing_key_error: true,
    })
    .render_str(&format!("template.{}", delivery.template), text, &params)
}

/// The JSON body POSTed to `service` for `delivery` with `message`.
#[must_use]
pub fn body(service: &Service, delivery: &Delivery, message: &str) -> Value {
    match service.kind {
        ServiceKind::Webhook => json!({
            "id": delivery.id,
            "trigger": delivery.trigger.as_str(),
            "message": message,
            "event": delivery.vars,
        }),
        ServiceKind::Slack => {
            let mut body = json!({"text": message});
            if let Some(channel) = &service.channel {
                body["channel"] = json!(channel);
            }
            if let Some(username) = &service.username {
                body["username"] = json!(username);
            }
            body
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::notify::trigger::Trigger;

    fn delivery() -> Delivery {
        let mut vars = serde_json::Map::new();
        vars.insert("applicationSet".into(), json!("platform"));
        vars.insert("step".into(), json!("2"));
        vars.insert("revision".into(), json!("0123456789abcdef"));
        Delivery {
            id: "applicationset.platform|on-step-started/step-2/0123|slack.team".into(),
            object: "applicationset.platform".into(),
            trigger: Trigger::StepStarted,
            destination: "slack.team".into(),
            template: "step".into(),
            vars,
        }
    }

    #[test]
    fn templates_have_the_applicationset_functions() {
        let text =
            "{{ .applicationSet | upper }}: step {{ .step }} started at {{ trunc 7 .revision }}";
        assert_eq!(
            render(text, &delivery()).unwrap(),
            "PLATFORM: step 2 started at 0123456"
        );
        let missing = render("{{ .nope }}", &delivery()).unwrap_err();
        assert!(missing.field.contains("template.step"), "{missing}");
    }

    #[test]
    fn each_service_kind_has_its_body() {
        let slack = Service {
            kind: ServiceKind::Slack,
            url: "http://x".into(),
            headers: BTreeMap::new(),
            channel: Some("rollouts".into()),
            username: None,
        };
        assert_eq!(
            body(&slack, &delivery(), "hi"),
            json!({"text": "hi", "channel": "rollouts"})
        );
        let webhook = Service {
            kind: ServiceKind::Webhook,
            ..slack
        };
        let sent = body(&webhook, &delivery(), "hi");
        assert_eq!(sent["trigger"], "on-step-started");
        assert_eq!(sent["event"]["step"], "2");
        assert_eq!(sent["message"], "hi");
    }
}
