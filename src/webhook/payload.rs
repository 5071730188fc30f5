//! The repository a push webhook names (every URL its payload gives for it: web page, https
//! and ssh clone URLs) and the refs pushed, read from each provider's documented push payload:
//! GitHub, Gitea/Forgejo and Gogs (`repository.html_url`, `clone_url`, `ssh_url`, GitHub's
//! `git_url`; `ref`), GitLab (`project.web_url`, `git_http_url`, `git_ssh_url`, and the older
//! `repository` fields; `ref`), Bitbucket Cloud (`repository.links.html.href`;
//! `push.changes[].new.name`, or `old.name` for a deleted branch) and Bitbucket Server
//! (`repository.links.clone[].href`; `changes[].ref.id`); and the default branch where the
//! payload gives it (`repository.default_branch`, GitLab's `project.default_branch`, Bitbucket
//! Cloud's `repository.mainbranch.name`). Pure.

use serde_json::Value;

use super::provider::Provider;
use super::repo_url::RepoKey;

/// What a push names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Push {
    /// The repository, by every URL the payload gives for it.
    pub repos: Vec<RepoKey>,
    /// The refs pushed (`refs/heads/main`, or a bare branch name from Bitbucket Cloud).
    pub refs: Vec<String>,
    /// The repository's default branch, when the payload says (not Bitbucket Server's).
    pub default_branch: Option<String>,
}

/// A push (or pull-request) payload that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PayloadError {
    #[error(
        "the {provider} {event} payload is not JSON ({error}); configure the webhook to send application/json"
    )]
    NotJson {
        provider: &'static str,
        /// `push` or `pull request`.
        event: &'static str,
        error: String,
    },
    #[error("the {provider} {event} payload names no repository (looked at {fields})")]
    NoRepository {
        provider: &'static str,
        event: &'static str,
        fields: &'static str,
    },
}

/// `body`, a payload of `provider`'s `event`, as JSON.
///
/// # Errors
/// It is not JSON.
pub fn parse(provider: Provider, event: &'static str, body: &[u8]) -> Result<Value, PayloadError> {
    serde_json::from_slice(body).map_err(|error| PayloadError::NotJson {
        provider: provider.name(),
        event,
        error: error.to_string(),
    })
}

/// The JSON pointers of the repository's URLs in `provider`'s push payload (`*` stands for
/// every element of an array).
fn url_fields(provider: Provider) -> &'static [&'static str] {
    match provider {
        Provider::GitHub | Provider::Gitea | Provider::Gogs => &[
            "/repository/html_url",
            "/repository/clone_url",
            "/repository/ssh_url",
            "/repository/git_url",
        ],
        Provider::GitLab => &[
            "/project/web_url",
            "/project/git_http_url",
            "/project/git_ssh_url",
            "/repository/homepage",
            "/repository/git_http_url",
            "/repository/git_ssh_url",
        ],
        Provider::Bitbucket => &["/repository/links/html/href"],
        Provider::BitbucketServer => &["/repository/links/clone/*/href"],
    }
}

/// The JSON pointers of the pushed refs.
fn ref_fields(provider: Provider) -> &'static [&'static str] {
    match provider {
        Provider::GitHub | Provider::Gitea | Provider::Gogs | Provider::GitLab => &["/ref"],
        Provider::Bitbucket => &["/push/changes/*/new/name", "/push/changes/*/old/name"],
        Provider::BitbucketServer => &["/changes/*/ref/id"],
    }
}

/// The JSON pointer of the repository's default branch, when `provider`'s payload has one.
fn default_branch_field(provider: Provider) -> Option<&'static str> {
    match provider {
        Provider::GitHub | Provider::Gitea | Provider::Gogs => Some("/repository/default_branch"),
        Provider::GitLab => Some("/project/default_branch"),
        Provider::Bitbucket => Some("/repository/mainbranch/name"),
        Provider::BitbucketServer => None,
    }
}

