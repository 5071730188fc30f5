//! The resource tree drawn on the server: an inline SVG (one row per object, indented under its
//! owner, joined by lines, each row linking to the object's panel) and the same tree as nested
//! lists, which screen readers and text browsers read; the hooks apart. Pure: from a
//! [`ResourceTree`] built by [`flotilla_core::resource_tree::build`].

use std::fmt::Write as _;

use k8s_openapi::jiff::Timestamp;

use super::application_query::percent_encode;
use flotilla_core::html::{badge, escape, link};
use flotilla_core::manifest::ObjectKey;
use flotilla_core::resource_tree::{ResourceTree, TreeNode};

/// The height of one row of the drawing, and the indent of one level.
const ROW: usize = 26;
const INDENT: usize = 26;

/// The tree of Application `app` at `now`: the drawing, the list, the hooks.
#[must_use]
pub fn section(app: &str, tree: &ResourceTree, now: Timestamp) -> String {
    let mut out = String::from("<h2>Resource tree</h2>");
    if tree.roots.is_empty() {
        out.push_str(r#"<p class="none">No managed object.</p>"#);
    } else {
        out.push_str(&svg(app, &tree.roots, now));
        let _ = write!(
            out,
            r#"<details><summary>List view</summary>{}</details>"#,
            list(app, &tree.roots, now)
        );
    }
    out.push_str("<h2>Hooks</h2>");
    if tree.hooks.is_empty() {
        out.push_str(r#"<p class="none">None.</p>"#);
    } else {
        out.push_str(&list(app, &tree.hooks, now));
    }
    out
}

/// The address of `key`'s panel in Application `app`.
#[must_use]
pub fn panel_address(app: &str, key: &ObjectKey) -> String {
    object_address(app, "object", key)
}

/// The address of what `page` (`object`: the panel, `events`: its live Events) shows of `key`
/// in Application `app`.
#[must_use]
pub fn object_address(app: &str, page: &str, key: &ObjectKey) -> String {
    format!(
        "/applications/{app}/{page}?group={}&kind={}&namespace={}&name={}",
        percent_encode(&key.group),
        percent_encode(&key.kind),
        percent_encode(key.namespace.as_deref().unwrap_or_default()),
        percent_encode(&key.name),
    )
}

/// `45s`, `12m`, `3h`, `4d`; `-` when unknown.
#[must_use]
pub fn age(created: Option<Timestamp>, now: Timestamp) -> String {
    let Some(created) = created else {
        return "-".to_owned();
    };
    let seconds = now.duration_since(created).as_secs().max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 7_200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3_600),
        s => format!("{}d", s / 86_400),
    }
}

/// The health word of a node (`-` when none was recorded).
fn health(node: &TreeNode) -> String {
    node.health
        .map_or_else(|| "-".to_owned(), |health| health.as_str().to_owned())
}

/// The rows of the drawing: each node with its depth and its parent's row.
fn rows<'a>(
    nodes: &'a [TreeNode],
    depth: usize,
    parent: Option<usize>,
    out: &mut Vec<(&'a TreeNode, usize, Option<usize>)>,
) {
    for node in nodes {
        let row = out.len();
        out.push((node, depth, parent));
        rows(&node.children, depth + 1, Some(row), out);
    }
}

