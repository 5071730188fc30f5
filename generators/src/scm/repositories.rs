//! An organisation's repositories as each provider's REST API lists them, for the `scmProvider`
//! generator: the list (GitHub `/orgs/{org}/repos`, GitLab `/groups/{group}/projects`, Gitea
//! `/orgs/{owner}/repos`, Bitbucket Server `/api/1.0/projects/{key}/repos`), each repository's
//! default branch or all its branches with their head commit, its labels (topics; Gitea's
//! repository labels) and whether a path exists on a branch (GitHub and Gitea `contents`,
//! GitLab the parent directory's `tree`, Bitbucket Server `browse`). Reads go through
//! [`PagedGet`], page by page as each provider pages.

use serde_json::Value;

use super::endpoint::{Provider, path_segments, segment};
use crate::scm_api::paging::{PagedGet, ScmError};

/// Which clone URL a repository's `url` parameter is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloneProtocol {
    Ssh,
    Https,
}

impl CloneProtocol {
    /// `cloneProtocol` as written: `ssh` (or unset) or `https`.
    ///
    /// # Errors
    /// Any other protocol.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "" | "ssh" => Ok(Self::Ssh),
            "https" => Ok(Self::Https),
            other => Err(format!("unknown clone protocol {other:?} (ssh or https)")),
        }
    }
}

/// One repository as the providers describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repository {
    /// The organisation, group path, owner or project key it belongs to.
    pub organization: String,
    pub name: String,
    pub id: String,
    /// The clone URL of the generator's protocol.
    pub url: String,
    /// The default branch, when the list says it (Bitbucket Server does not; an empty GitLab
    /// project has none).
    pub default_branch: Option<String>,
    pub labels: Vec<String>,
    /// The repository's own API URL (`…/repos/acme/web`, `…/projects/42`).
    api_url: String,
}

/// The items of a list, or none when it answered 404 (an empty repository's branches, a
/// directory that does not exist).
fn unless_not_found(list: Result<Vec<Value>, ScmError>) -> Result<Vec<Value>, ScmError> {
    match list {
        Err(ScmError::Status { status: 404, .. }) => Ok(Vec::new()),
        other => other,
    }
}

/// One branch of a repository and its head commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    pub name: String,
    pub sha: String,
}

/// Reading one organisation's repositories from `provider`'s API at `root`.
pub struct Scan<'a> {
    pub provider: Provider,
    pub client: PagedGet<'a>,
    /// The API root ([`Provider::root`]).
    pub root: String,
    pub clone: CloneProtocol,
    /// Every branch rather than the default branch.
    pub all_branches: bool,
    /// Leave out archived repositories (GitHub and Gitea's `archived` flag).
    pub exclude_archived: bool,
    /// Gitea: the owner asked for, every repository's organisation (as Argo CD reports it).
    pub owner: String,
}

