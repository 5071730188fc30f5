//! The Application name `flotilla sync` tracks objects and stores its operation under: `--app`,
//! else the Application's own name, else a name derived from the directory's (or file's) name,
//! which is said on stderr when it differs from that name. A given name that the API server would
//! refuse is an error before anything is written.

use std::path::Path;

use flotilla_core::manifest::{NameRule, derive_name};

/// No usable Application name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppNameError {
    /// `--app` or the Application's `metadata.name` is not a valid name.
    #[error(
        "{origin} {name:?}: {problem}; an Application name must be {}",
        NameRule::Subdomain
    )]
    Invalid {
        /// `--app` or `metadata.name of <file>`.
        origin: String,
        /// The name.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Nothing of the path's name is left for a name.
    #[error("no Application name can be made of {path:?}: pass --app NAME")]
    Underivable {
        /// The path synced.
        path: String,
    },
}

/// The name chosen, and the path name it was derived from when they differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppName {
    /// The Application name.
    pub name: String,
    /// The directory or file name the name was made of, when it is not a valid name itself.
    pub derived_from: Option<String>,
}

impl AppName {
    /// Chooses the name: `given` (`--app`), else the Application's `metadata.name` read from
    /// `path`, else one derived from `path`'s last component (extension dropped).
    ///
    /// # Errors
    /// [`AppNameError`] for an invalid given name, or a path of which no name can be made.
    pub fn choose(
        given: Option<&str>,
        application: Option<&str>,
        path: &Path,
    ) -> Result<Self, AppNameError> {
        let checked = |origin: String, name: &str| match NameRule::Subdomain.check(name) {
            Ok(()) => Ok(Self {
                name: name.to_owned(),
                derived_from: None,
            }),
            Err(problem) => Err(AppNameError::Invalid {
                origin,
                name: name.to_owned(),
                problem,
            }),
        };
        if let Some(name) = given {
            return checked("--app".to_owned(), name);
        }
        if let Some(name) = application {
            return checked(format!("metadata.name of {}", path.display()), name);
        }
        let full = path.canonicalize().unwrap_or_else(|_| path.to_owned());
        let stem = full
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = derive_name(&stem).ok_or_else(|| AppNameError::Underivable {
            path: path.display().to_string(),
        })?;
        Ok(Self {
            derived_from: (name != stem).then_some(stem),
            name,
        })
    }

    /// What to tell the user about a derived name, if anything.
    #[must_use]
    pub fn note(&self) -> Option<String> {
        self.derived_from.as_ref().map(|stem| {
            format!(
                "{stem:?} is not a valid Application name; syncing as Application {:?} (pass --app NAME to choose another)",
                self.name
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_then_application_then_derived() {
        let path = Path::new("/nonexistent/My_Dir");
        let chosen = |given, application| AppName::choose(given, application, path);
        let named = |name: &str, from: Option<&str>| {
            Ok(AppName {
                name: name.to_owned(),
                derived_from: from.map(str::to_owned),
            })
        };
        assert_eq!(chosen(Some("shop"), Some("web")), named("shop", None));
        assert_eq!(chosen(None, Some("web")), named("web", None));
        assert_eq!(chosen(None, None), named("my-dir", Some("My_Dir")));
        assert_eq!(
            AppName::choose(None, None, Path::new("/nonexistent/shop.yaml")),
            named("shop", None)
        );
    }

    #[test]
    fn invalid_or_underivable_names_are_errors() {
        let path = Path::new("/nonexistent/___");
        assert_eq!(
            AppName::choose(Some("My_App"), None, path)
                .unwrap_err()
                .to_string(),
            format!(
                "--app \"My_App\": upper-case 'M' is not allowed; an Application name must be {}",
                NameRule::Subdomain
            )
        );
        assert!(matches!(
            AppName::choose(None, Some("web_1"), path),
            Err(AppNameError::Invalid { origin, .. }) if origin == "metadata.name of /nonexistent/___"
        ));
        assert_eq!(
            AppName::choose(None, None, path).unwrap_err().to_string(),
            "no Application name can be made of \"/nonexistent/___\": pass --app NAME"
        );
    }

    #[test]
    fn a_derived_name_is_announced() {
        let derived = AppName::choose(None, None, Path::new("/nonexistent/My_Dir")).unwrap();
        assert_eq!(
            derived.note().as_deref(),
            Some(
                "\"My_Dir\" is not a valid Application name; syncing as Application \"my-dir\" (pass --app NAME to choose another)"
            )
        );
    }
}
