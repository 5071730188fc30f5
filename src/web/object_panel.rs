//! The object panel: one object of an Application — the difference `flotilla diff` reports
//! (its changed fields named, the Application's ignoreDifferences applied), the logs form of a
//! Pod's or a workload's pods ([`super::pod_logs`]), the object's Events, newest first (kept
//! current by [`super::object_events`]), its live manifest (`status` and
//! `metadata.managedFields` folded away) and the desired manifest. A Secret's `data` and `stringData` values are replaced by
//! [`REDACTED`] in everything shown, before anything is rendered. Pure: the shell
//! ([`super::inspect`]) reads, this renders.

use std::fmt::Write as _;

use serde_json::Value;

use super::layout::Page;
use super::pod_logs::{DEFAULT_TAIL, LogTarget, MAX_TAIL};
use super::tree_view::{age, object_address};
use flotilla_core::html::{escape, link, table};
use flotilla_core::manifest::ObjectKey;

/// What a Secret's values are shown as.
pub const REDACTED: &str = "++++++++";

/// What was read of one object for its panel.
#[derive(Clone, Debug, Default)]
pub struct ObjectView {
    /// The live object; `None` when it does not exist.
    pub live: Option<Value>,
    /// The object a sync would apply (tracking and ignoreDifferences applied); `None` when the
    /// Application's source does not have it (an owned object, or one to prune).
    pub desired: Option<Value>,
    /// The fields that differ, as JSON pointers.
    pub changed: Vec<String>,
    /// The unified diff of the compared fields (live, then desired), of redacted objects.
    pub diff: String,
    /// The object's Events.
    pub events: Vec<Value>,
    /// The pods whose logs the panel offers (the Pod itself, or a workload's pods); `None` for
    /// an object that has no logs.
    pub logs: Option<Vec<LogTarget>>,
    /// Why the desired object could not be read (the source or the settings).
    pub source_error: Option<String>,
}

/// `object` with a Secret's `data` and `stringData` values replaced by [`REDACTED`] (other
/// kinds unchanged).
#[must_use]
pub fn redacted(object: &Value) -> Value {
    let mut object = object.clone();
    let is_secret = object.get("kind").and_then(Value::as_str) == Some("Secret")
        && object.get("apiVersion").and_then(Value::as_str) == Some("v1");
    if is_secret {
        for field in ["data", "stringData"] {
            if let Some(Value::Object(values)) = object.get_mut(field) {
                for value in values.values_mut() {
                    *value = Value::String(REDACTED.to_owned());
                }
            }
        }
    }
    object
}

/// The live object without `status` and `metadata.managedFields`, and those two apart.
fn folded(live: &Value) -> (Value, Option<Value>, Option<Value>) {
    let mut shown = live.clone();
    let status = shown
        .as_object_mut()
        .and_then(|object| object.remove("status"));
    let managed = shown
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|metadata| metadata.remove("managedFields"));
    (shown, status, managed)
}

fn yaml(value: &Value) -> String {
    serde_saphyr::to_string(value).unwrap_or_else(|error| format!("cannot show: {error}"))
}

