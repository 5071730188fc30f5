//! The filtered, paginated list of Applications that the Fleet and ApplicationSet pages share:
//! a form of the filters (a plain GET, so it works without JavaScript and its address is a deep
//! link), the matches counted by health and by sync, one page of rows and the links to the
//! pages around it ([`super::application_query`] selects them).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::application_query::{
    ApplicationQuery, Selection, application_set, cluster, select, steps,
};
use super::fleet::{health_status, sync_status};
use super::snapshot::Snapshot;
use flotilla_core::api::Application;
use flotilla_core::html::{badge, escape, link, table};

/// The health statuses offered in the form.
const HEALTH: [&str; 6] = [
    "Healthy",
    "Progressing",
    "Degraded",
    "Suspended",
    "Missing",
    "Unknown",
];

/// The sync statuses offered in the form.
const SYNC: [&str; 3] = ["Synced", "OutOfSync", "Unknown"];

/// The section listing `applications` (of `snapshot`) as `query` filters them, its form and
/// links addressed to `path` (the page's own path).
#[must_use]
pub fn section<'a>(
    path: &str,
    query: &ApplicationQuery,
    snapshot: &'a Snapshot,
    applications: impl IntoIterator<Item = &'a Application>,
) -> String {
    let steps = steps(
        snapshot.appsets.iter().map(AsRef::as_ref),
        snapshot.applications.iter().map(AsRef::as_ref),
    );
    let mut out = String::from(r#"<section id="applications"><h2>Applications</h2>"#);
    out.push_str(&form(path, query));
    match select(query, applications, &steps) {
        Ok(selection) => {
            out.push_str(&counts(&selection));
            out.push_str(&table(
                &[
                    "APPLICATION",
                    "APPLICATIONSET",
                    "PROJECT",
                    "DESTINATION",
                    "STEP",
                    "HEALTH",
                    "SYNC",
                    "REVISION",
                ],
                selection.rows.iter().map(|application| {
                    let name = application.metadata.name.as_deref().unwrap_or_default();
                    vec![
                        link(&format!("/applications/{name}"), name),
                        application_set(application).map_or_else(
                            || "-".to_owned(),
                            |appset| link(&format!("/applicationsets/{appset}"), appset),
                        ),
                        escape(&application.spec.project),
                        escape(cluster(application)),
                        escape(steps.get(name).copied().unwrap_or("-")),
                        badge(health_status(application)),
                        badge(sync_status(application)),
                        escape(
                            application
                                .status
                                .as_ref()
                                .and_then(|status| status.sync.as_ref())
                                .map_or("", |sync| sync.revision.as_str()),
                        ),
                    ]
                }),
            ));
            out.push_str(&pager(path, query, &selection));
        }
        Err(error) => {
            let _ = write!(
                out,
                r#"<p class="error">{}</p>"#,
                escape(&error.to_string())
            );
        }
    }
    out.push_str("</section>");
    out
}

/// The filter form: text fields, and choices of health and sync.
fn form(path: &str, query: &ApplicationQuery) -> String {
    let text = |key: &str, label: &str, placeholder: &str| {
        format!(
            r#"<label>{label} <input name="{key}" value="{}" placeholder="{placeholder}"></label> "#,
            escape(query.value(key))
        )
    };
    let choice = |key: &str, label: &str, words: &[&str]| {
        let mut out =
            format!(r#"<label>{label} <select name="{key}"><option value="">any</option>"#);
        for word in words {
            let selected = if query.value(key) == *word {
                " selected"
            } else {
                ""
            };
            let _ = write!(out, r#"<option{selected}>{word}</option>"#);
        }
        out.push_str("</select></label> ");
        out
    };
    format!(
        r#"<form method="get" action="{action}" class="filters">{}{}{}{}{}{}{}<button>Filter</button> <a href="{action}">Clear</a></form>"#,
        text("name", "Name", "part of a name"),
        text("label", "Label", "team=payments,tier!=db"),
        choice("health", "Health", &HEALTH),
        choice("sync", "Sync", &SYNC),
        text("project", "Project", "default"),
        text("cluster", "Cluster", "name or server"),
        text("step", "Step", "1"),
        action = escape(path),
    )
}

/// `1,000 Applications: Healthy 600, Degraded 400 · Synced 1,000` as badges.
fn counts(selection: &Selection<'_>) -> String {
    let badges = |counted: &BTreeMap<String, usize>| {
        counted
            .iter()
            .map(|(word, count)| {
                format!(
                    r#"<span data-count="{}">{} {count}</span>"#,
                    escape(word),
                    badge(word)
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!(
        r#"<p class="counts"><span data-matched="{matched}">{matched} Applications</span> · health {} · sync {}</p>"#,
        badges(&selection.health),
        badges(&selection.sync),
        matched = selection.matched,
    )
}

/// `page 2 of 20` with links to the first, previous, next and last pages.
fn pager(path: &str, query: &ApplicationQuery, selection: &Selection<'_>) -> String {
    let to = |page: usize, text: &str| {
        if page == selection.page || page < 1 || page > selection.pages {
            escape(text)
        } else {
            link(
                &format!("{path}{}#applications", query.to_query(page)),
                text,
            )
        }
    };
    format!(
        r#"<nav class="pager" data-page="{page}" data-pages="{pages}">{} {} page {page} of {pages} {} {}</nav>"#,
        to(1, "« first"),
        to(selection.page.saturating_sub(1), "‹ previous"),
        to(selection.page + 1, "next ›"),
        to(selection.pages, "last »"),
        page = selection.page,
        pages = selection.pages,
    )
}
