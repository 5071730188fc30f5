//! Which actions a page offers on its object, as buttons (pure): Sync, or Terminate while a
//! sync is requested or running, on an Application, and Rollback when it has an earlier history
//! entry and no automated sync (which would undo it); Pause or Resume, and Promote for the step
//! that waits for approval, on a RollingSync ApplicationSet. The buttons are `hidden`: the
//! page's script shows them only to a viewer who gave a bearer token, so without one the view
//! stays read-only. Each button names the address it posts to ([`super::action_request`]).

use std::fmt::Write as _;

use crate::actions::action::Action;
use crate::actions::rollout::waiting_step;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::rollout_input::rolling_sync;
use flotilla_core::html::escape;
use flotilla_core::sync::OperationPhase;

/// One action a page offers: the action and, for Promote, the step it approves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    pub action: Action,
    pub step: Option<usize>,
}

impl Offer {
    const fn plain(action: Action) -> Self {
        Self { action, step: None }
    }
}

/// What the Application page offers.
#[must_use]
pub fn application_offers(application: &Application) -> Vec<Offer> {
    let running = application
        .status
        .as_ref()
        .and_then(|status| status.operation_state.as_ref())
        .is_some_and(|operation| operation.phase == OperationPhase::Running);
    if running || application.spec.operation.is_some() {
        return vec![Offer::plain(Action::Terminate)];
    }
    let automated = application
        .spec
        .sync_policy
        .as_ref()
        .and_then(|policy| policy.automated.as_ref())
        .is_some_and(|automated| automated.is_enabled());
    let earlier = application
        .status
        .as_ref()
        .is_some_and(|status| status.history.len() > 1);
    let mut offers = vec![Offer::plain(Action::Sync)];
    if earlier && !automated {
        offers.push(Offer::plain(Action::Rollback));
    }
    offers
}

/// What the ApplicationSet page offers (nothing without RollingSync).
#[must_use]
pub fn application_set_offers(appset: &ApplicationSet) -> Vec<Offer> {
    let Some(strategy) = rolling_sync(appset) else {
        return Vec::new();
    };
    let mut offers = vec![Offer::plain(if strategy.paused {
        Action::Resume
    } else {
        Action::Pause
    })];
    if let Some(step) = waiting_step(appset) {
        offers.push(Offer {
            action: Action::Promote,
            step: Some(step),
        });
    }
    offers
}

/// The hidden buttons of `offers` on the object `name`.
#[must_use]
pub fn buttons(name: &str, offers: &[Offer]) -> String {
    if offers.is_empty() {
        return String::new();
    }
    let mut out = String::from(r#"<div class="actions" hidden>"#);
    for offer in offers {
        let action = offer.action;
        let mut path = format!("/{}/{name}/{action}", action.target().path_segment());
        let mut label = capitalised(action.as_str());
        if let Some(step) = offer.step {
            let _ = write!(path, "?step={step}");
            let _ = write!(label, " step {step}");
        }
        let _ = write!(
            out,
            r#"<button type="button" data-action="{action}" data-path="{}">{}</button>"#,
            escape(&path),
            escape(&label)
        );
    }
    out.push_str("</div>");
    out
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn appset(paused: bool, waiting_step: Option<i64>) -> ApplicationSet {
        let steps: Vec<_> = waiting_step
            .map(|step| json!({"step": step, "waitingForApprovalSince": "2026-01-01T00:00:00Z"}))
            .into_iter()
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "flotilla.dev/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": "stack", "namespace": "team"},
            "spec": {
                "generators": [],
                "template": {"metadata": {"name": "x"}, "spec": {"project": "default", "source": {"repoURL": "r"}, "destination": {}}},
                "strategy": {"type": "RollingSync", "paused": paused, "rollingSync": {"steps": [{}, {}]}}
            },
            "status": {"rolloutSteps": steps}
        }))
        .unwrap()
    }

    #[test]
    fn a_rolling_sync_offers_pause_or_resume_and_promote_for_the_waiting_step() {
        assert_eq!(
            application_set_offers(&appset(false, None)),
            [Offer::plain(Action::Pause)]
        );
        assert_eq!(
            application_set_offers(&appset(true, Some(2))),
            [
                Offer::plain(Action::Resume),
                Offer {
                    action: Action::Promote,
                    step: Some(2)
                }
            ]
        );
    }

    #[test]
    fn buttons_are_hidden_and_name_the_address_they_post_to() {
        let html = buttons(
            "stack",
            &[Offer {
                action: Action::Promote,
                step: Some(2),
            }],
        );
        assert_eq!(
            html,
            concat!(
                r#"<div class="actions" hidden><button type="button" data-action="promote" "#,
                r#"data-path="/applicationsets/stack/promote?step=2">Promote step 2</button></div>"#
            )
        );
        assert_eq!(buttons("stack", &[]), "");
    }

    #[test]
    fn an_application_offers_sync_or_terminate_while_a_sync_is_requested() {
        let mut application: Application = serde_json::from_value(json!({
            "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": "web", "namespace": "team"},
            "spec": {"project": "default", "destination": {}}
        }))
        .unwrap();
        assert_eq!(
            application_offers(&application),
            [Offer::plain(Action::Sync)]
        );
        application.spec.operation = Some(flotilla_core::api::application::Operation::default());
        assert_eq!(
            application_offers(&application),
            [Offer::plain(Action::Terminate)]
        );
    }

    #[test]
    fn rollback_is_offered_with_an_earlier_history_entry_and_no_automated_sync() {
        let entry = |id: i64| {
            json!({"id": id, "revision": format!("r{id}"),
                   "deployedAt": "2026-01-01T00:00:00Z", "initiatedBy": {}})
        };
        let application = |history: Vec<Value>, automated: Value| -> Application {
            serde_json::from_value(json!({
                "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
                "metadata": {"name": "web", "namespace": "team"},
                "spec": {"project": "default", "destination": {},
                         "syncPolicy": {"automated": automated}},
                "status": {"history": history}
            }))
            .unwrap()
        };
        let both = [Offer::plain(Action::Sync), Offer::plain(Action::Rollback)];
        let sync_only = [Offer::plain(Action::Sync)];
        assert_eq!(
            application_offers(&application(vec![entry(0), entry(1)], Value::Null)),
            both
        );
        assert_eq!(
            application_offers(&application(vec![entry(1)], Value::Null)),
            sync_only,
            "nothing earlier"
        );
        assert_eq!(
            application_offers(&application(vec![entry(0), entry(1)], json!({}))),
            sync_only,
            "automated sync would undo it"
        );
        assert_eq!(
            application_offers(&application(
                vec![entry(0), entry(1)],
                json!({"enabled": false})
            )),
            both,
            "automated sync suspended"
        );
    }
}