/// The push `body` of `provider` announces.
///
/// # Errors
/// The body is not JSON, or names no repository URL.
pub fn push(provider: Provider, body: &[u8]) -> Result<Push, PayloadError> {
    let payload = parse(provider, "push", body)?;
    let repos: Vec<RepoKey> = distinct(&payload, url_fields(provider), RepoKey::of);
    if repos.is_empty() {
        return Err(PayloadError::NoRepository {
            provider: provider.name(),
            event: "push",
            fields: match provider {
                Provider::GitHub | Provider::Gitea | Provider::Gogs => {
                    "repository.html_url, clone_url, ssh_url"
                }
                Provider::GitLab => "project.web_url, git_http_url, git_ssh_url",
                Provider::Bitbucket => "repository.links.html.href",
                Provider::BitbucketServer => "repository.links.clone[].href",
            },
        });
    }
    let refs = distinct(&payload, ref_fields(provider), |r| Some(r.to_owned()));
    let default_branch = default_branch_field(provider)
        .and_then(|field| payload.pointer(field))
        .and_then(Value::as_str)
        .filter(|branch| !branch.is_empty())
        .map(str::to_owned);
    Ok(Push {
        repos,
        refs,
        default_branch,
    })
}

/// The strings at `fields` of `payload` that `read` accepts, sorted, each once.
fn distinct<T: Ord>(payload: &Value, fields: &[&str], read: impl Fn(&str) -> Option<T>) -> Vec<T> {
    let mut found: Vec<T> = fields
        .iter()
        .flat_map(|field| strings(payload, field))
        .filter_map(read)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The strings at `pointer` in `value`, `*` segments taking every element of an array.
fn strings<'a>(value: &'a Value, pointer: &str) -> Vec<&'a str> {
    let mut found = vec![value];
    for segment in pointer.split('/').skip(1) {
        found = found
            .into_iter()
            .flat_map(|value| match (segment, value) {
                ("*", Value::Array(items)) => items.iter().collect(),
                (key, Value::Object(map)) => map.get(key).into_iter().collect(),
                _ => Vec::new(),
            })
            .collect();
    }
    found.into_iter().filter_map(Value::as_str).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn keys(push: &Push) -> Vec<String> {
        push.repos.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn github_names_its_web_and_clone_urls() {
        let body = json!({
            "ref": "refs/heads/main",
            "repository": {
                "default_branch": "main",
                "html_url": "https://github.com/Acme/Platform",
                "clone_url": "https://github.com/Acme/Platform.git",
                "ssh_url": "git@github.com:Acme/Platform.git",
                "git_url": "git://github.com/Acme/Platform.git"
            }
        });
        let push = push(Provider::GitHub, body.to_string().as_bytes()).unwrap();
        assert_eq!(keys(&push), ["github.com/acme/platform"]);
        assert_eq!(push.refs, ["refs/heads/main"]);
        assert_eq!(push.default_branch.as_deref(), Some("main"));
    }

    #[test]
    fn bitbucket_server_names_each_clone_link() {
        let body = json!({
            "eventKey": "repo:refs_changed",
            "repository": {"links": {"clone": [
                {"href": "ssh://git@bitbucket.example.com:7999/plat/platform.git", "name": "ssh"},
                {"href": "https://bitbucket.example.com/scm/plat/platform.git", "name": "http"}
            ]}},
            "changes": [{"ref": {"id": "refs/heads/main"}, "type": "UPDATE"}]
        });
        let push = push(Provider::BitbucketServer, body.to_string().as_bytes()).unwrap();
        assert_eq!(
            keys(&push),
            [
                "bitbucket.example.com/plat/platform",
                "bitbucket.example.com/scm/plat/platform"
            ]
        );
        assert_eq!(push.refs, ["refs/heads/main"]);
        assert_eq!(push.default_branch, None);
    }

    #[test]
    fn bitbucket_cloud_names_its_page_and_branches() {
        let body = json!({
            "repository": {"links": {"html": {"href": "https://bitbucket.org/acme/platform"}}},
            "push": {"changes": [{"new": {"name": "main", "type": "branch"}, "old": {"name": "main"}}]}
        });
        let push = push(Provider::Bitbucket, body.to_string().as_bytes()).unwrap();
        assert_eq!(keys(&push), ["bitbucket.org/acme/platform"]);
        assert_eq!(push.refs, ["main"]);
    }

    #[test]
    fn a_payload_without_a_repository_or_not_json_is_refused() {
        assert!(matches!(
            push(Provider::GitLab, br#"{"ref": "refs/heads/main"}"#),
            Err(PayloadError::NoRepository {
                provider: "gitlab",
                ..
            })
        ));
        assert!(matches!(
            push(Provider::GitHub, b"payload=%7B%7D"),
            Err(PayloadError::NotJson {
                provider: "github",
                ..
            })
        ));
    }
}
