//! Injected failures (`--fail`): a whole Application (every object of it that can fail) or one
//! object in it (`backend/Job/db-migrate`). The embedded cluster asks [`Faults::fails`] when an
//! object is applied; the driver checks every selector names something real before starting.

use std::fmt;
use std::str::FromStr;

/// One `--fail` selector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FailSelector {
    /// The Application's name.
    pub app: String,
    /// `Kind/name` inside it; `None` for the whole Application.
    pub object: Option<(String, String)>,
}

impl fmt::Display for FailSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.object {
            Some((kind, name)) => write!(f, "{}/{kind}/{name}", self.app),
            None => f.write_str(&self.app),
        }
    }
}

/// A selector that is neither `APP` nor `APP/KIND/NAME`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--fail {0:?}: expected an Application (APP) or an object in one (APP/KIND/NAME)")]
pub struct FailSelectorError(pub String);

impl FromStr for FailSelector {
    type Err = FailSelectorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = text.split('/').collect();
        let error = || FailSelectorError(text.to_owned());
        if parts.iter().any(|part| part.trim().is_empty()) {
            return Err(error());
        }
        match parts.as_slice() {
            [app] => Ok(Self {
                app: (*app).to_owned(),
                object: None,
            }),
            [app, kind, name] => Ok(Self {
                app: (*app).to_owned(),
                object: Some(((*kind).to_owned(), (*name).to_owned())),
            }),
            _ => Err(error()),
        }
    }
}

/// Every injected failure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults(pub Vec<FailSelector>);

impl Faults {
    /// Whether the object `kind`/`name` of Application `app` is made to fail.
    #[must_use]
    pub fn fails(&self, app: &str, kind: &str, name: &str) -> bool {
        self.0.iter().any(|selector| {
            selector.app == app
                && selector
                    .object
                    .as_ref()
                    .is_none_or(|(k, n)| k == kind && n == name)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches_apps_and_objects() {
        let faults = Faults(vec![
            "db".parse().unwrap(),
            "backend/Job/db-migrate".parse().unwrap(),
        ]);
        assert!(faults.fails("db", "Deployment", "x"));
        assert!(faults.fails("backend", "Job", "db-migrate"));
        assert!(!faults.fails("backend", "Job", "other"));
        assert!(!faults.fails("frontend", "Job", "db-migrate"));
        assert_eq!(faults.0[1].to_string(), "backend/Job/db-migrate");
        for bad in ["", "a/b", "a//c", "a/b/c/d"] {
            assert!(bad.parse::<FailSelector>().is_err(), "{bad:?}");
        }
    }
}
