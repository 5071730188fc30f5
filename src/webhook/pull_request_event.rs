//! The repository a pull-request webhook is about, named as that provider's `pullRequest`
//! generator names it, and what happened, read from each provider's documented payload:
//! GitHub (`repository.owner.login`, `repository.name` and the host of the API URL
//! `repository.url`, as Argo CD reads them; `action`), GitLab's `Merge Request Hook`
//! (`object_attributes.target_project_id` and the target project's `path_with_namespace`, the
//! host of `project.web_url`; `object_attributes.action`), Gitea and Forgejo
//! (`repository.owner.login`, or `username`, `repository.name` and the host of
//! `repository.html_url`; `action`) and Bitbucket Server (`pullRequest.toRef.repository`'s
//! `project.key` and `slug`: the repository the pull request is listed in; its pull-request
//! payloads carry no usable URL; the event key `eventKey`). Whether the action can change what
//! a generator lists is [`PullRequestEvent::changes_listing`]. Pure.

use std::fmt;

use serde_json::Value;

use super::payload::{PayloadError, parse};
use super::provider::Provider;
use super::repo_url::url_host;

/// The repository of a pull-request event, in the terms of its provider's generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PullRequestRepo {
    /// `owner/repo`, with the (lower-case) host of the API that lists its pull requests.
    Github {
        api_host: String,
        owner: String,
        repo: String,
    },
    /// The target project, by id and path (`group/name`), with its server's host.
    Gitlab {
        host: String,
        project_id: Option<u64>,
        path: Option<String>,
    },
    /// `owner/repo` on the server `host`.
    Gitea {
        host: String,
        owner: String,
        repo: String,
    },
    /// The repository `repo` (its slug) of the project `project` (its key).
    BitbucketServer { project: String, repo: String },
}

/// What a verified pull-request webhook says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequestEvent {
    pub provider: Provider,
    pub repo: PullRequestRepo,
    /// The pull request's number (GitLab's `iid`, Bitbucket Server's `id`), when given.
    pub number: Option<u64>,
    /// The provider's action (`opened`, GitLab's `open`, Bitbucket Server's `pr:opened`).
    pub action: String,
}

/// The actions after which a generator may list other pull requests (or other heads, labels
/// or target branches): Argo CD's lists for GitHub and GitLab; Gitea's names for GitHub's
/// (Argo CD takes no Gitea pull-request event); for Bitbucket Server the keys that open,
/// update, retarget or close one (Argo CD takes none).
fn listing_actions(provider: Provider) -> &'static [&'static str] {
    match provider {
        Provider::GitHub => &[
            "opened",
            "closed",
            "reopened",
            "synchronize",
            "labeled",
            "unlabeled",
        ],
        Provider::GitLab => &["open", "close", "reopen", "update", "merge"],
        Provider::Gitea => &[
            "opened",
            "closed",
            "reopened",
            "synchronized",
            "label_updated",
            "label_cleared",
        ],
        Provider::BitbucketServer => &[
            "pr:opened",
            "pr:from_ref_updated",
            "pr:modified",
            "pr:merged",
            "pr:declined",
            "pr:deleted",
        ],
        Provider::Bitbucket | Provider::Gogs => &[],
    }
}

impl PullRequestEvent {
    /// Whether the action may change what a generator of the repository lists.
    #[must_use]
    pub fn changes_listing(&self) -> bool {
        listing_actions(self.provider).contains(&self.action.as_str())
    }
}

impl fmt::Display for PullRequestRepo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Github {
                api_host,
                owner,
                repo,
            } => write!(f, "{owner}/{repo} on {api_host}"),
            Self::Gitlab {
                host,
                project_id,
                path,
            } => match (path, project_id) {
                (Some(path), _) => write!(f, "project {path} on {host}"),
                (None, Some(id)) => write!(f, "project {id} on {host}"),
                (None, None) => write!(f, "a project on {host}"),
            },
            Self::Gitea { host, owner, repo } => write!(f, "{owner}/{repo} on {host}"),
            Self::BitbucketServer { project, repo } => write!(f, "{project}/{repo}"),
        }
    }
}

