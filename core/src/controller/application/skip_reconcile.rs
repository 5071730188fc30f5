//! Argo CD's `argocd.argoproj.io/skip-reconcile` annotation: an Application carrying it with a
//! true value (Go's `strconv.ParseBool`: `true`, `True`, `TRUE`, `t`, `T`, `1`) is neither
//! compared, synced nor given a status by the controller; its deletion still deletes its
//! resources, and an operation already running finishes. Pure.

use crate::api::Application;

/// The annotation.
pub const SKIP_RECONCILE_ANNOTATION: &str = "argocd.argoproj.io/skip-reconcile";

/// Whether the controller leaves `app` alone.
#[must_use]
pub fn skips_reconcile(app: &Application) -> bool {
    app.metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(SKIP_RECONCILE_ANNOTATION))
        .is_some_and(|value| matches!(value.as_str(), "true" | "True" | "TRUE" | "t" | "T" | "1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_true_value_as_go_parses_it_skips() {
        let app = |value: Option<&str>| {
            let mut app = Application::new("web", crate::api::ApplicationSpec::default());
            app.metadata.annotations = value
                .map(|value| [(SKIP_RECONCILE_ANNOTATION.to_owned(), value.to_owned())].into());
            app
        };
        for value in ["true", "True", "TRUE", "t", "T", "1"] {
            assert!(skips_reconcile(&app(Some(value))), "{value}");
        }
        for value in [None, Some("false"), Some("0"), Some("yes"), Some("")] {
            assert!(!skips_reconcile(&app(value)), "{value:?}");
        }
    }
}
