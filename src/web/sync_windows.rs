//! The sync windows section of the Application and ApplicationSet pages: the windows of their
//! projects that apply to the Applications, whether each is open, when that changes, and
//! whether automated and manual syncs may happen now — the text `flotilla windows` prints.

use std::fmt::Write as _;

use super::snapshot::Snapshot;
use flotilla_core::api::Application;
use flotilla_core::html::escape;
use flotilla_core::project::windows::listing;

/// The section for `applications` at the snapshot's moment.
#[must_use]
pub fn section(snapshot: &Snapshot, applications: &[Application]) -> String {
    let mut html = String::from("<h2>Sync windows</h2>");
    let text = listing(applications, &snapshot.projects, snapshot.now)
        .map_or_else(|error| error.to_string(), |listed| listed.table(false));
    let _ = write!(html, "<pre class=\"windows\">{}</pre>", escape(&text));
    html
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::web::test_fixtures::snapshot;
    use flotilla_core::api::AppProjectSpec;
    use flotilla_core::project::Projects;

    #[test]
    fn shows_the_windows_that_apply_and_whether_each_is_open() {
        // The fixture's Applications are in project `default`, deployed to their own namespace.
        let spec: AppProjectSpec = serde_json::from_value(json!({"syncWindows": [
            {"kind": "deny", "schedule": "0 0 * * *", "duration": "2h", "namespaces": ["prod"],
             "description": "<b>night</b> freeze"},
        ]}))
        .unwrap();
        let snapshot = snapshot().with_projects(Projects::new([("default".to_owned(), spec)]));
        let prod = snapshot.application("shop-prod").unwrap().clone();
        let html = section(&snapshot, &[prod]);
        assert!(
            html.starts_with("<h2>Sync windows</h2><pre class=\"windows\">APPLICATION"),
            "{html}"
        );
        assert!(html.contains("&lt;b&gt;night&lt;/b&gt; freeze"), "{html}");
        assert!(html.contains("0 0 * * * for 2h, UTC"), "{html}");
        assert!(html.contains("yes"), "open at 00:01 UTC: {html}");
        assert!(
            html.contains(
                "shop-prod: automated syncs waits for window &#39;&lt;b&gt;night&lt;/b&gt; freeze&#39;"
            ),
            "{html}"
        );
    }
}
