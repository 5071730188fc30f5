//! The `pullRequest` generator: one parameter set per pull request of a repository, listed from
//! the provider's REST API (GitHub, GitLab, Gitea, Bitbucket Server) through the injected
//! [`crate::source::ScmApi`], kept when it carries every `labels` entry and matches a filter,
//! with the parameters Argo CD gives (`number`, `branch`, `branch_slug`, `head_sha`, …).

use regex::Regex;
use serde_json::Value;

use super::endpoint::{self, Auth, Provider, api_error, ensure_available, field_error, segment};
use super::pattern::{compile, matches};
use super::slug::slug;
use crate::generator::{
    GenerateContext, Generator, GeneratorError, NamespaceSources, add_templated_values,
};
use crate::params::Params;
use crate::scm_api::paging::ScmError;
use crate::spec::{
    PullRequestBitbucketServer, PullRequestFilter, PullRequestGenerator, PullRequestGitea,
    PullRequestGithub, PullRequestGitlab,
};
use crate::template::TemplateMode;

/// One pull (or merge) request as the providers describe it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    pub title: String,
    pub branch: String,
    pub target_branch: String,
    pub head_sha: String,
    pub labels: Vec<String>,
    pub author: String,
}

impl Generator for PullRequestGenerator {
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError> {
        let filters = compile_filters(&self.filters)?;
        let pulls = self.list(ctx.namespace())?;
        let mut sets = Vec::new();
        for pull in pulls.iter().filter(|pull| matches_any(pull, &filters)) {
            let mut params = pull_request_params(pull, ctx.mode());
            add_templated_values(&self.values, &mut params, ctx)?;
            sets.push(params);
        }
        Ok(sets)
    }

    fn template(&self) -> Option<&Value> {
        self.template.as_ref()
    }
}

impl PullRequestGenerator {
    /// The pull requests of the one provider set, with its `labels` applied.
    fn list(&self, namespace: NamespaceSources<'_>) -> Result<Vec<PullRequest>, GeneratorError> {
        let block = Block::one(
            "bitbucket and azureDevOps",
            self.github.as_ref(),
            self.gitlab.as_ref(),
            self.gitea.as_ref(),
            self.bitbucket_server.as_ref(),
        )?;
        let provider = block.provider();
        let request = request(provider, block)?;
        let api_error = |source| api_error(provider, source);
        // No network (render, simulate): say so before reading any Secret.
        ensure_available(namespace.scm, provider, &request.url)?;
        let credential = auth(block).credential(provider, namespace.objects)?;
        let client = provider.client(namespace.scm, &credential, request.insecure);
        let items = client
            .all(&request.url, provider.paging())
            .map_err(api_error)?;
        let mut pulls = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let pull = parse(provider, item).map_err(|message| {
                api_error(ScmError::Answer {
                    url: request.url.clone(),
                    message: format!("pull request {index}: {message}"),
                })
            })?;
            if request.labels.iter().all(|l| pull.labels.contains(l)) {
                pulls.push(pull);
            }
        }
        Ok(pulls)
    }
}