/// The drawing.
fn svg(app: &str, roots: &[TreeNode], now: Timestamp) -> String {
    let mut placed = Vec::new();
    rows(roots, 0, None, &mut placed);
    let depth = placed.iter().map(|(_, depth, _)| *depth).max().unwrap_or(0);
    let width = 760 + depth * INDENT;
    let height = placed.len() * ROW + 8;
    let mut out = format!(
        r#"<svg class="tree" role="img" aria-label="resource tree" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">"#
    );
    for (row, (node, depth, parent)) in placed.iter().enumerate() {
        let x = 10 + depth * INDENT;
        let y = 4 + row * ROW + ROW / 2;
        if let Some(parent) = parent {
            let (px, py) = (
                10 + (depth - 1) * INDENT + 6,
                4 + parent * ROW + ROW / 2 + 6,
            );
            let _ = write!(
                out,
                r#"<path class="edge" d="M{px} {py} V{y} H{x}" fill="none"/>"#
            );
        }
        let health = health(node);
        let class: String = health.chars().filter(char::is_ascii_alphanumeric).collect();
        let sync = node.sync.as_deref().unwrap_or("");
        let _ = write!(
            out,
            concat!(
                r#"<a href="{href}" data-node="{kind}/{name}" data-health="{health}">"#,
                r#"<circle class="h-{class}" cx="{cx}" cy="{y}" r="6"/>"#,
                r#"<text x="{tx}" y="{ty}"><tspan class="kind">{kind}</tspan> {name}"#,
                r#" <tspan class="h-{class}">{health}</tspan> <tspan class="sync">{sync}</tspan>"#,
                r#" <tspan class="age">{age}</tspan></text></a>"#
            ),
            href = escape(&panel_address(app, &node.key)),
            kind = escape(&node.key.kind),
            name = escape(&node.key.name),
            health = escape(&health),
            class = class,
            cx = x + 6,
            y = y,
            tx = x + 18,
            ty = y + 4,
            sync = escape(sync),
            age = escape(&age(node.created, now)),
        );
    }
    out.push_str("</svg>");
    out
}

/// The nodes as nested lists.
fn list(app: &str, nodes: &[TreeNode], now: Timestamp) -> String {
    let mut out = String::from(r#"<ul class="tree">"#);
    for node in nodes {
        let _ = write!(
            out,
            "<li>{} {} {} {}{}</li>",
            link(
                &panel_address(app, &node.key),
                &format!("{} {}", node.key.kind, node.key.name)
            ),
            badge(&health(node)),
            node.sync.as_deref().map(badge).unwrap_or_default(),
            escape(&age(node.created, now)),
            if node.children.is_empty() {
                String::new()
            } else {
                list(app, &node.children, now)
            },
        );
    }
    out.push_str("</ul>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_core::health::HealthStatus;

    fn node(kind: &str, name: &str, children: Vec<TreeNode>) -> TreeNode {
        TreeNode {
            key: ObjectKey {
                group: String::new(),
                kind: kind.to_owned(),
                namespace: Some("n<s>".to_owned()),
                name: name.to_owned(),
            },
            sync: Some("Synced".to_owned()),
            health: Some(HealthStatus::Healthy),
            created: Some("2026-12-05T06:00:00Z".parse().unwrap()),
            children,
        }
    }

    #[test]
    fn draws_each_object_under_its_owner_escaped_with_a_link_to_its_panel() {
        let tree = ResourceTree {
            roots: vec![node(
                "Deployment",
                "web<script>",
                vec![node(
                    "ReplicaSet",
                    "web-1",
                    vec![node("Pod", "web-1-a", vec![])],
                )],
            )],
            hooks: vec![node("Job", "migrate", vec![])],
        };
        let now: Timestamp = "2026-12-05T06:03:10Z".parse().unwrap();
        let html = section("shop", &tree, now);
        assert!(!html.contains("<script>"), "{html}");
        assert_eq!(html.matches("<path class=\"edge\"").count(), 2, "{html}");
        assert!(html.contains(r#"data-node="Pod/web-1-a" data-health="Healthy""#));
        assert!(html.contains(
            "/applications/shop/object?group=&amp;kind=Pod&amp;namespace=n%3Cs%3E&amp;name=web-1-a"
        ));
        assert!(html.contains("<tspan class=\"age\">3m</tspan>"), "{html}");
        let hooks = html.split("<h2>Hooks</h2>").nth(1).unwrap();
        assert!(hooks.contains("Job migrate"));
        assert_eq!(age(None, now), "-");
        assert_eq!(
            age(Some("2026-12-01T00:00:00Z".parse().unwrap()), now),
            "4d"
        );
    }
}