impl Scan<'_> {
    /// Every repository of the list starting at `url`, archived ones left out when asked.
    ///
    /// # Errors
    /// A page that cannot be read, a repository without its name or id.
    pub fn repositories(&self, url: &str) -> Result<Vec<Repository>, ScmError> {
        let items = self.client.all(url, self.provider.paging())?;
        let mut repositories = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            if self.exclude_archived && item.get("archived").and_then(Value::as_bool) == Some(true)
            {
                continue;
            }
            let mut repository = self.parse(item).map_err(|message| ScmError::Answer {
                url: url.into(),
                message: format!("repository {index}: {message}"),
            })?;
            if self.provider == Provider::Gitea {
                repository.labels = self.gitea_labels(&repository)?;
            }
            repositories.push(repository);
        }
        Ok(repositories)
    }

    /// The branches the generator looks at: the default branch or, with `allBranches`, every
    /// branch; none for an empty repository (no default branch, or a 404).
    ///
    /// # Errors
    /// A page that cannot be read, a branch without its name or commit.
    pub fn branches(&self, repository: &Repository) -> Result<Vec<Branch>, ScmError> {
        let base = &repository.api_url;
        let branches = match self.provider {
            Provider::Gitlab => format!("{base}/repository/branches"),
            _ => format!("{base}/branches"),
        };
        let items = if self.all_branches {
            let url = format!("{branches}?{}", self.page_size());
            unless_not_found(self.client.all(&url, self.provider.paging()))?
        } else {
            let url = match (self.provider, &repository.default_branch) {
                (Provider::BitbucketServer, _) => format!("{branches}/default"),
                (_, Some(default)) => format!("{branches}/{}", segment(default)),
                (_, None) => return Ok(Vec::new()),
            };
            self.client.object(&url)?.into_iter().collect()
        };
        items
            .iter()
            .map(|item| {
                self.parse_branch(item).map_err(|message| ScmError::Answer {
                    url: branches.clone(),
                    message,
                })
            })
            .collect()
    }

    /// Whether `path` (a file or a directory) exists on `branch` of `repository`.
    ///
    /// # Errors
    /// The provider answers anything but found or not found.
    pub fn has_path(
        &self,
        repository: &Repository,
        branch: &str,
        path: &str,
    ) -> Result<bool, ScmError> {
        let base = &repository.api_url;
        let path = path.trim_matches('/');
        let at = segment(branch);
        let url = match self.provider {
            Provider::Github | Provider::Gitea => {
                format!("{base}/contents/{}?ref={at}", path_segments(path))
            }
            Provider::BitbucketServer => {
                format!("{base}/browse/{}?at={at}&type=true", path_segments(path))
            }
            Provider::Gitlab => {
                // GitLab lists trees, not paths: look for the path in its parent directory.
                let mut url = format!("{base}/repository/tree?ref={at}&per_page=100");
                if let Some((parent, _)) = path.rsplit_once('/') {
                    url.push_str(&format!("&path={}", segment(parent)));
                }
                let tree = unless_not_found(self.client.all(&url, self.provider.paging()))?;
                return Ok(tree
                    .iter()
                    .any(|item| item.get("path").and_then(Value::as_str) == Some(path)));
            }
        };
        Ok(self.client.found(&url)?.is_some())
    }

    /// The page size query of a list, as large as the provider allows.
    fn page_size(&self) -> &'static str {
        match self.provider {
            Provider::Github | Provider::Gitlab => "per_page=100",
            Provider::Gitea => "limit=50",
            Provider::BitbucketServer => "limit=100",
        }
    }

    /// Gitea's labels of `repository` (`/repos/{owner}/{repo}/labels`).
    fn gitea_labels(&self, repository: &Repository) -> Result<Vec<String>, ScmError> {
        let url = format!("{}/labels?{}", repository.api_url, self.page_size());
        Ok(self
            .client
            .all(&url, self.provider.paging())?
            .iter()
            .filter_map(|label| label.get("name")?.as_str().map(str::to_string))
            .collect())
    }

    /// One item of the repository list.
    fn parse(&self, item: &Value) -> Result<Repository, String> {
        let text = |pointer: &str| item.pointer(pointer).and_then(Value::as_str);
        let required = |pointer: &str| {
            text(pointer)
                .map(str::to_string)
                .ok_or_else(|| format!("no {} in the answer", pointer.trim_start_matches('/')))
        };
        let id = item
            .get("id")
            .and_then(|id| id.as_u64().map(|n| n.to_string()))
            .ok_or("no id in the answer")?;
        let strings = |pointer: &str| -> Vec<String> {
            item.pointer(pointer)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        let ssh = self.clone == CloneProtocol::Ssh;
        let root = &self.root;
        Ok(match self.provider {
            Provider::Github => {
                let organization = required("/owner/login")?;
                let name = required("/name")?;
                Repository {
                    api_url: format!("{root}/repos/{}/{}", segment(&organization), segment(&name)),
                    url: required(if ssh { "/ssh_url" } else { "/clone_url" })?,
                    default_branch: text("/default_branch").map(str::to_string),
                    labels: strings("/topics"),
                    organization,
                    name,
                    id,
                }
            }
            Provider::Gitlab => {
                let topics = strings("/topics");
                Repository {
                    api_url: format!("{root}/projects/{id}"),
                    organization: required("/namespace/full_path")?,
                    name: required("/path")?,
                    url: required(if ssh {
                        "/ssh_url_to_repo"
                    } else {
                        "/http_url_to_repo"
                    })?,
                    default_branch: text("/default_branch").map(str::to_string),
                    // GitLab before 14.5 calls topics tag_list.
                    labels: if topics.is_empty() {
                        strings("/tag_list")
                    } else {
                        topics
                    },
                    id,
                }
            }
            Provider::Gitea => {
                let name = required("/name")?;
                Repository {
                    api_url: format!("{root}/repos/{}/{}", segment(&self.owner), segment(&name)),
                    organization: self.owner.clone(),
                    // Argo CD's https URL for Gitea is the repository's page, which git clones.
                    url: required(if ssh { "/ssh_url" } else { "/html_url" })?,
                    default_branch: text("/default_branch").map(str::to_string),
                    labels: Vec::new(),
                    name,
                    id,
                }
            }
            Provider::BitbucketServer => {
                let organization = required("/project/key")?;
                let slug = required("/slug")?;
                let link = if ssh { "ssh" } else { "http" };
                let url = item
                    .pointer("/links/clone")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|clone| clone.get("name").and_then(Value::as_str) == Some(link))
                    .and_then(|clone| clone.get("href")?.as_str())
                    .ok_or_else(|| format!("no {link} clone link in the answer"))?;
                Repository {
                    api_url: format!(
                        "{root}/api/1.0/projects/{}/repos/{}",
                        segment(&organization),
                        segment(&slug)
                    ),
                    name: required("/name")?,
                    url: url.to_string(),
                    default_branch: None,
                    labels: Vec::new(),
                    organization,
                    id,
                }
            }
        })
    }

    /// One branch as the provider describes it.
    fn parse_branch(&self, item: &Value) -> Result<Branch, String> {
        let [name_at, sha_at] = match self.provider {
            Provider::Github => ["/name", "/commit/sha"],
            Provider::Gitlab | Provider::Gitea => ["/name", "/commit/id"],
            Provider::BitbucketServer => ["/displayId", "/latestCommit"],
        };
        let text = |pointer: &str| {
            item.pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| {
                    format!(
                        "a branch has no {} in the answer",
                        pointer.trim_start_matches('/')
                    )
                })
        };
        Ok(Branch {
            name: text(name_at)?,
            sha: text(sha_at)?,
        })
    }
}