/// The first page's URL, the TLS setting and the labels every pull request must carry, for
/// `block`, the block of `provider`.
fn request(provider: Provider, block: Block<'_>) -> Result<Request, GeneratorError> {
    Ok(match block {
        Block::Github(github) => {
            if !github.app_secret_name.is_empty() {
                return Err(field_error(
                    "github.appSecretName",
                    "GitHub App authentication is not supported; use tokenRef",
                ));
            }
            Request {
                url: format!(
                    "{}/repos/{}/{}/pulls?per_page=100",
                    provider.root(&github.api),
                    segment(&github.owner),
                    segment(&github.repo)
                ),
                labels: github.labels.clone(),
                insecure: false,
            }
        }
        Block::Gitlab(gitlab) => {
            let mut url = format!(
                "{}/projects/{}/merge_requests?per_page=100",
                provider.root(&gitlab.api),
                segment(&gitlab.project)
            );
            if !gitlab.labels.is_empty() {
                let labels: Vec<String> = gitlab.labels.iter().map(|l| segment(l)).collect();
                url.push_str(&format!("&labels={}", labels.join(",")));
            }
            if !gitlab.pull_request_state.is_empty() {
                url.push_str(&format!("&state={}", segment(&gitlab.pull_request_state)));
            }
            // GitLab filters by labels itself.
            Request {
                url,
                labels: Vec::new(),
                insecure: gitlab.insecure,
            }
        }
        Block::Gitea(gitea) => Request {
            url: format!(
                "{}/repos/{}/{}/pulls?state=open&limit=50",
                provider.root(&gitea.api),
                segment(&gitea.owner),
                segment(&gitea.repo)
            ),
            labels: gitea.labels.clone(),
            insecure: gitea.insecure,
        },
        Block::BitbucketServer(server) => Request {
            url: format!(
                "{}/api/1.0/projects/{}/repos/{}/pull-requests?state=OPEN&limit=100",
                provider.root(&server.api),
                segment(&server.project),
                segment(&server.repo)
            ),
            labels: Vec::new(),
            insecure: false,
        },
    })
}

/// How the provider's block authenticates.
fn auth(block: Block<'_>) -> Auth<'_> {
    match block {
        Block::Github(github) => Auth::Token(github.token_ref.as_ref()),
        Block::Gitlab(gitlab) => Auth::Token(gitlab.token_ref.as_ref()),
        Block::Gitea(gitea) => Auth::Token(gitea.token_ref.as_ref()),
        Block::BitbucketServer(server) => Auth::BitbucketServer {
            basic_auth: server.basic_auth.as_ref(),
            bearer_token: server.bearer_token.as_ref(),
        },
    }
}

/// The provider block a generator sets.
type Block<'a> = endpoint::Block<
    &'a PullRequestGithub,
    &'a PullRequestGitlab,
    &'a PullRequestGitea,
    &'a PullRequestBitbucketServer,
>;

/// What a listing asks: its first page, TLS setting and the labels kept pull requests carry.
struct Request {
    url: String,
    labels: Vec<String>,
    insecure: bool,
}

/// One item of a provider's list as a [`PullRequest`].
fn parse(provider: Provider, item: &Value) -> Result<PullRequest, String> {
    let text = |pointer: &str| {
        item.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let missing = |pointer: &str| format!("no {} in the answer", pointer.trim_start_matches('/'));
    let required = |pointer: &str| {
        item.pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| missing(pointer))
    };
    let number = |pointer: &str| {
        item.pointer(pointer)
            .and_then(Value::as_u64)
            .ok_or_else(|| missing(pointer))
    };
    let label_names = |pointer: &str| -> Vec<String> {
        item.pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|label| label.get("name").or(Some(label))?.as_str())
            .map(str::to_string)
            .collect()
    };
    // Where each provider puts the number, source and target branch, head commit and author.
    let [number_at, branch_at, target_at, sha_at, author_at] = match provider {
        Provider::Github | Provider::Gitea => [
            "/number",
            "/head/ref",
            "/base/ref",
            "/head/sha",
            "/user/login",
        ],
        Provider::Gitlab => [
            "/iid",
            "/source_branch",
            "/target_branch",
            "/sha",
            "/author/username",
        ],
        Provider::BitbucketServer => [
            "/id",
            "/fromRef/displayId",
            "/toRef/displayId",
            "/fromRef/latestCommit",
            "/author/user/name",
        ],
    };
    Ok(PullRequest {
        number: number(number_at)?,
        title: text("/title"),
        branch: required(branch_at)?,
        target_branch: required(target_at)?,
        head_sha: required(sha_at)?,
        // Bitbucket Server has no labels.
        labels: label_names("/labels"),
        author: text(author_at),
    })
}

/// A filter with its regular expressions compiled.
struct Filter {
    branch: Option<Regex>,
    target_branch: Option<Regex>,
}

fn compile_filters(filters: &[PullRequestFilter]) -> Result<Vec<Filter>, GeneratorError> {
    filters
        .iter()
        .enumerate()
        .map(|(index, filter)| {
            Ok(Filter {
                branch: compile(index, "branchMatch", filter.branch_match.as_ref())?,
                target_branch: compile(
                    index,
                    "targetBranchMatch",
                    filter.target_branch_match.as_ref(),
                )?,
            })
        })
        .collect()
}

