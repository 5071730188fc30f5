//! Argo CD's `argocd.argoproj.io/refresh` annotation, which its CLI and UI set to ask for a
//! refresh now: `hard` also drops the generated manifests kept for the Application, any other
//! value (`normal`) compares again with the revision resolved now. The controller removes the
//! annotation once it has acted on it, as Argo CD does. Pure.

use crate::api::Application;

/// The annotation.
pub const REFRESH_ANNOTATION: &str = "argocd.argoproj.io/refresh";

/// A refresh asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refresh {
    /// Resolve the revision again and compare.
    Normal,
    /// As normal, and generate the manifests again (not from those kept).
    Hard,
}

/// The refresh `app` asks for, if any (any value but `hard` is a normal one, as in Argo CD).
#[must_use]
pub fn requested_refresh(app: &Application) -> Option<Refresh> {
    let value = app.metadata.annotations.as_ref()?.get(REFRESH_ANNOTATION)?;
    Some(if value == "hard" {
        Refresh::Hard
    } else {
        Refresh::Normal
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_or_else_normal() {
        let app = |value: Option<&str>| {
            let mut app = Application::new("web", crate::api::ApplicationSpec::default());
            app.metadata.annotations =
                value.map(|value| [(REFRESH_ANNOTATION.to_owned(), value.to_owned())].into());
            app
        };
        assert_eq!(requested_refresh(&app(None)), None);
        assert_eq!(requested_refresh(&app(Some("hard"))), Some(Refresh::Hard));
        for value in ["normal", "", "yes"] {
            assert_eq!(requested_refresh(&app(Some(value))), Some(Refresh::Normal));
        }
    }
}