impl fmt::Display for PullRequestEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pull request")?;
        if let Some(number) = self.number {
            write!(f, " #{number}")?;
        }
        write!(f, " of {} ({})", self.repo, self.action)
    }
}

/// The pull-request event `body` of `provider` announces.
///
/// # Errors
/// The body is not JSON, or does not name the repository as the provider documents.
pub fn pull_request(provider: Provider, body: &[u8]) -> Result<PullRequestEvent, PayloadError> {
    let payload = parse(provider, "pull request", body)?;
    let text = |pointer: &str| {
        payload
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    let number = |pointer: &str| payload.pointer(pointer).and_then(Value::as_u64);
    let host = |pointer: &str| text(pointer).as_deref().and_then(url_host);
    let missing = |fields| PayloadError::NoRepository {
        provider: provider.name(),
        event: "pull request",
        fields,
    };
    let (repo, number, action) = match provider {
        Provider::GitHub => {
            let (Some(api_host), Some(owner), Some(repo)) = (
                host("/repository/url"),
                text("/repository/owner/login"),
                text("/repository/name"),
            ) else {
                return Err(missing("repository.url, owner.login, name"));
            };
            let repo = PullRequestRepo::Github {
                api_host,
                owner,
                repo,
            };
            (repo, number("/number"), text("/action"))
        }
        Provider::GitLab => {
            let path = text("/object_attributes/target/path_with_namespace")
                .or_else(|| text("/project/path_with_namespace"));
            let project_id =
                number("/object_attributes/target_project_id").or_else(|| number("/project/id"));
            let host =
                host("/project/web_url").or_else(|| host("/object_attributes/target/web_url"));
            let Some(host) = host.filter(|_| path.is_some() || project_id.is_some()) else {
                return Err(missing(
                    "project.web_url, object_attributes.target_project_id or target.path_with_namespace",
                ));
            };
            let repo = PullRequestRepo::Gitlab {
                host,
                project_id,
                path,
            };
            (
                repo,
                number("/object_attributes/iid"),
                text("/object_attributes/action"),
            )
        }
        Provider::Gitea => {
            let owner =
                text("/repository/owner/login").or_else(|| text("/repository/owner/username"));
            let (Some(host), Some(owner), Some(repo)) = (
                host("/repository/html_url"),
                owner,
                text("/repository/name"),
            ) else {
                return Err(missing("repository.html_url, owner.login, name"));
            };
            let repo = PullRequestRepo::Gitea { host, owner, repo };
            (repo, number("/number"), text("/action"))
        }
        Provider::BitbucketServer => {
            let (Some(project), Some(repo)) = (
                text("/pullRequest/toRef/repository/project/key"),
                text("/pullRequest/toRef/repository/slug"),
            ) else {
                return Err(missing("pullRequest.toRef.repository.project.key, slug"));
            };
            let repo = PullRequestRepo::BitbucketServer { project, repo };
            (repo, number("/pullRequest/id"), text("/eventKey"))
        }
        Provider::Bitbucket | Provider::Gogs => {
            return Err(missing("nothing: no pullRequest generator reads this host"));
        }
    };
    Ok(PullRequestEvent {
        provider,
        repo,
        number,
        action: action.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(provider: Provider, body: &Value) -> PullRequestEvent {
        pull_request(provider, body.to_string().as_bytes()).unwrap()
    }

    /// Asserts that the action of `body` may change a listing, and that `other`, put at
    /// `pointer` instead, does not.
    fn changes_listing_unlike(provider: Provider, body: &Value, pointer: &str, other: &str) {
        assert!(read(provider, body).changes_listing());
        let mut changed = body.clone();
        *changed.pointer_mut(pointer).expect("the action") = json!(other);
        assert!(!read(provider, &changed).changes_listing(), "{other}");
    }

    #[test]
    fn github_names_the_owner_the_repository_and_the_api_host() {
        // docs.github.com, "Webhook events and payloads", pull_request (trimmed).
        let body = json!({
            "action": "opened",
            "number": 2,
            "pull_request": {
                "url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/2",
                "number": 2, "state": "open", "title": "Update the README with new information.",
                "head": {"ref": "changes", "sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821"},
                "base": {"ref": "master", "sha": "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"}
            },
            "repository": {
                "id": 186_853_002, "name": "Hello-World", "full_name": "Codertocat/Hello-World",
                "owner": {"login": "Codertocat", "type": "User"},
                "html_url": "https://github.com/Codertocat/Hello-World",
                "url": "https://api.github.com/repos/Codertocat/Hello-World"
            },
            "sender": {"login": "Codertocat"}
        });
        let event = read(Provider::GitHub, &body);
        assert_eq!(
            event,
            PullRequestEvent {
                provider: Provider::GitHub,
                repo: PullRequestRepo::Github {
                    api_host: "api.github.com".into(),
                    owner: "Codertocat".into(),
                    repo: "Hello-World".into()
                },
                number: Some(2),
                action: "opened".into()
            }
        );
        changes_listing_unlike(Provider::GitHub, &body, "/action", "edited");
        assert_eq!(
            event.to_string(),
            "pull request #2 of Codertocat/Hello-World on api.github.com (opened)"
        );
    }

    #[test]
    fn gitlab_names_the_target_project_by_id_and_path() {
        // docs.gitlab.com, "Webhook events", merge request events (trimmed).
        let body = json!({
            "object_kind": "merge_request",
            "event_type": "merge_request",
            "user": {"id": 1, "name": "Administrator", "username": "root"},
            "project": {
                "id": 1, "name": "Gitlab Test",
                "web_url": "http://example.com/gitlabhq/gitlab-test",
                "path_with_namespace": "gitlabhq/gitlab-test", "default_branch": "master"
            },
            "object_attributes": {
                "id": 99, "iid": 1, "target_branch": "master", "source_branch": "ms-viewport",
                "source_project_id": 14, "target_project_id": 14, "state": "opened",
                "action": "open",
                "source": {"name": "Awesome Project", "path_with_namespace": "awesome_space/awesome_project"},
                "target": {
                    "name": "Awesome Project", "web_url": "http://example.com/awesome_space/awesome_project",
                    "path_with_namespace": "awesome_space/awesome_project"
                },
                "last_commit": {"id": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"}
            },
            "labels": [{"id": 206, "title": "API"}]
        });
        let event = read(Provider::GitLab, &body);
        assert_eq!(
            event.repo,
            PullRequestRepo::Gitlab {
                host: "example.com".into(),
                project_id: Some(14),
                path: Some("awesome_space/awesome_project".into())
            }
        );
        assert_eq!((event.number, event.action.as_str()), (Some(1), "open"));
        changes_listing_unlike(
            Provider::GitLab,
            &body,
            "/object_attributes/action",
            "approved",
        );
    }

    #[test]
    fn gitea_names_the_owner_the_repository_and_the_server() {
        // docs.gitea.com, "Webhooks", pull_request (trimmed; Forgejo sends the same).
        let body = json!({
            "action": "synchronized",
            "number": 2,
            "pull_request": {
                "id": 1, "number": 2, "state": "open", "title": "update",
                "head": {"ref": "feature", "sha": "2fca5f7a5a9f31e5a6d7e1b9c1c2d6f0c0d1e2f3"},
                "base": {"ref": "master"}
            },
            "repository": {
                "id": 1, "name": "Example", "full_name": "Example/Example",
                "owner": {"id": 1, "login": "Example", "username": "Example"},
                "html_url": "http://localhost:3000/Example/Example",
                "clone_url": "http://localhost:3000/Example/Example.git"
            },
            "sender": {"id": 2, "login": "example2", "username": "example2"}
        });
        let event = read(Provider::Gitea, &body);
        assert_eq!(
            event.repo,
            PullRequestRepo::Gitea {
                host: "localhost".into(),
                owner: "Example".into(),
                repo: "Example".into()
            }
        );
        changes_listing_unlike(Provider::Gitea, &body, "/action", "assigned");
    }

    #[test]
    fn bitbucket_server_names_the_target_repository_and_the_event_key() {
        // confluence.atlassian.com, Bitbucket Server "Event payload", pr:opened (trimmed): a
        // pull request from a fork into PROJECT_1/rep_1.
        let repository = |slug: &str, key: &str| {
            json!({"slug": slug, "id": 1, "name": slug, "scmId": "git", "state": "AVAILABLE",
                   "project": {"key": key, "id": 1, "name": "Project 1", "type": "NORMAL"}})
        };
        let body = json!({
            "eventKey": "pr:opened",
            "date": "2017-09-19T09:58:11+1000",
            "actor": {"name": "admin", "id": 1, "slug": "admin", "type": "NORMAL"},
            "pullRequest": {
                "id": 1, "version": 0, "title": "a new file added", "state": "OPEN",
                "open": true, "closed": false,
                "fromRef": {"id": "refs/heads/a-branch", "displayId": "a-branch",
                            "latestCommit": "ef8755f06ee4b28c96a847a95cb8ec8ed6ddd1ca",
                            "repository": repository("rep_1", "~ADMIN")},
                "toRef": {"id": "refs/heads/master", "displayId": "master",
                          "latestCommit": "178864a7d521b6f5e720b386b2c2b0ef8563e0dc",
                          "repository": repository("rep_1", "PROJECT_1")},
                "locked": false,
                "links": {"self": [null]}
            }
        });
        let event = read(Provider::BitbucketServer, &body);
        assert_eq!(
            event.repo,
            PullRequestRepo::BitbucketServer {
                project: "PROJECT_1".into(),
                repo: "rep_1".into()
            }
        );
        assert_eq!(
            (event.number, event.action.as_str()),
            (Some(1), "pr:opened")
        );
        changes_listing_unlike(
            Provider::BitbucketServer,
            &body,
            "/eventKey",
            "pr:reviewer:approved",
        );
    }

    #[test]
    fn each_providers_listing_actions_are_argo_cds() {
        let event = |provider: Provider, action: &str| PullRequestEvent {
            provider,
            repo: PullRequestRepo::BitbucketServer {
                project: "P".into(),
                repo: "r".into(),
            },
            number: None,
            action: action.into(),
        };
        for (provider, action, expected) in [
            (Provider::GitHub, "closed", true),
            (Provider::GitHub, "unlabeled", true),
            (Provider::GitHub, "synchronize", true),
            (Provider::GitHub, "assigned", false),
            (Provider::GitHub, "edited", false),
            (Provider::GitLab, "merge", true),
            (Provider::GitLab, "unapproved", false),
            (Provider::Gitea, "label_cleared", true),
            (Provider::Gitea, "reviewed", false),
            (Provider::BitbucketServer, "pr:declined", true),
            (Provider::BitbucketServer, "pr:comment:added", false),
            (Provider::GitHub, "", false),
        ] {
            assert_eq!(
                event(provider, action).changes_listing(),
                expected,
                "{provider:?} {action}"
            );
        }
    }

    #[test]
    fn a_payload_without_its_repository_or_not_json_is_refused() {
        let no_owner = json!({"action": "opened", "repository": {"name": "web", "url": "https://api.github.com/repos/a/web"}});
        assert_eq!(
            pull_request(Provider::GitHub, no_owner.to_string().as_bytes()),
            Err(PayloadError::NoRepository {
                provider: "github",
                event: "pull request",
                fields: "repository.url, owner.login, name"
            })
        );
        let no_project = json!({"object_attributes": {"action": "open"}, "project": {"web_url": "https://gitlab.com/a/b"}});
        assert!(matches!(
            pull_request(Provider::GitLab, no_project.to_string().as_bytes()),
            Err(PayloadError::NoRepository {
                provider: "gitlab",
                ..
            })
        ));
        let error = pull_request(Provider::Gitea, b"payload=%7B%7D").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("the gitea pull request payload is not JSON"),
            "{error}"
        );
    }
}
