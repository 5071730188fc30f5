//! The triggers and templates there are without configuring them: Argo CD's catalog of
//! Application triggers (`on-created`, `on-deleted`, `on-deployed`, `on-health-degraded`,
//! `on-sync-failed`, `on-sync-running`, `on-sync-status-unknown`, `on-sync-succeeded`, with the
//! same conditions and `oncePer`, and templates of the same names in Flotilla's words) and
//! Flotilla's rollout triggers of ApplicationSets (`on-step-started`, `on-step-completed`,
//! `on-step-stalled`, `on-step-waiting-for-approval`, `on-rolled-back`), whose conditions are
//! the events of [`crate::notify::occurrence`]. A ConfigMap key of the same name replaces one.
//! Pure.

use std::collections::BTreeMap;

use super::config::{EmailTemplate, Template, TriggerCondition, trigger};
use crate::notify::trigger::Trigger;

/// Whether the operation exists and is in one of the phases (`operationState` of `app`).
const OPERATION: &str = "app.status.operationState != nil and app.status.operationState.phase in";
/// Argo CD's catalog's `oncePer`: the revision the operation synced.
const PER_REVISION: &str = "app.status.operationState?.syncResult?.revision";

/// Argo CD's catalog: name, condition, `oncePer`, description, template, message, subject.
const APPLICATION: [(&str, &str, &str, &str, &str, &str); 8] = [
    (
        "on-created",
        "true",
        "app.metadata.name",
        "Application is created.",
        "app-created",
        "Application {{.app.metadata.name}} has been created.",
    ),
    (
        "on-deleted",
        "app.metadata.deletionTimestamp != nil",
        "app.metadata.name",
        "Application is deleted.",
        "app-deleted",
        "Application {{.app.metadata.name}} has been deleted.",
    ),
    (
        "on-deployed",
        "",
        PER_REVISION,
        "Application is synced and healthy. Triggered once per commit.",
        "app-deployed",
        "Application {{.app.metadata.name}} is now running revision {{.app.status.operationState.syncResult.revision}}.",
    ),
    (
        "on-health-degraded",
        "app.status.health.status == 'Degraded'",
        PER_REVISION,
        "Application has degraded",
        "app-health-degraded",
        "Application {{.app.metadata.name}} has degraded: {{.app.status.health.message}}",
    ),
    (
        "on-sync-failed",
        "['Error', 'Failed']",
        PER_REVISION,
        "Application syncing has failed",
        "app-sync-failed",
        "The sync of application {{.app.metadata.name}} failed at {{.app.status.operationState.finishedAt}}: {{.app.status.operationState.message}}",
    ),
    (
        "on-sync-running",
        "['Running']",
        PER_REVISION,
        "Application is being synced",
        "app-sync-running",
        "The sync of application {{.app.metadata.name}} started at {{.app.status.operationState.startedAt}}.",
    ),
    (
        "on-sync-status-unknown",
        "app.status.sync.status == 'Unknown'",
        PER_REVISION,
        "Application status is 'Unknown'",
        "app-sync-status-unknown",
        "The sync status of application {{.app.metadata.name}} is Unknown.",
    ),
    (
        "on-sync-succeeded",
        "['Succeeded']",
        PER_REVISION,
        "Application syncing has succeeded",
        "app-sync-succeeded",
        "The sync of application {{.app.metadata.name}} succeeded at {{.app.status.operationState.finishedAt}}.",
    ),
];

/// `on-deployed`'s condition: synced and healthy. Argo CD's catalog also compares the time
/// health last changed with the operation's; Flotilla's Application health records no
/// transition time, and an Application is evaluated only once its status was computed after
/// the operation finished (see [`super::plan`]), which is what that comparison ensures.
const DEPLOYED: &str = "app.status.operationState != nil and app.status.operationState.phase in ['Succeeded'] and app.status.health.status == 'Healthy'";

/// Flotilla's rollout triggers: trigger, template, message.
const ROLLOUT: [(Trigger, &str, &str); 5] = [
    (
        Trigger::StepStarted,
        "rollout-step-started",
        "{{.appset.metadata.name}}: step {{.event.step}} of {{.event.steps}} started rolling out {{.event.revision}}.",
    ),
    (
        Trigger::StepCompleted,
        "rollout-step-completed",
        "{{.appset.metadata.name}}: step {{.event.step}} of {{.event.steps}} is healthy at {{.event.revision}}.",
    ),
    (
        Trigger::StepStalled,
        "rollout-step-stalled",
        "{{.appset.metadata.name}}: the rollout stalled at step {{.event.step}}: {{.event.message}}",
    ),
    (
        Trigger::StepWaitingForApproval,
        "rollout-step-waiting-for-approval",
        "{{.appset.metadata.name}}: step {{.event.step}} of {{.event.steps}} waits for approval (flotilla rollout promote).",
    ),
    (
        Trigger::RolledBack,
        "rollout-rolled-back",
        "{{.appset.metadata.name}}: step {{.event.step}} failed and was rolled back: {{.event.message}}",
    ),
];

/// The rollout trigger called `name`, if it is one.
#[must_use]
pub fn rollout_trigger(name: &str) -> Option<Trigger> {
    ROLLOUT
        .iter()
        .map(|(trigger, _, _)| *trigger)
        .find(|trigger| trigger.as_str() == name)
}

/// Whether `name` is one of Flotilla's rollout triggers.
#[must_use]
pub fn is_rollout_trigger(name: &str) -> bool {
    rollout_trigger(name).is_some()
}

/// The built-in triggers.
///
/// # Panics
/// Never: the catalog's text is checked by its tests.
#[must_use]
pub fn triggers() -> BTreeMap<String, Vec<TriggerCondition>> {
    let mut all = BTreeMap::new();
    for (name, when, once_per, description, template, _) in APPLICATION {
        let when = if when.starts_with('[') {
            format!("{OPERATION} {when}")
        } else if when.is_empty() {
            DEPLOYED.to_owned()
        } else {
            when.to_owned()
        };
        let text = serde_json::json!([{
            "when": when, "oncePer": once_per, "description": description, "send": [template],
        }]);
        let conditions = trigger(&format!("trigger.{name}"), name, &text.to_string())
            .unwrap_or_else(|error| panic!("the catalog's {name}: {error}"));
        all.insert(name.to_owned(), conditions);
    }
    for (rollout, template, _) in ROLLOUT {
        all.insert(
            rollout.as_str().to_owned(),
            vec![TriggerCondition {
                when: None,
                send: vec![template.to_owned()],
                once_per: None,
                description: String::new(),
            }],
        );
    }
    all
}

/// The built-in templates: the message and an email subject (its first sentence).
#[must_use]
pub fn templates() -> BTreeMap<String, Template> {
    let application = APPLICATION
        .iter()
        .map(|(_, _, _, _, name, message)| (*name, *message));
    let rollout = ROLLOUT.iter().map(|(_, name, message)| (*name, *message));
    application
        .chain(rollout)
        .map(|(name, message)| {
            let subject = message.split_once(": ").map_or(message, |(first, _)| first);
            let template = Template {
                message: Some(message.to_owned()),
                email: Some(EmailTemplate {
                    subject: Some(subject.trim_end_matches('.').to_owned()),
                }),
                ..Template::default()
            };
            (name.to_owned(), template)
        })
        .collect()
}
