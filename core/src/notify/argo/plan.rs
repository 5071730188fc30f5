//! One object's notifications now: its subscriptions ([`super::subscription`]), each
//! subscribed trigger's conditions evaluated against it — an Application's expressions, an
//! ApplicationSet's rollout events — the state of what was sent ([`super::state`]) updated, and
//! the requests due. As Argo CD does, an Application whose status was last computed before its
//! last operation is left for a later pass (its health and sync are not yet those of the
//! operation). An object created before the notifier started and without any state, the first
//! time the notifier sees it, gets its state recorded without sending (configuring notifications does not announce every
//! past deploy). An expression that cannot be evaluated is a problem named by its ConfigMap key,
//! never a silent false. Pure.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::catalog::rollout_trigger;
use super::config::{CONFIG_MAP, NotificationsConfig};
use super::payload::{Request, render, request};
use super::state::{NOTIFIED, Notified, NotifiedKey};
use super::subscription::{Destination, destinations};
use super::view::application_view;
use crate::notify::occurrence::Occurrence;
use crate::rollout::condition::Scope;

/// The object notifications are about.
#[derive(Clone, Copy, Debug)]
pub enum Subject<'a> {
    /// An Application (its JSON) and its AppProject's, when there is one.
    Application {
        app: &'a Value,
        project: Option<&'a Value>,
    },
    /// An ApplicationSet (its JSON) and the rollout events its status shows.
    ApplicationSet {
        appset: &'a Value,
        occurrences: &'a [Occurrence],
    },
}

/// One notification to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Send {
    pub trigger: String,
    pub destination: Destination,
    /// Its key in the state (forgotten when the delivery fails).
    pub key: NotifiedKey,
    /// What to send, or why it cannot be made.
    pub request: Result<Request, String>,
}

/// What to do about one object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub sends: Vec<Send>,
    /// The state after this pass (before any delivery fails).
    pub notified: Notified,
    /// Subscriptions and conditions that could not be used, each named.
    pub problems: Vec<String>,
}

