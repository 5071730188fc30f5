//! The web view's actions, done for a viewer (the shell of [`super::csrf`],
//! [`super::action_request`] and [`super::access_review`]): a POST passes the CSRF checks,
//! names an action, carries a bearer token the cluster accepts (TokenReview) and whose user
//! the cluster's RBAC allows `patch` on the object (SubjectAccessReview); then the controller
//! does the action with its own client, through the one implementation the command line uses
//! ([`crate::actions`]). The token is used for the TokenReview only: never logged, stored or
//! sent back.

use hyper::header::{self, HeaderMap};
use hyper::{Response, StatusCode};
use k8s_openapi::api::authentication::v1::{TokenReview, UserInfo};
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};

use super::access_review::{
    Refusal, access_review, access_verdict, bearer_token, reviewed_user, token_review,
};
use super::action_request::{ActionRequest, BadAction, action_request};
use super::csrf::{ActionHeaders, CsrfKey, TOKEN_HEADER};
use crate::actions::action::{Access, Action};
use crate::actions::error::ActionError;
use crate::actions::{application, rollout};
use crate::cluster::api_server::api_error::ApiError;
use crate::httpd::response::{Body, text};
use flotilla_core::api::application::SyncOperation;

/// Does the actions of one namespace's view.
pub struct Actor {
    client: Client,
    namespace: String,
    csrf: CsrfKey,
}

impl Actor {
    /// Actions on the objects of `namespace` through `client` (the controller's own), with
    /// pages' tokens signed by `csrf`.
    #[must_use]
    pub fn new(client: Client, namespace: &str, csrf: CsrfKey) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            csrf,
        }
    }

    /// The token of a page rendered now.
    #[must_use]
    pub fn page_token(&self) -> String {
        self.csrf.issue(Timestamp::now().as_second())
    }

    /// The answer to a POST of `path` and `query` with `headers`: the action's outcome for
    /// people, with 200, or why it was refused (400, 401, 403, 404, 409) or failed (502, 503).
    pub async fn act(
        &self,
        headers: &HeaderMap,
        path: &str,
        query: Option<&str>,
    ) -> Response<Body> {
        let (status, message) = match self.checked(headers, path, query).await {
            Ok(done) => (StatusCode::OK, done),
            Err((status, why)) => (status, why),
        };
        text(status, format!("{message}\n"))
    }

    async fn checked(
        &self,
        headers: &HeaderMap,
        path: &str,
        query: Option<&str>,
    ) -> Result<String, (StatusCode, String)> {
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let forgery_checks = ActionHeaders {
            origin: header(header::ORIGIN.as_str()),
            host: header(header::HOST.as_str()),
            sec_fetch_site: header("sec-fetch-site"),
            token: header(TOKEN_HEADER),
        };
        self.csrf
            .check(&forgery_checks, Timestamp::now().as_second())
            .map_err(|refusal| (StatusCode::FORBIDDEN, format!("refused: {refusal}")))?;
        let request = action_request(path, query).map_err(|bad| match bad {
            BadAction::NoAction => (StatusCode::NOT_FOUND, bad.to_string()),
            BadAction::BadStep(_) => (StatusCode::BAD_REQUEST, bad.to_string()),
        })?;
        let token = header(header::AUTHORIZATION.as_str())
            .and_then(bearer_token)
            .ok_or_else(|| {
                refused(&Refusal::Unauthenticated(
                    "a Kubernetes bearer token is needed to act".to_owned(),
                ))
            })?;
        let user = self.review(token, &request).await?;
        let username = user.username.unwrap_or_default();
        let done = self.run(&request, &username).await;
        let object = format!("{}/{}", self.namespace, request.name);
        match &done {
            Ok(_) => {
                tracing::info!(action = %request.action, %object, user = %username, "web view action done")
            }
            Err((_, why)) => {
                tracing::info!(action = %request.action, %object, user = %username, "web view action not done: {why}")
            }
        }
        done
    }

    /// The user of `token`, once the cluster said it may do `request`'s access.
    async fn review(
        &self,
        token: &str,
        request: &ActionRequest,
    ) -> Result<UserInfo, (StatusCode, String)> {
        let access = request.action.access(&self.namespace, &request.name);
        authorise(&self.client, token, &access).await
    }

    /// Does `request` for `username` with the controller's client.
    async fn run(
        &self,
        request: &ActionRequest,
        username: &str,
    ) -> Result<String, (StatusCode, String)> {
        let name = request.name.as_str();
        let applications = || Api::namespaced(self.client.clone(), &self.namespace);
        let appsets = || Api::namespaced(self.client.clone(), &self.namespace);
        let done = match request.action {
            Action::Sync => {
                application::request_sync(&applications(), name, SyncOperation::default(), username)
                    .await
            }
            Action::Terminate => application::terminate(&applications(), name).await,
            Action::Rollback => {
                application::rollback(&applications(), name, None, (false, false), username).await
            }
            Action::Pause => rollout::set_paused(&appsets(), name, true).await,
            Action::Resume => rollout::set_paused(&appsets(), name, false).await,
            Action::Promote => rollout::promote(&appsets(), name, request.step).await,
        };
        done.map_err(|error| {
            let status = match &error {
                ActionError::Refused(_) => StatusCode::CONFLICT,
                ActionError::Read { source, .. } if source.status_code() == Some(404) => {
                    StatusCode::NOT_FOUND
                }
                ActionError::Read { .. } | ActionError::Write { .. } => StatusCode::BAD_GATEWAY,
            };
            let cause = std::error::Error::source(&error)
                .map(|cause| format!(": {cause}"))
                .unwrap_or_default();
            (status, format!("{error}{cause}"))
        })
    }
}

/// The user of `token`, once the cluster (asked through `client`, the controller's) said it
/// may do `access`: a TokenReview, then a SubjectAccessReview.
///
/// # Errors
/// The status and message to answer: 401 for a token the cluster does not accept, 403 for an
/// access its RBAC does not allow, 503 when a review cannot be sent.
pub(super) async fn authorise(
    client: &Client,
    token: &str,
    access: &Access,
) -> Result<UserInfo, (StatusCode, String)> {
    let unavailable = |what: &str, error: kube::Error| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the controller cannot {what}: {}", ApiError::from(error)),
        )
    };
    let answer = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &token_review(token))
        .await
        .map_err(|error| unavailable("review the token (TokenReview)", error))?;
    let user = reviewed_user(&answer).map_err(|refusal| refused(&refusal))?;
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &access_review(&user, access))
        .await
        .map_err(|error| unavailable("review the access (SubjectAccessReview)", error))?;
    access_verdict(&answer, &user, access).map_err(|refusal| refused(&refusal))?;
    Ok(user)
}

/// The answer to a viewer the cluster does not let act.
pub(super) fn refused(refusal: &Refusal) -> (StatusCode, String) {
    let status = match refusal {
        Refusal::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
        Refusal::Forbidden(_) => StatusCode::FORBIDDEN,
    };
    (status, format!("refused: {refusal}"))
}
