//! The actions' vocabulary (pure): what each acts on, and the access it needs — `patch` on the
//! Application or ApplicationSet, in the group of the CRDs Flotilla serves — which is what the
//! web view asks the cluster's RBAC about before acting for a viewer.

use std::fmt;
use std::str::FromStr;

use kube::Resource;

use flotilla_core::api::{Application, ApplicationSet};

/// One action on an Application or an ApplicationSet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Request a sync of an Application (`spec.operation`).
    Sync,
    /// Stop an Application's running or requested sync.
    Terminate,
    /// Sync an Application back to the entry before the newest of its history (refused with
    /// automated sync on: the web view does not suspend it, `flotilla app rollback --force`
    /// does).
    Rollback,
    /// Stop promoting an ApplicationSet's rollout (`spec.strategy.paused: true`).
    Pause,
    /// Promote again after a pause.
    Resume,
    /// Approve a step with `approval: manual` (the `flotilla.dev/promote` annotation).
    Promote,
}

/// The kind an action acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    Application,
    ApplicationSet,
}

/// The access an action needs, as a SubjectAccessReview's resource attributes ask for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub verb: &'static str,
    pub group: String,
    pub resource: String,
    /// The subresource (`log` for `pods/log`); empty for the object itself.
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl Action {
    /// Every action, in the order pages offer them.
    pub const ALL: [Self; 6] = [
        Self::Sync,
        Self::Terminate,
        Self::Rollback,
        Self::Pause,
        Self::Resume,
        Self::Promote,
    ];

    /// Its name in addresses and messages.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Terminate => "terminate",
            Self::Rollback => "rollback",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Promote => "promote",
        }
    }

    /// What it acts on.
    #[must_use]
    pub const fn target(self) -> TargetKind {
        match self {
            Self::Sync | Self::Terminate | Self::Rollback => TargetKind::Application,
            Self::Pause | Self::Resume | Self::Promote => TargetKind::ApplicationSet,
        }
    }

    /// The access it needs on the object `namespace/name`: every action is one merge patch of
    /// that object, so `patch` on it, as `kubectl patch` or `kubectl annotate` would need.
    #[must_use]
    pub fn access(self, namespace: &str, name: &str) -> Access {
        let (group, resource) = match self.target() {
            TargetKind::Application => (Application::group(&()), Application::plural(&())),
            TargetKind::ApplicationSet => (ApplicationSet::group(&()), ApplicationSet::plural(&())),
        };
        Access {
            verb: "patch",
            group: group.into_owned(),
            resource: resource.into_owned(),
            subresource: String::new(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown action {0:?} (sync, terminate, pause, resume or promote)")]
pub struct UnknownAction(pub String);

impl FromStr for Action {
    type Err = UnknownAction;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|action| action.as_str() == name)
            .ok_or_else(|| UnknownAction(name.to_owned()))
    }
}

impl TargetKind {
    /// The collection's segment in the web view's addresses (`applications`, `applicationsets`).
    #[must_use]
    pub const fn path_segment(self) -> &'static str {
        match self {
            Self::Application => "applications",
            Self::ApplicationSet => "applicationsets",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_as_the_same_action() {
        for action in Action::ALL {
            assert_eq!(action.as_str().parse::<Action>(), Ok(action));
        }
        assert_eq!(
            "delete".parse::<Action>(),
            Err(UnknownAction("delete".to_owned()))
        );
    }

    #[test]
    fn each_action_needs_patch_on_the_object_it_acts_on() {
        assert_eq!(
            Action::Pause.access("team", "stack"),
            Access {
                verb: "patch",
                group: "flotilla.dev".to_owned(),
                resource: "applicationsets".to_owned(),
                subresource: String::new(),
                namespace: "team".to_owned(),
                name: "stack".to_owned(),
            }
        );
        for action in [Action::Resume, Action::Promote] {
            assert_eq!(action.access("team", "stack").resource, "applicationsets");
        }
        for action in [Action::Sync, Action::Terminate, Action::Rollback] {
            let access = action.access("team", "web");
            assert_eq!(
                (access.verb, access.group.as_str(), access.resource.as_str()),
                ("patch", "flotilla.dev", "applications")
            );
        }
    }
}