/// The annotations (or labels) of `object`'s metadata.
fn strings(object: &Value, field: &str) -> std::collections::BTreeMap<String, String> {
    object["metadata"][field]
        .as_object()
        .map(|map| {
            map.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the Application's health and sync were computed since its last operation started
/// (Argo CD asks since it finished, as its controller recomputes them at every refresh;
/// Flotilla's writes them when they change, and at least once after an operation starts —
/// what the rollout gate waits for too).
fn refreshed(app: &Value) -> bool {
    let time = |value: &Value| value.as_str().and_then(|t| t.parse::<Timestamp>().ok());
    match (
        time(&app["status"]["operationState"]["startedAt"]),
        time(&app["status"]["reconciledAt"]),
    ) {
        (Some(started), Some(reconciled)) => started <= reconciled,
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// The plan for `subject` under `config` at `now`, its state starting from `notified` (the
/// notifier's latest for it; `None` the first time this notifier plans it, which then reads
/// its annotation); `started` is when the notifier started.
#[must_use]
pub fn plan(
    subject: Subject<'_>,
    notified: Option<Notified>,
    config: &NotificationsConfig,
    secret: &std::collections::BTreeMap<String, String>,
    now: Timestamp,
    started: Timestamp,
) -> Plan {
    let object = match subject {
        Subject::Application { app, .. } => app,
        Subject::ApplicationSet { appset, .. } => appset,
    };
    let annotations = strings(object, "annotations");
    let first_sight = notified.is_none();
    let mut plan = Plan {
        notified: notified.unwrap_or_else(|| {
            Notified::from_annotation(annotations.get(NOTIFIED).map(String::as_str))
        }),
        ..Plan::default()
    };
    let project = match subject {
        Subject::Application { project, .. } => project.map(|p| strings(p, "annotations")),
        Subject::ApplicationSet { .. } => None,
    };
    let (subscribed, problems) = destinations(
        &annotations,
        project.as_ref(),
        &strings(object, "labels"),
        config,
    );
    plan.problems = problems;
    if subscribed.is_empty() {
        return plan;
    }
    if let Subject::Application { app, .. } = subject
        && !refreshed(app)
    {
        return plan;
    }
    let created = object["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<Timestamp>().ok());
    // Creation times have whole seconds: one of the notifier's first second counts as new.
    let quiet = first_sight
        && plan.notified.is_empty()
        && created.is_some_and(|c| c.as_second() < started.as_second());
    let mut vars = serde_json::Map::new();
    vars.insert("context".into(), json!(config.context));
    vars.insert("secrets".into(), json!(secret));
    let view;
    match subject {
        Subject::Application { app, project } => {
            view = application_view(app);
            vars.insert("app".into(), view.clone());
            vars.insert("appProject".into(), project.cloned().unwrap_or(Value::Null));
        }
        Subject::ApplicationSet { appset, .. } => {
            view = Value::Null;
            vars.insert("appset".into(), appset.clone());
        }
    }
    let null = Value::Null;
    let project_json = match subject {
        Subject::Application { project, .. } => project.unwrap_or(&null),
        Subject::ApplicationSet { .. } => &null,
    };
    let roots = [("app", &view), ("appProject", project_json)];
    let scope = Scope { roots: &roots, now };
    let unix = now.as_second();
    for (trigger, destinations) in &subscribed {
        let conditions = &config.triggers[trigger];
        // (condition index, `when` text, oncePer value, the event's variables) of each
        // condition that holds; and the keys of those that do not.
        let mut holding = Vec::new();
        match (subject, rollout_trigger(trigger)) {
            (Subject::Application { .. }, Some(_)) => {
                plan.problems.push(format!(
                    "{trigger} is a rollout trigger of ApplicationSets; an Application cannot subscribe to it"
                ));
                continue;
            }
            (Subject::ApplicationSet { .. }, None) => {
                plan.problems.push(format!(
                    "{trigger} is a trigger of Applications; an ApplicationSet can subscribe only to the rollout triggers"
                ));
                continue;
            }
            (Subject::ApplicationSet { occurrences, .. }, Some(rollout)) => {
                for occurrence in occurrences.iter().filter(|o| o.trigger == rollout) {
                    holding.push((
                        0,
                        String::new(),
                        Some(occurrence.key.clone()),
                        Some(&occurrence.vars),
                    ));
                }
            }
            (Subject::Application { .. }, None) => {
                for (index, condition) in conditions.iter().enumerate() {
                    let Some(when) = &condition.when else {
                        continue;
                    };
                    let at = |field: &str| {
                        format!("ConfigMap {CONFIG_MAP}: key trigger.{trigger}: [{index}].{field}")
                    };
                    let holds = match when.holds(scope) {
                        Ok(holds) => holds,
                        Err(error) => {
                            plan.problems.push(format!("{}: {error}", at("when")));
                            continue;
                        }
                    };
                    let once_per = match condition
                        .once_per
                        .as_ref()
                        .map(|c| c.text_value(scope))
                        .transpose()
                    {
                        Ok(value) => value,
                        Err(error) => {
                            plan.problems.push(format!("{}: {error}", at("oncePer")));
                            continue;
                        }
                    };
                    if holds {
                        holding.push((index, when.text().to_owned(), once_per, None));
                    } else {
                        for destination in destinations {
                            let key = NotifiedKey::new(
                                trigger,
                                index,
                                when.text(),
                                once_per.as_deref(),
                                destination,
                            );
                            plan.notified.observe(&key, false, unix);
                        }
                    }
                }
            }
        }
        for (index, when, once_per, event) in holding {
            for destination in destinations {
                let key = NotifiedKey::new(trigger, index, &when, once_per.as_deref(), destination);
                if !plan.notified.observe(&key, true, unix) || quiet {
                    continue;
                }
                let Some(service) = config.services.get(&destination.service) else {
                    continue;
                };
                let mut vars = vars.clone();
                vars.insert("serviceType".into(), json!(service.kind()));
                vars.insert("recipient".into(), json!(destination.recipient));
                if let Some(event) = event {
                    vars.insert("event".into(), Value::Object(event.clone()));
                }
                let request = render(&conditions[index].send, &config.templates, &vars)
                    .and_then(|notification| {
                        request(
                            &destination.service,
                            service,
                            &notification,
                            &destination.recipient,
                        )
                    })
                    .map_err(|error| error.to_string());
                plan.sends.push(Send {
                    trigger: trigger.clone(),
                    destination: destination.clone(),
                    key,
                    request,
                });
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::notify::argo::payload::Answer;
    use crate::notify::trigger::Trigger;

    fn config() -> NotificationsConfig {
        let data: BTreeMap<String, String> = [
            ("service.webhook.ci", "url: http://ci.example.com/base\n"),
            ("service.slack", "token: xoxb\n"),
            ("template.app-deployed", "message: '{{.app.metadata.name}} at {{.app.status.operationState.syncResult.revision}} for {{.recipient}} via {{.serviceType}}'\nwebhook:\n  ci:\n    method: POST\n    path: /deployed/{{.app.metadata.name}}\n    body: '{\"revision\": \"{{.app.status.operationState.syncResult.revision}}\"}'\n"),
            ("trigger.on-broken", "- when: time.Parse(app.status.health.lastTransitionTime).Before(time.Now())\n  send: [app-deployed]\n"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        NotificationsConfig::parse(&data, &BTreeMap::new()).unwrap()
    }

    fn app(revision: &str, annotations: Value) -> Value {
        json!({
            "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": "2026-12-05T10:00:00Z",
                "annotations": annotations},
            "spec": {"project": "default"},
            "status": {
                "reconciledAt": "2026-12-05T11:05:00Z",
                "health": {"status": "Healthy"},
                "sync": {"status": "Synced", "revision": revision},
                "operationState": {"phase": "Succeeded", "revision": revision, "operationId": "o",
                    "startedAt": "2026-12-05T11:00:00Z", "finishedAt": "2026-12-05T11:04:00Z"}
            }
        })
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn run(app: &Value, notified: Option<Notified>) -> Plan {
        plan(
            Subject::Application { app, project: None },
            notified,
            &config(),
            &BTreeMap::new(),
            at("2026-12-05T11:06:00Z"),
            at("2026-12-05T09:00:00Z"),
        )
    }

    #[test]
    fn on_deployed_is_sent_once_per_revision_to_each_destination() {
        let subscribed = json!({
            "notifications.argoproj.io/subscribe.on-deployed.ci": "",
            "notifications.argoproj.io/subscribe.on-deployed.slack": "deploys;ops",
        });
        let first = run(&app("abc", subscribed.clone()), None);
        assert!(first.problems.is_empty(), "{:?}", first.problems);
        let sent: Vec<(String, String)> = first
            .sends
            .iter()
            .map(|s| {
                (
                    s.destination.service.clone(),
                    s.destination.recipient.clone(),
                )
            })
            .collect();
        assert_eq!(
            sent,
            [
                ("ci".into(), String::new()),
                ("slack".into(), "deploys".into()),
                ("slack".into(), "ops".into())
            ]
        );
        let Ok(Request::Http {
            method,
            url,
            body,
            answer,
            ..
        }) = &first.sends[0].request
        else {
            panic!("{:?}", first.sends[0].request)
        };
        assert_eq!(
            (method.as_str(), url.as_str()),
            ("POST", "http://ci.example.com/base/deployed/web")
        );
        assert_eq!(body, "{\"revision\": \"abc\"}");
        assert_eq!(*answer, Answer::Success);
        let Ok(Request::Http {
            url, body, answer, ..
        }) = &first.sends[1].request
        else {
            panic!()
        };
        assert_eq!(url, "https://slack.com/api/chat.postMessage");
        assert_eq!(*answer, Answer::SlackOk);
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            body,
            json!({"channel": "deploys", "text": "web at abc for deploys via slack"})
        );

        // The state, written to the annotation and read back: nothing more for abc; def is new.
        let mut annotations = subscribed.clone();
        annotations[NOTIFIED] = json!(first.notified.to_annotation());
        assert!(run(&app("abc", annotations.clone()), None).sends.is_empty());
        assert_eq!(run(&app("def", annotations), None).sends.len(), 3);
    }

    #[test]
    fn an_application_whose_status_predates_its_operation_waits() {
        let mut stale = app(
            "abc",
            json!({"notifications.argoproj.io/subscribe.on-deployed.ci": ""}),
        );
        stale["status"]["reconciledAt"] = json!("2026-12-05T10:59:00Z");
        let waiting = run(&stale, None);
        assert!(waiting.sends.is_empty() && waiting.notified.is_empty());
    }

    #[test]
    fn an_application_older_than_the_notifier_without_state_is_recorded_quietly() {
        let app = app(
            "abc",
            json!({"notifications.argoproj.io/subscribe.on-deployed.ci": ""}),
        );
        let quiet = plan(
            Subject::Application {
                app: &app,
                project: None,
            },
            None,
            &config(),
            &BTreeMap::new(),
            at("2026-12-05T11:06:00Z"),
            at("2026-12-05T11:00:00Z"),
        );
        assert!(quiet.sends.is_empty());
        assert!(!quiet.notified.is_empty());
        // Seen before (with nothing recorded yet), it is not quiet any more.
        let later = plan(
            Subject::Application {
                app: &app,
                project: None,
            },
            Some(Notified::default()),
            &config(),
            &BTreeMap::new(),
            at("2026-12-05T11:06:00Z"),
            at("2026-12-05T11:00:00Z"),
        );
        assert_eq!(later.sends.len(), 1);
    }

    #[test]
    fn problems_are_named_and_project_subscriptions_count() {
        let subscribed = json!({
            "notifications.argoproj.io/subscribe.on-broken.ci": "",
            "notifications.argoproj.io/subscribe.on-deployed.pagerduty": "x",
            "notifications.argoproj.io/subscribe.on-step-started.ci": "",
        });
        let found = run(&app("abc", subscribed), None);
        assert_eq!(
            found.problems,
            [
                "notifications.argoproj.io/subscribe.on-deployed.pagerduty: service \"pagerduty\" is not configured in argocd-notifications-cm",
                "ConfigMap argocd-notifications-cm: key trigger.on-broken: [0].when: time.Parse(app.status.health.lastTransitionTime): null is not a time",
                "on-step-started is a rollout trigger of ApplicationSets; an Application cannot subscribe to it",
            ]
        );
        let project = json!({"metadata": {"name": "default", "annotations": {
            "notifications.argoproj.io/subscribe.on-sync-succeeded.slack": "team"}}});
        let app = app("abc", json!({}));
        let from_project = plan(
            Subject::Application {
                app: &app,
                project: Some(&project),
            },
            None,
            &config(),
            &BTreeMap::new(),
            at("2026-12-05T11:06:00Z"),
            at("2026-12-05T09:00:00Z"),
        );
        assert_eq!(from_project.sends.len(), 1);
        assert_eq!(from_project.sends[0].trigger, "on-sync-succeeded");
    }

    #[test]
    fn an_application_set_is_notified_of_its_rollout_events_once_each() {
        let appset = json!({"metadata": {"name": "stack", "creationTimestamp": "2026-12-05T10:00:00Z",
            "annotations": {"notifications.argoproj.io/subscribe.on-step-started.slack": "rollouts"}}});
        let mut vars = serde_json::Map::new();
        vars.insert("step".into(), json!("2"));
        vars.insert("steps".into(), json!("3"));
        vars.insert("revision".into(), json!("abc"));
        let occurrences = [Occurrence {
            trigger: Trigger::StepStarted,
            key: "on-step-started/step-2/abc".into(),
            at: None,
            vars,
        }];
        let subject = Subject::ApplicationSet {
            appset: &appset,
            occurrences: &occurrences,
        };
        let first = plan(
            subject,
            None,
            &config(),
            &BTreeMap::new(),
            at("2026-12-05T11:06:00Z"),
            at("2026-12-05T09:00:00Z"),
        );
        assert_eq!(first.sends.len(), 1);
        let Ok(Request::Http { body, .. }) = &first.sends[0].request else {
            panic!()
        };
        assert!(
            body.contains("stack: step 2 of 3 started rolling out abc."),
            "{body}"
        );
        let again = plan(
            subject,
            Some(first.notified),
            &config(),
            &BTreeMap::new(),
            at("2026-12-05T11:07:00Z"),
            at("2026-12-05T09:00:00Z"),
        );
        assert!(again.sends.is_empty());
    }
}