/// The time an Event last happened: `lastTimestamp`, else `eventTime`, else its creation.
fn event_time(event: &Value) -> &str {
    [
        "/lastTimestamp",
        "/eventTime",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .find_map(|pointer| event.pointer(pointer).and_then(Value::as_str))
    .unwrap_or_default()
}

/// The table of `events` (as JSON), newest first, their ages at `now`.
#[must_use]
pub fn events_table(events: &[Value], now: k8s_openapi::jiff::Timestamp) -> String {
    let mut events: Vec<&Value> = events.iter().collect();
    events.sort_by(|a, b| event_time(b).cmp(event_time(a)));
    let text = |event: &Value, pointer: &str| {
        escape(
            event
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )
    };
    table(
        &["LAST SEEN", "TYPE", "REASON", "COUNT", "MESSAGE"],
        events.into_iter().map(|event| {
            vec![
                escape(&age(event_time(event).parse().ok(), now)),
                text(event, "/type"),
                text(event, "/reason"),
                event
                    .get("count")
                    .and_then(Value::as_u64)
                    .unwrap_or(1)
                    .to_string(),
                text(event, "/message"),
            ]
        }),
    )
}

/// The logs form of `targets` (pod and container, tail length, previous instance, follow)
/// for `key` in Application `app`; the lines are streamed into it by the page's script.
fn logs_section(app: &str, key: &ObjectKey, targets: &[LogTarget]) -> String {
    let mut out = String::from("<h2>Logs</h2>");
    let options: Vec<String> = targets
        .iter()
        .flat_map(|target| {
            target.containers.iter().map(move |container| {
                let value = format!("{}/{container}", target.pod);
                format!(
                    r#"<option value="{}">{} › {}</option>"#,
                    escape(&value),
                    escape(&target.pod),
                    escape(container)
                )
            })
        })
        .collect();
    if options.is_empty() {
        out.push_str(r#"<p class="none">No pod to show the logs of.</p>"#);
        return out;
    }
    let _ = write!(
        out,
        concat!(
            r#"<form id="logs" action="/applications/{app}/logs" data-namespace="{namespace}">"#,
            r#"<label>Container <select name="target">{options}</select></label> "#,
            r#"<label>Last <input name="tailLines" type="number" min="0" max="{max}" value="{tail}"> lines</label> "#,
            r#"<label><input name="previous" type="checkbox"> previous container</label> "#,
            r#"<label><input name="follow" type="checkbox" checked> follow</label> "#,
            r#"<button type="submit">Show</button></form>"#,
            r#"<p id="log-status" role="status" hidden></p><pre id="log-lines" class="log"></pre>"#,
        ),
        app = escape(app),
        namespace = escape(key.namespace.as_deref().unwrap_or_default()),
        options = options.join(""),
        max = MAX_TAIL,
        tail = DEFAULT_TAIL,
    );
    out
}

/// The panel of `key` in Application `app` from `view` (whose objects are redacted here
/// again, whoever built it), at `now`.
#[must_use]
pub fn render(
    app: &str,
    key: &ObjectKey,
    view: &ObjectView,
    now: k8s_openapi::jiff::Timestamp,
) -> Page {
    let title = format!("{} {}", key.kind, key.name);
    let mut main = format!(
        r#"<div data-static></div><p>{} › {}</p><h1>{}</h1>"#,
        link(&format!("/applications/{app}"), app),
        link(&format!("/applications/{app}/tree"), "resource tree"),
        escape(&key.to_string()),
    );
    main.push_str("<h2>Difference</h2>");
    if let Some(error) = &view.source_error {
        let _ = write!(main, r#"<p class="error">{}</p>"#, escape(error));
    }
    match (&view.live, &view.desired) {
        (_, None) => main.push_str(
            r#"<p class="none">Not in the Application's source (an owned object, or one to prune).</p>"#,
        ),
        (None, Some(_)) => main.push_str(r#"<p data-diff="Missing">Missing: not on the cluster.</p>"#),
        (Some(_), Some(_)) if view.changed.is_empty() => {
            main.push_str(r#"<p data-diff="Synced">Synced: no field differs.</p>"#);
        }
        (Some(_), Some(_)) => {
            let _ = write!(
                main,
                r#"<p data-diff="OutOfSync">OutOfSync: {}</p><pre class="diff">{}</pre>"#,
                view.changed
                    .iter()
                    .map(|path| format!("<code>{}</code>", escape(path)))
                    .collect::<Vec<_>>()
                    .join(", "),
                escape(&view.diff),
            );
        }
    }
    // What an operator investigates first, above the manifests.
    if let Some(targets) = &view.logs {
        main.push_str(&logs_section(app, key, targets));
    }
    let _ = write!(
        main,
        r#"<h2>Events</h2><div id="object-events" data-stream="{}">{}</div>"#,
        escape(&object_address(app, "events", key)),
        events_table(&view.events, now),
    );
    main.push_str("<h2>Live manifest</h2>");
    match &view.live {
        Some(live) => {
            let (shown, status, managed) = folded(&redacted(live));
            let _ = write!(
                main,
                r#"<pre class="manifest">{}</pre>"#,
                escape(&yaml(&shown))
            );
            for (summary, part) in [("status", status), ("managedFields", managed)] {
                if let Some(part) = part {
                    let _ = write!(
                        main,
                        "<details><summary>{summary}</summary><pre>{}</pre></details>",
                        escape(&yaml(&part))
                    );
                }
            }
        }
        None => main.push_str(r#"<p class="none">Not on the cluster.</p>"#),
    }
    main.push_str("<h2>Desired manifest</h2>");
    match &view.desired {
        Some(desired) => {
            let _ = write!(
                main,
                r#"<pre class="manifest">{}</pre>"#,
                escape(&yaml(&redacted(desired)))
            );
        }
        None => main.push_str(r#"<p class="none">None.</p>"#),
    }
    Page { title, main }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_secrets_values_never_show_and_status_and_managed_fields_are_folded() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "shop", "managedFields": [{"manager": "kubectl"}]},
            "data": {"password": "cGxhbnRlZA=="}, "stringData": {"token": "planted"}});
        let key = ObjectKey::of_object(&secret).unwrap();
        let view = ObjectView {
            live: Some(secret.clone()),
            desired: Some(secret),
            changed: vec!["/data/password".to_owned()],
            diff: "-  password: ++++++++\n".to_owned(),
            events: vec![
                json!({"type": "Normal", "reason": "Old<b>", "message": "m", "lastTimestamp": "2026-12-05T06:00:00Z"}),
                json!({"type": "Warning", "reason": "New", "message": "m", "count": 3, "lastTimestamp": "2026-12-05T06:01:00Z"}),
            ],
            source_error: None,
            logs: None,
        };
        let page = render("shop", &key, &view, "2026-12-05T06:02:00Z".parse().unwrap());
        assert!(!page.main.contains("<h2>Logs</h2>"), "a Secret has no logs");
        assert!(page.main.contains(
            r#"data-stream="/applications/shop/events?group=&amp;kind=Secret&amp;namespace=shop&amp;name=db""#
        ));
        assert!(!page.main.contains("planted"), "{}", page.main);
        assert!(!page.main.contains("cGxhbnRlZA"), "{}", page.main);
        assert!(page.main.contains(REDACTED));
        assert!(page.main.contains(r#"data-diff="OutOfSync""#));
        assert!(page.main.contains("<code>/data/password</code>"));
        assert!(page.main.contains("<summary>managedFields</summary>"));
        assert!(page.main.find("New").unwrap() < page.main.find("Old&lt;b&gt;").unwrap());
        assert!(!page.main.contains("<b>"));
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}});
        assert_eq!(redacted(&config), config);
    }

    #[test]
    fn a_workloads_panel_offers_each_container_of_its_pods() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"}});
        let key = ObjectKey::of_object(&deployment).unwrap();
        let target = |pod: &str, containers: &[&str]| LogTarget {
            pod: pod.to_owned(),
            containers: containers.iter().map(|c| (*c).to_owned()).collect(),
        };
        let view = ObjectView {
            live: Some(deployment),
            logs: Some(vec![
                target("web-1", &["app", "proxy<x>"]),
                target("web-2", &["app"]),
            ]),
            ..ObjectView::default()
        };
        let page = render("shop", &key, &view, "2026-12-05T06:02:00Z".parse().unwrap());
        let logs = page.main.split("<h2>Logs</h2>").nth(1).unwrap();
        assert!(logs.contains(
            r#"<form id="logs" action="/applications/shop/logs" data-namespace="shop">"#
        ));
        assert_eq!(logs.matches("<option ").count(), 3, "{logs}");
        assert!(
            logs.contains(
                r#"<option value="web-1/proxy&lt;x&gt;">web-1 › proxy&lt;x&gt;</option>"#
            )
        );
        let none = ObjectView {
            logs: Some(Vec::new()),
            ..view
        };
        let page = render("shop", &key, &none, "2026-12-05T06:02:00Z".parse().unwrap());
        assert!(page.main.contains("No pod to show the logs of."));
    }
}
