//! Checks the controller adds to rendering before it writes anything: every generated Application
//! lives in the ApplicationSet's namespace (an owner reference cannot cross namespaces).

use crate::api::Application;

/// A generated Application the controller cannot own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Application {name:?} is generated in namespace {namespace:?}, but its ApplicationSet is in {expected:?}; owner references cannot cross namespaces"
)]
pub struct ForeignNamespace {
    pub name: String,
    pub namespace: String,
    pub expected: String,
}

/// Every Application is in `namespace`, or the first one that is not.
///
/// # Errors
/// An Application in another namespace.
pub fn same_namespace(
    applications: &[Application],
    namespace: &str,
) -> Result<(), ForeignNamespace> {
    match applications
        .iter()
        .find(|app| app.metadata.namespace.as_deref() != Some(namespace))
    {
        None => Ok(()),
        Some(app) => Err(ForeignNamespace {
            name: app.metadata.name.clone().unwrap_or_default(),
            namespace: app.metadata.namespace.clone().unwrap_or_default(),
            expected: namespace.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApplicationSpec;

    #[test]
    fn applications_must_share_the_namespace() {
        let mut apps = vec![Application::new("a", ApplicationSpec::default())];
        apps[0].metadata.namespace = Some("team".into());
        assert_eq!(same_namespace(&apps, "team"), Ok(()));
        let error = same_namespace(&apps, "other").unwrap_err();
        assert_eq!(error.namespace, "team");
        assert!(error.to_string().contains("cannot cross namespaces"));
    }
}
