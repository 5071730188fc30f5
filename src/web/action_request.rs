//! Which action a POST asks for (pure): `/applications/NAME/sync|terminate` and
//! `/applicationsets/NAME/pause|resume|promote`, with `?step=N` for promote (without it, the
//! step waiting for approval). Every other address is not an action.

use super::routes::{parameter, percent_decode};
use crate::actions::action::Action;

/// An action on one object of the view's namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionRequest {
    pub action: Action,
    pub name: String,
    pub step: Option<usize>,
}

/// Why an address is no action.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadAction {
    /// Not an action's address (answered 404).
    #[error("no action at this address")]
    NoAction,
    /// `step` is not a step number (answered 400).
    #[error("step {0:?} is not a step number")]
    BadStep(String),
}

/// The action `path` and `query` (without the `?`) ask for.
///
/// # Errors
/// The address is no action's, or its step no number.
pub fn action_request(path: &str, query: Option<&str>) -> Result<ActionRequest, BadAction> {
    let mut parts = path.strip_prefix('/').unwrap_or(path).split('/');
    let (Some(collection), Some(name), Some(action), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BadAction::NoAction);
    };
    let action: Action = action.parse().map_err(|_| BadAction::NoAction)?;
    let name = percent_decode(name);
    if action.target().path_segment() != collection || name.is_empty() {
        return Err(BadAction::NoAction);
    }
    let step = match query.and_then(|q| parameter(q, "step")) {
        Some(step) if action == Action::Promote => Some(
            step.parse()
                .ok()
                .filter(|step| *step > 0)
                .ok_or(BadAction::BadStep(step))?,
        ),
        _ => None,
    };
    Ok(ActionRequest { action, name, step })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_action_the_object_and_the_step() {
        assert_eq!(
            action_request("/applicationsets/stack/promote", Some("step=2")),
            Ok(ActionRequest {
                action: Action::Promote,
                name: "stack".to_owned(),
                step: Some(2)
            })
        );
        assert_eq!(
            action_request("/applications/web/sync", None),
            Ok(ActionRequest {
                action: Action::Sync,
                name: "web".to_owned(),
                step: None
            })
        );
    }

    #[test]
    fn other_addresses_are_no_action() {
        for path in [
            "/",
            "/applicationsets/stack",
            "/applications/stack/pause",
            "/applicationsets/stack/sync",
            "/applicationsets/stack/rollback",
            "/applicationsets//pause",
            "/applicationsets/stack/pause/more",
        ] {
            assert_eq!(
                action_request(path, None),
                Err(BadAction::NoAction),
                "{path}"
            );
        }
        assert_eq!(
            action_request("/applicationsets/stack/promote", Some("step=0")),
            Err(BadAction::BadStep("0".to_owned()))
        );
    }
}
