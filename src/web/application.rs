//! The Application page: source, destination and revisions, conditions, resources with sync,
//! health and the first differing field, and the current (or last) operation by phase → wave →
//! object with hook outcomes; the sync windows that apply. Only status fields are shown: no live
//! object, so no Secret data.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::action_offers::{application_offers, buttons};
use super::layout::Page;
use super::snapshot::Snapshot;
use super::sync_windows;
use flotilla_core::api::APPLICATION_SET_LABEL;
use flotilla_core::api::Application;
use flotilla_core::html::{badge, escape, link, table};
use flotilla_core::sync::{OperationState, ResourceResult, SyncPhase};

/// The page of Application `name`; `None` when the watches do not hold it.
#[must_use]
pub fn render(snapshot: &Snapshot, name: &str) -> Option<Page> {
    let application = snapshot.application(name)?;
    let mut main = format!("<h1>Application {}</h1>", escape(name));
    main.push_str(&buttons(name, &application_offers(application)));
    main.push_str(&summary(application));
    let status = application.status.clone().unwrap_or_default();
    main.push_str("<h2>Conditions</h2>");
    main.push_str(&table(
        &["TYPE", "MESSAGE"],
        status
            .conditions
            .iter()
            .map(|c| vec![escape(&format!("{:?}", c.type_)), escape(&c.message)]),
    ));
    main.push_str(&sync_windows::section(
        snapshot,
        std::slice::from_ref(application),
    ));
    let _ = write!(
        main,
        "<h2>Resources</h2><p>{}</p>",
        link(&format!("/applications/{name}/tree"), "Resource tree")
    );
    main.push_str(&table(
        &[
            "KIND",
            "NAMESPACE/NAME",
            "WAVE",
            "SYNC",
            "HEALTH",
            "DIFFERENCE",
        ],
        status.resources.iter().map(|r| {
            let difference = if r.hook {
                "hook".to_owned()
            } else if r.requires_pruning {
                "to prune".to_owned()
            } else {
                escape(&r.first_difference)
            };
            vec![
                escape(&r.kind),
                escape(&object_name(&r.namespace, &r.name)),
                r.sync_wave.to_string(),
                badge(r.status.as_str()),
                r.health
                    .as_ref()
                    .map_or_else(String::new, |h| badge(h.status.as_str())),
                difference,
            ]
        }),
    ));
    match &status.operation_state {
        Some(operation) => main.push_str(&operation_section(operation)),
        None => main.push_str("<h2>Operation</h2><p>No operation yet.</p>"),
    }
    main.push_str("<h2>History</h2>");
    main.push_str(&table(
        &["ID", "REVISION", "DEPLOYED"],
        status.history.iter().rev().map(|h| {
            vec![
                h.id.to_string(),
                escape(&h.revision),
                escape(&h.deployed_at.0.to_string()),
            ]
        }),
    ));
    Some(Page {
        title: format!("Application {name}"),
        main,
    })
}

/// Source, destination, the ApplicationSet, sync and health.
fn summary(application: &Application) -> String {
    let source = &application.spec.source;
    let destination = &application.spec.destination;
    let status = application.status.as_ref();
    let sync = status.and_then(|s| s.sync.as_ref());
    let health = status.and_then(|s| s.health.as_ref());
    let appset = application
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(APPLICATION_SET_LABEL))
        .map_or_else(
            || "-".to_owned(),
            |name| link(&format!("/applicationsets/{name}"), name),
        );
    let server = destination
        .name
        .as_deref()
        .or(destination.server.as_deref())
        .unwrap_or_default();
    format!(
        concat!(
            "<dl><dt>ApplicationSet</dt><dd>{appset}</dd>",
            "<dt>Source</dt><dd>{repo} {path} at {target}</dd>",
            "<dt>Destination</dt><dd>{server} {namespace}</dd>",
            "<dt>Sync</dt><dd>{sync} {revision}</dd>",
            "<dt>Health</dt><dd>{health} {health_message}</dd></dl>"
        ),
        appset = appset,
        repo = escape(&source.repo_url),
        path = escape(&source.path),
        target = escape(&source.target_revision),
        server = escape(server),
        namespace = escape(destination.namespace.as_deref().unwrap_or_default()),
        sync = badge(sync.map_or("Unknown", |s| s.status.as_str())),
        revision = escape(sync.map_or("", |s| s.revision.as_str())),
        health = badge(health.map_or("Unknown", |h| h.status.as_str())),
        health_message = escape(health.map_or("", |h| h.message.as_str())),
    )
}

/// The operation, its records grouped by phase, then wave.
fn operation_section(operation: &OperationState) -> String {
    let phase = format!("{:?}", operation.phase);
    let mut out = format!(
        r#"<h2>Operation {}</h2><p data-operation="{}">{} {}</p>"#,
        escape(&operation.operation_id),
        escape(&phase),
        badge(&phase),
        escape(operation.failure.as_deref().unwrap_or(&operation.message)),
    );
    let _ = write!(
        out,
        "<p>revision {}</p>",
        escape(operation.revision.as_deref().unwrap_or("-"))
    );
    let mut grouped: BTreeMap<(SyncPhase, i32), Vec<&ResourceResult>> = BTreeMap::new();
    for record in &operation.resources {
        grouped
            .entry((record.sync_phase, record.wave))
            .or_default()
            .push(record);
    }
    for ((phase, wave), records) in grouped {
        let _ = write!(out, "<h3>{phase:?} → wave {wave}</h3>");
        out.push_str(&table(
            &["OBJECT", "STATUS", "ACTION", "HOOK", "HEALTH", "MESSAGE"],
            records.into_iter().map(|r| {
                let hook = r.hook_type.map_or_else(String::new, |hook| {
                    let phase = r
                        .hook_phase
                        .map_or_else(String::new, |p| badge(&format!("{p:?}")));
                    format!("{} {phase}", escape(&hook.to_string()))
                });
                vec![
                    escape(&format!(
                        "{} {}",
                        r.kind,
                        object_name(&r.namespace, &r.name)
                    )),
                    badge(&format!("{:?}", r.status)),
                    r.action
                        .map_or_else(String::new, |a| escape(&format!("{a:?}"))),
                    hook,
                    r.health
                        .map_or_else(String::new, |h| badge(&format!("{h:?}"))),
                    escape(&r.message),
                ]
            }),
        ));
    }
    out
}

/// `namespace/name`, or `name` when cluster-scoped.
fn object_name(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::test_fixtures::{assert_escaped, snapshot};

    #[test]
    fn shows_resources_and_the_operation_by_phase_and_wave() {
        let page = render(&snapshot(), "shop-staging").expect("the fixture's Application");
        assert_escaped(&page.main);
        assert!(page.main.contains("/spec/&lt;script&gt;"), "{}", page.main);
        let presync = page
            .main
            .find("PreSync → wave -1")
            .expect("the PreSync wave");
        let sync = page.main.find("Sync → wave 0").expect("the Sync wave");
        assert!(presync < sync);
        assert!(page.main.contains(r#"data-operation="Running""#));
        assert!(
            page.main
                .contains(r#"PreSync <span class="badge s-Running">Running</span>"#)
        );
        assert!(render(&snapshot(), "none").is_none());
    }
}
