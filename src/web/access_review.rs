//! Who a viewer is and what the cluster lets them do, decided from the cluster's own answers
//! (pure): the TokenReview (authentication.k8s.io/v1) sent for the viewer's bearer token, the
//! user it answers with, the SubjectAccessReview (authorization.k8s.io/v1) asking whether that
//! user — with their groups, uid and extra — may do an action's [`Access`], and the verdict.
//! So the web view allows exactly what `kubectl` would allow that user. The token goes only
//! into the TokenReview; no answer, message or log line carries it.

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};

use crate::actions::action::Access;

/// Why a viewer may not act.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No bearer token, or one the cluster does not accept (answered 401).
    #[error("{0}")]
    Unauthenticated(String),
    /// The cluster's RBAC does not allow the user the access (answered 403).
    #[error("{0}")]
    Forbidden(String),
}

/// The bearer token of an `Authorization` header's value (`Bearer TOKEN`, the scheme in any
/// case); `None` for another scheme or an empty token.
#[must_use]
pub fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The TokenReview that asks the API server who `token` is (for the API server's own
/// audiences, as kubectl's requests are checked).
#[must_use]
pub fn token_review(token: &str) -> TokenReview {
    TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_owned()),
            audiences: None,
        },
        ..TokenReview::default()
    }
}

/// The user the API server's answer to [`token_review`] names.
///
/// # Errors
/// The token is not authenticated (its error is not repeated: it may quote the token).
pub fn reviewed_user(answer: &TokenReview) -> Result<UserInfo, Refusal> {
    answer
        .status
        .as_ref()
        .filter(|status| status.authenticated == Some(true))
        .and_then(|status| status.user.clone())
        .filter(|user| {
            user.username
                .as_deref()
                .is_some_and(|name| !name.is_empty())
        })
        .ok_or_else(|| {
            Refusal::Unauthenticated(
                "the cluster does not accept this bearer token (TokenReview)".to_owned(),
            )
        })
}

/// The SubjectAccessReview asking whether `user` may do `access`.
#[must_use]
pub fn access_review(user: &UserInfo, access: &Access) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            groups: user.groups.clone(),
            uid: user.uid.clone(),
            extra: user.extra.clone(),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(access.verb.to_owned()),
                group: Some(access.group.clone()),
                resource: Some(access.resource.clone()),
                subresource: Some(access.subresource.clone()).filter(|sub| !sub.is_empty()),
                namespace: Some(access.namespace.clone()),
                name: Some(access.name.clone()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}

/// The verdict of the API server's answer to [`access_review`] for `user` and `access`.
///
/// # Errors
/// Not allowed (denied, or no rule allows it), with the authorizer's reason when it gave one.
pub fn access_verdict(
    answer: &SubjectAccessReview,
    user: &UserInfo,
    access: &Access,
) -> Result<(), Refusal> {
    let status = answer.status.as_ref();
    if status.is_some_and(|status| status.allowed && status.denied != Some(true)) {
        return Ok(());
    }
    let reason = status
        .and_then(|status| status.reason.as_deref())
        .filter(|reason| !reason.is_empty())
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default();
    let group = if access.group.is_empty() {
        String::new()
    } else {
        format!(".{}", access.group)
    };
    let subresource = if access.subresource.is_empty() {
        String::new()
    } else {
        format!("/{}", access.subresource)
    };
    Err(Refusal::Forbidden(format!(
        "{} may not {} {}{group}{subresource} {} in namespace {}{reason}",
        user.username.as_deref().unwrap_or_default(),
        access.verb,
        access.resource,
        access.name,
        access.namespace,
    )))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::authentication::v1::TokenReviewStatus;
    use k8s_openapi::api::authorization::v1::SubjectAccessReviewStatus;

    use super::*;
    use crate::actions::action::Action;

    fn user() -> UserInfo {
        UserInfo {
            username: Some("system:serviceaccount:team:deployer".to_owned()),
            groups: Some(vec!["system:serviceaccounts".to_owned()]),
            uid: Some("u-1".to_owned()),
            extra: None,
        }
    }

    #[test]
    fn reads_only_bearer_tokens() {
        assert_eq!(bearer_token("Bearer abc.def"), Some("abc.def"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }

    #[test]
    fn an_unauthenticated_token_is_refused_without_repeating_the_servers_error() {
        let answer = TokenReview {
            status: Some(TokenReviewStatus {
                authenticated: Some(false),
                error: Some("invalid bearer token secret-token".to_owned()),
                ..TokenReviewStatus::default()
            }),
            ..token_review("secret-token")
        };
        let refusal = reviewed_user(&answer).unwrap_err();
        assert!(matches!(refusal, Refusal::Unauthenticated(_)));
        assert!(!refusal.to_string().contains("secret-token"), "{refusal}");
        let authenticated = TokenReview {
            status: Some(TokenReviewStatus {
                authenticated: Some(true),
                user: Some(user()),
                ..TokenReviewStatus::default()
            }),
            ..TokenReview::default()
        };
        assert_eq!(reviewed_user(&authenticated), Ok(user()));
    }

    #[test]
    fn the_access_review_asks_for_the_users_identity_and_the_actions_access() {
        let access = Action::Pause.access("team", "stack");
        let review = access_review(&user(), &access);
        assert_eq!(review.spec.user, user().username);
        assert_eq!(review.spec.groups, user().groups);
        assert_eq!(review.spec.uid, user().uid);
        let attributes = review.spec.resource_attributes.unwrap();
        assert_eq!(
            (
                attributes.verb.as_deref(),
                attributes.group.as_deref(),
                attributes.resource.as_deref(),
                attributes.namespace.as_deref(),
                attributes.name.as_deref()
            ),
            (
                Some("patch"),
                Some("flotilla.dev"),
                Some("applicationsets"),
                Some("team"),
                Some("stack")
            )
        );
    }

    #[test]
    fn only_an_allowed_review_lets_the_action_through() {
        let access = Action::Pause.access("team", "stack");
        let answer = |allowed: bool, denied: Option<bool>, reason: &str| SubjectAccessReview {
            status: Some(SubjectAccessReviewStatus {
                allowed,
                denied,
                reason: Some(reason.to_owned()),
                evaluation_error: None,
            }),
            ..SubjectAccessReview::default()
        };
        assert_eq!(
            access_verdict(&answer(true, None, ""), &user(), &access),
            Ok(())
        );
        assert_eq!(
            access_verdict(&answer(false, None, ""), &user(), &access),
            Err(Refusal::Forbidden(
                "system:serviceaccount:team:deployer may not patch applicationsets.flotilla.dev stack in namespace team".to_owned()
            ))
        );
        assert!(matches!(
            access_verdict(&answer(true, Some(true), "denied by webhook"), &user(), &access),
            Err(Refusal::Forbidden(reason)) if reason.ends_with(": denied by webhook")
        ));
        assert!(access_verdict(&SubjectAccessReview::default(), &user(), &access).is_err());
    }
}