/// Whether `pull` matches one of `filters` (every field of it), or there is no filter.
fn matches_any(pull: &PullRequest, filters: &[Filter]) -> bool {
    filters.is_empty()
        || filters.iter().any(|filter| {
            matches(filter.branch.as_ref(), &pull.branch)
                && matches(filter.target_branch.as_ref(), &pull.target_branch)
        })
}

/// Argo CD's parameters of one pull request; `labels` only under goTemplate, as in Argo CD.
fn pull_request_params(pull: &PullRequest, mode: &TemplateMode) -> Params {
    let short = |n: usize| pull.head_sha.chars().take(n).collect::<String>();
    let mut params: Params = [
        ("number", pull.number.to_string()),
        ("title", pull.title.clone()),
        ("branch", pull.branch.clone()),
        ("branch_slug", slug(&pull.branch)),
        ("target_branch", pull.target_branch.clone()),
        ("target_branch_slug", slug(&pull.target_branch)),
        ("head_sha", pull.head_sha.clone()),
        ("head_short_sha", short(8)),
        ("head_short_sha_7", short(7)),
        ("author", pull.author.clone()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), Value::String(value)))
    .collect();
    if let TemplateMode::Go { .. } = mode {
        params.insert("labels".into(), serde_json::json!(pull.labels));
    }
    params
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::source::{HttpAnswer, Offline};
    use crate::testing::{MemoryScm as Api, fast, go, params, run_scm as run};

    fn github_pull(number: u64, branch: &str, labels: &[&str]) -> Value {
        json!({
            "number": number,
            "title": format!("Change {number}"),
            "state": "open",
            "user": {"login": "octocat"},
            "labels": labels.iter().map(|l| json!({"id": 1, "name": l})).collect::<Vec<_>>(),
            "head": {"ref": branch, "sha": "089d92cbf9ff857a39e6feccd32798ca700fb958"},
            "base": {"ref": "main", "sha": "1111111111111111111111111111111111111111"},
        })
    }

    #[test]
    fn github_pull_requests_over_two_pages_become_argo_cd_parameters() {
        let first = "https://api.github.com/repos/acme/web/pulls?per_page=100";
        let second = "https://api.github.com/repositories/1/pulls?per_page=100&page=2";
        let api = Api::default()
            .page(
                first,
                &[(
                    "link",
                    &format!("<{second}>; rel=\"next\", <{second}>; rel=\"last\""),
                )],
                json!([
                    github_pull(7, "feat/New_UI", &["preview"]),
                    github_pull(8, "wip", &[])
                ]),
            )
            .page(
                second,
                &[],
                json!([github_pull(9, "fix", &["preview", "x"])]),
            );
        let spec = json!({"pullRequest": {
            "github": {"owner": "acme", "repo": "web", "tokenRef": {"secretName": "scm", "key": "token"}, "labels": ["preview"]},
            "values": {"ns": "pr-{{ .number }}"},
        }});
        let sets = run(&go(), &api, spec).unwrap();
        let expected = |number: &str, branch: &str, slug: &str, labels: Value| {
            params(json!({
                "number": number, "title": format!("Change {number}"), "branch": branch,
                "branch_slug": slug, "target_branch": "main", "target_branch_slug": "main",
                "head_sha": "089d92cbf9ff857a39e6feccd32798ca700fb958",
                "head_short_sha": "089d92cb", "head_short_sha_7": "089d92c",
                "author": "octocat", "labels": labels,
                "values": {"ns": format!("pr-{number}")},
            }))
        };
        assert_eq!(
            sets,
            vec![
                expected("7", "feat/New_UI", "feat-new-ui", json!(["preview"])),
                expected("9", "fix", "fix", json!(["preview", "x"])),
            ]
        );
        let asked = api.asked.lock().unwrap();
        assert_eq!(asked.len(), 2);
        assert!(
            asked[0]
                .1
                .contains(&("authorization".into(), "Bearer t0k".into()))
        );
    }

    #[test]
    fn fasttemplate_has_no_labels_and_filters_keep_matching_branches() {
        let url = "https://ghe.example/api/v3/repos/acme/web/pulls?per_page=100";
        let api = Api::default().page(
            url,
            &[],
            json!([
                github_pull(1, "feature-a", &[]),
                github_pull(2, "bugfix-b", &[]),
                github_pull(3, "other", &[])
            ]),
        );
        let spec = json!({"pullRequest": {
            "github": {"owner": "acme", "repo": "web", "api": "https://ghe.example/"},
            "filters": [{"branchMatch": "^feature-"}, {"branchMatch": "^bugfix-", "targetBranchMatch": "^main$"}],
        }});
        let sets = run(&fast(), &api, spec).unwrap();
        let numbers: Vec<&Value> = sets.iter().map(|s| &s["number"]).collect();
        assert_eq!(numbers, [&json!("1"), &json!("2")]);
        assert!(sets[0].get("labels").is_none());
        let asked = api.asked.lock().unwrap();
        assert!(
            !asked[0].1.iter().any(|(name, _)| name == "authorization"),
            "anonymous"
        );
    }

    #[test]
    fn gitlab_gitea_and_bitbucket_server_pull_requests() {
        let gitlab = "https://gl.example/api/v4/projects/group%2Fweb/merge_requests?per_page=100&labels=preview&state=opened";
        let gitea = "https://gitea.example/api/v1/repos/acme/web/pulls?state=open&limit=50";
        let bitbucket = "https://bb.example/rest/api/1.0/projects/PRJ/repos/web/pull-requests?state=OPEN&limit=100";
        let api = Api::default()
            .page(gitlab, &[("x-next-page", "2")], json!([{
                "iid": 4, "title": "MR", "source_branch": "feat", "target_branch": "main",
                "sha": "abcdef0123456789", "labels": ["preview"], "author": {"username": "dev"},
            }]))
            .page(&format!("{gitlab}&page=2"), &[("x-next-page", "")], json!([]))
            .page(gitea, &[], json!([github_pull(5, "feat", &["preview"]), github_pull(6, "x", &[])]))
            .page(bitbucket, &[], json!({"size": 1, "limit": 1, "isLastPage": false, "start": 0, "nextPageStart": 1, "values": [{
                "id": 10, "title": "BB", "fromRef": {"displayId": "feature/x", "latestCommit": "fedcba9876543210"},
                "toRef": {"displayId": "master"}, "author": {"user": {"name": "jdoe"}},
            }]}))
            .page(&format!("{bitbucket}&start=1"), &[], json!({"size": 0, "limit": 1, "isLastPage": true, "start": 1, "values": []}));
        let number_and_branch = |spec: Value| -> Vec<(String, String, String)> {
            run(&go(), &api, json!({"pullRequest": spec}))
                .unwrap()
                .iter()
                .map(|s| {
                    (
                        s["number"].as_str().unwrap().into(),
                        s["branch_slug"].as_str().unwrap().into(),
                        s["author"].as_str().unwrap().into(),
                    )
                })
                .collect()
        };
        let t = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        assert_eq!(
            number_and_branch(
                json!({"gitlab": {"project": "group/web", "api": "https://gl.example", "labels": ["preview"], "pullRequestState": "opened", "tokenRef": {"secretName": "scm", "key": "token"}}})
            ),
            vec![t("4", "feat", "dev")]
        );
        assert_eq!(
            number_and_branch(
                json!({"gitea": {"owner": "acme", "repo": "web", "api": "https://gitea.example", "labels": ["preview"], "tokenRef": {"secretName": "scm", "key": "token"}}})
            ),
            vec![t("5", "feat", "octocat")]
        );
        assert_eq!(
            number_and_branch(
                json!({"bitbucketServer": {"project": "PRJ", "repo": "web", "api": "https://bb.example", "basicAuth": {"username": "ci", "passwordRef": {"secretName": "scm", "key": "password"}}}})
            ),
            vec![t("10", "feature-x", "jdoe")]
        );
        let header = |url: &str, name: &str| api.header(url, name);
        assert_eq!(header(gitlab, "private-token").as_deref(), Some("t0k"));
        assert_eq!(header(gitea, "authorization").as_deref(), Some("token t0k"));
        assert_eq!(
            header(bitbucket, "authorization").as_deref(),
            Some("Basic Y2k6cHc=")
        );
    }

    #[test]
    fn errors_name_the_generator_the_field_and_the_reason() {
        let api = Api::default();
        let error = |spec: Value| {
            run(&go(), &api, json!({"pullRequest": spec}))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            error(json!({})),
            "pullRequest: set one provider: github, gitlab, gitea or bitbucketServer (bitbucket and azureDevOps are not supported)"
        );
        assert_eq!(
            error(
                json!({"github": {"owner": "a", "repo": "b"}, "gitea": {"owner": "a", "repo": "b", "api": "https://g"}})
            ),
            "pullRequest: several providers are set (github, gitea); set one"
        );
        assert_eq!(
            error(json!({"github": {"owner": "a", "repo": "b", "appSecretName": "app"}})),
            "pullRequest: github.appSecretName: GitHub App authentication is not supported; use tokenRef"
        );
        assert_eq!(
            error(
                json!({"github": {"owner": "a", "repo": "b", "tokenRef": {"secretName": "scm", "key": "nope"}}})
            ),
            "pullRequest: github.tokenRef: Secret scm has no key \"nope\""
        );
        assert_eq!(
            error(
                json!({"github": {"owner": "a", "repo": "b"}, "filters": [{"branchMatch": "("}]})
            )
            .lines()
            .next()
            .unwrap(),
            "pullRequest: filters[0].branchMatch: invalid regular expression \"(\": regex parse error:"
        );
        assert_eq!(
            error(json!({"github": {"owner": "a", "repo": "b"}})),
            "pullRequest: github: GET https://api.github.com/repos/a/b/pulls?per_page=100: answered HTTP 404: {\"message\":\"Not Found\"}"
        );
        let broken = Api::default().page(
            "https://api.github.com/repos/a/b/pulls?per_page=100",
            &[],
            json!([{"number": 1}]),
        );
        assert_eq!(
            run(
                &go(),
                &broken,
                json!({"pullRequest": {"github": {"owner": "a", "repo": "b"}}})
            )
            .unwrap_err()
            .to_string(),
            "pullRequest: github: GET https://api.github.com/repos/a/b/pulls?per_page=100: pull request 0: no head/ref in the answer"
        );
    }

    #[test]
    fn without_network_it_says_so_before_reading_a_secret() {
        let error = run(&go(), &Offline, json!({"pullRequest": {"github": {"owner": "a", "repo": "b", "tokenRef": {"secretName": "missing", "key": "k"}}}}))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "pullRequest: github: GET https://api.github.com/repos/a/b/pulls?per_page=100: pullRequest and scmProvider generators ask the provider's API over the network, which flotilla render and simulate do not (they read files only)"
        );
    }

    #[test]
    fn a_rate_limit_says_when_to_ask_again() {
        let mut api = Api::default();
        api.pages.insert(
            "https://api.github.com/repos/a/b/pulls?per_page=100".into(),
            HttpAnswer {
                status: 403,
                headers: vec![
                    ("x-ratelimit-remaining".into(), "0".into()),
                    ("x-ratelimit-reset".into(), "1700000000".into()),
                ],
                body: b"{\"message\":\"API rate limit exceeded\"}".to_vec(),
            },
        );
        let error = run(
            &go(),
            &api,
            json!({"pullRequest": {"github": {"owner": "a", "repo": "b"}}}),
        )
        .unwrap_err();
        assert_eq!(
            error.retry_after(),
            Some(crate::scm_api::rate_limit::RetryAfter::ResetAt(
                1_700_000_000
            ))
        );
        assert!(
            error.to_string().ends_with(
                "rate limited (HTTP 403); asked again when the limit resets at 2023-11-14T22:13:20Z"
            ),
            "{error}"
        );
    }
}
