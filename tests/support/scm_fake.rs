//! Hand-written fakes of SCM providers' REST APIs on loopback, for the pullRequest and
//! scmProvider generators: each answers as its provider documents it — GitHub (Enterprise paths
//! under `/api/v3`, `Link` headers, `X-RateLimit-*`, 401 `Bad credentials`), GitLab (`/api/v4`,
//! `PRIVATE-TOKEN`, `X-Next-Page`/`X-Page`/`X-Total-Pages`), Gitea (`/api/v1`,
//! `Authorization: token`, `Link`, `X-Total-Count`) and Bitbucket Server (`/rest/api/1.0`, basic
//! auth, `isLastPage` and `nextPageStart`). Besides one repository's pull requests, each lists
//! the organisation's repositories, their branches (one, or all) with their head commit, their
//! labels (Gitea) and whether a path exists on a branch (GitHub and Gitea `contents`, GitLab
//! `repository/tree`, Bitbucket Server `browse`). A page holds at most `page_size` items
//! whatever the client asks, as a provider caps its page size, so short lists still span
//! several pages. Pull requests and repositories can be changed while the fake runs; every
//! request is counted. [`pull_request_entry`] is the generator entry that lists a fake's pull
//! requests.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flotilla::web::routes::percent_decode as decode;
use serde_json::{Value, json};

use super::loopback_http::LoopbackServer;

/// Which provider the fake is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Github,
    Gitlab,
    Gitea,
    BitbucketServer,
}

/// The `pullRequest` generator entry of `kind` for repository `acme/web` (GitLab's project
/// `acme/web`, Bitbucket Server's project `acme`) of the fake at `api`, with its token (Bitbucket
/// Server: the password of user `ci`) read from key `key` of Secret `secret`.
pub fn pull_request_entry(kind: Kind, api: &str, secret: &str, key: &str) -> Value {
    let token = json!({"secretName": secret, "key": key});
    let provider = match kind {
        Kind::Github => {
            json!({"github": {"owner": "acme", "repo": "web", "api": api, "tokenRef": token}})
        }
        Kind::Gitlab => json!({"gitlab": {"project": "acme/web", "api": api, "tokenRef": token}}),
        Kind::Gitea => {
            json!({"gitea": {"owner": "acme", "repo": "web", "api": api, "tokenRef": token}})
        }
        Kind::BitbucketServer => {
            json!({"bitbucketServer": {"project": "acme", "repo": "web", "api": api,
            "basicAuth": {"username": "ci", "passwordRef": token}}})
        }
    };
    json!({"pullRequest": provider})
}

/// One open pull request.
#[derive(Clone, Debug)]
pub struct Pull {
    pub number: u64,
    pub branch: String,
    pub sha: String,
    pub labels: Vec<String>,
}

impl Pull {
    /// Pull request `number` from `branch` into `main`.
    pub fn new(number: u64, branch: &str) -> Self {
        Self {
            number,
            branch: branch.into(),
            sha: format!("{number:0>4}a1b2c3d4e5f60718293a4b5c6d7e8f9012345"),
            labels: Vec::new(),
        }
    }
}

/// One repository of the organisation: its branches (the first is the default) and files.
#[derive(Clone, Debug)]
pub struct Repo {
    pub id: u64,
    pub name: String,
    /// Branch names and their head commits; the first is the default branch.
    pub branches: Vec<(String, String)>,
    /// Every file path (the same on every branch); directories are their prefixes.
    pub files: Vec<String>,
    /// Topics (GitHub, GitLab) or repository labels (Gitea).
    pub topics: Vec<String>,
}

impl Repo {
    /// Repository `id` called `name`, with branch `main` and `files`.
    pub fn new(id: u64, name: &str, files: &[&str]) -> Self {
        Self {
            id,
            name: name.into(),
            branches: vec![("main".into(), Self::sha(id, "main"))],
            files: files.iter().map(|f| f.to_string()).collect(),
            topics: Vec::new(),
        }
    }

    /// The head commit the fake gives branch `branch` of repository `id`.
    pub fn sha(id: u64, branch: &str) -> String {
        let letters: String = branch.bytes().map(|b| format!("{:x}", b % 16)).collect();
        format!("{id:0>4}{letters:0<36}")[..40].to_string()
    }

    /// Whether `path` is a file or a directory of the repository.
    fn has(&self, path: &str) -> bool {
        let path = path.trim_matches('/');
        self.files
            .iter()
            .any(|file| file == path || file.starts_with(&format!("{path}/")))
    }

    /// The entries directly in directory `dir` ("" for the top): `(path, is_directory)`.
    fn tree(&self, dir: &str) -> Vec<(String, bool)> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{}/", dir.trim_matches('/'))
        };
        let mut entries: Vec<(String, bool)> = Vec::new();
        for file in &self.files {
            let Some(rest) = file.strip_prefix(&prefix) else {
                continue;
            };
            let (name, is_dir) = match rest.split_once('/') {
                Some((name, _)) => (name, true),
                None => (rest, false),
            };
            let entry = (format!("{prefix}{name}"), is_dir);
            if !entries.contains(&entry) {
                entries.push(entry);
            }
        }
        entries
    }
}

#[derive(Default)]
struct State {
    pulls: Vec<Pull>,
    repos: Vec<Repo>,
    /// Requests answered, rate-limited ones included.
    requests: usize,
    /// Until when (seconds since the epoch) GitHub answers "rate limit exceeded".
    limited_until: Option<u64>,
}

/// A provider's API on a loopback port; stopped when dropped.
pub struct FakeScm {
    server: LoopbackServer,
    state: Arc<Mutex<State>>,
}

impl FakeScm {
    /// Starts a fake `kind` API for repository `owner/repo` (project/repo for Bitbucket Server,
    /// project `owner/repo` for GitLab), accepting only `credential` (the token, or
    /// `user:password` for Bitbucket Server), with at most `page_size` items a page.
    pub fn start(kind: Kind, owner: &str, repo: &str, credential: &str, page_size: usize) -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let served = Arc::clone(&state);
        let route = Route {
            kind,
            owner: owner.into(),
            path: match kind {
                Kind::Github => format!("/api/v3/repos/{owner}/{repo}/pulls"),
                Kind::Gitlab => format!("/api/v4/projects/{owner}%2F{repo}/merge_requests"),
                Kind::Gitea => format!("/api/v1/repos/{owner}/{repo}/pulls"),
                Kind::BitbucketServer => {
                    format!("/rest/api/1.0/projects/{owner}/repos/{repo}/pull-requests")
                }
            },
            authorization: match kind {
                Kind::Github => ("authorization", format!("Bearer {credential}")),
                Kind::Gitlab => ("private-token", credential.to_string()),
                Kind::Gitea => ("authorization", format!("token {credential}")),
                Kind::BitbucketServer => {
                    use base64::Engine as _;
                    let pair = base64::engine::general_purpose::STANDARD.encode(credential);
                    ("authorization", format!("Basic {pair}"))
                }
            },
            page_size,
        };
        let server = LoopbackServer::start(move |stream| {
            let _ = route.answer(stream, &served);
        });
        Self { server, state }
    }

    /// `http://127.0.0.1:PORT`: the generator's `api`.
    pub fn url(&self) -> String {
        self.server.base_url()
    }

    /// Replaces the organisation's repositories.
    pub fn set_repos(&self, repos: Vec<Repo>) {
        self.state.lock().unwrap().repos = repos;
    }

    /// Replaces the open pull requests.
    pub fn set_pulls(&self, pulls: Vec<Pull>) {
        self.state.lock().unwrap().pulls = pulls;
    }

    /// How many requests were answered so far.
    pub fn requests(&self) -> usize {
        self.state.lock().unwrap().requests
    }

    /// Answers every request with GitHub's "rate limit exceeded" for `how_long` from now.
    pub fn rate_limit_for(&self, how_long: Duration) {
        let until = SystemTime::now() + how_long;
        let until = until.duration_since(UNIX_EPOCH).unwrap().as_secs();
        self.state.lock().unwrap().limited_until = Some(until);
    }
}

struct Route {
    kind: Kind,
    /// The organisation, group, owner or project key.
    owner: String,
    /// The path of the pull requests of the one repository.
    path: String,
    authorization: (&'static str, String),
    page_size: usize,
}

/// One answer: status line, headers, JSON body.
struct Answer {
    status: &'static str,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Route {
    fn answer(&self, mut stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut request_line = String::new();
        reader.read_line(&mut request_line)?;
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
        }
        let target = request_line.split_whitespace().nth(1).unwrap_or("/");
        let host = headers
            .iter()
            .find(|(name, _)| name == "host")
            .map(|(_, value)| value.clone())
            .unwrap_or_default();
        let answer = self.respond(target, &host, &headers, state);
        let body = answer.body.to_string();
        let mut head = format!(
            "HTTP/1.1 {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
            answer.status,
            body.len()
        );
        for (name, value) in &answer.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        stream.write_all(body.as_bytes())
    }

    fn respond(
        &self,
        target: &str,
        host: &str,
        headers: &[(String, String)],
        state: &Mutex<State>,
    ) -> Answer {
        let mut state = state.lock().unwrap();
        state.requests += 1;
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        if let Some(until) = state.limited_until.filter(|until| *until > now) {
            // GitHub's primary rate limit: 403, no request remaining, the reset time.
            return Answer {
                status: "403 Forbidden",
                headers: vec![
                    ("x-ratelimit-limit".into(), "60".into()),
                    ("x-ratelimit-remaining".into(), "0".into()),
                    ("x-ratelimit-reset".into(), until.to_string()),
                ],
                body: json!({"message": "API rate limit exceeded for 127.0.0.1.", "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}),
            };
        }
        let (wanted_name, wanted_value) = &self.authorization;
        let authorized = headers
            .iter()
            .any(|(name, value)| name == wanted_name && value == wanted_value);
        if !authorized {
            return self.unauthorized();
        }
        let param = |key: &str| {
            query
                .split('&')
                .find_map(|pair| pair.strip_prefix(&format!("{key}=")))
                .map(decode)
        };
        let endpoint = if path == self.path {
            Some(Endpoint::Pulls)
        } else {
            self.endpoint(path)
        };
        let Some(endpoint) = endpoint else {
            return not_found();
        };
        let repo = |name: &str| {
            state
                .repos
                .iter()
                .find(|repo| repo.name == name || repo.id.to_string() == name)
                .cloned()
        };
        let items = match endpoint {
            Endpoint::Pulls => state.pulls.iter().map(|p| self.item(p)).collect(),
            Endpoint::Repos => {
                let host = format!("http://{host}");
                state.repos.iter().map(|r| self.repo_item(r, &host)).collect()
            }
            Endpoint::Branches(name) => match repo(&name) {
                Some(repo) => repo
                    .branches
                    .iter()
                    .map(|(branch, sha)| self.branch_item(&repo, branch, sha))
                    .collect(),
                None => return not_found(),
            },
            Endpoint::Branch(name, branch) => {
                let found = repo(&name).and_then(|repo| {
                    let wanted = if branch.is_empty() {
                        repo.branches.first()?.0.clone()
                    } else {
                        branch
                    };
                    let (branch, sha) = repo.branches.iter().find(|(b, _)| *b == wanted)?;
                    Some(self.branch_item(&repo, branch, sha))
                });
                return found.map_or_else(not_found, |item| ok(Vec::new(), item));
            }
            Endpoint::Labels(name) => match repo(&name) {
                Some(repo) => repo
                    .topics
                    .iter()
                    .enumerate()
                    .map(|(i, label)| json!({"id": i + 1, "name": label, "color": "e11d21", "description": ""}))
                    .collect(),
                None => return not_found(),
            },
            Endpoint::Path(name, file) => {
                let branch = param(if self.kind == Kind::BitbucketServer { "at" } else { "ref" });
                return match repo(&name) {
                    Some(repo)
                        if repo.has(&file)
                            && repo.branches.iter().any(|(b, _)| Some(b) == branch.as_ref()) =>
                    {
                        ok(Vec::new(), self.content_item(&repo, &file))
                    }
                    _ => not_found(),
                };
            }
            Endpoint::Tree(name) => {
                let dir = param("path").unwrap_or_default();
                match repo(&name) {
                    Some(repo) if dir.is_empty() || repo.has(&dir) => repo
                        .tree(&dir)
                        .into_iter()
                        .map(|(path, is_dir)| {
                            let name = path.rsplit('/').next().unwrap_or_default().to_string();
                            json!({"id": format!("{:0>40}", path.len()), "name": name, "path": path,
                                   "type": if is_dir { "tree" } else { "blob" },
                                   "mode": if is_dir { "040000" } else { "100644" }})
                        })
                        .collect(),
                    _ => return not_found(),
                }
            }
        };
        self.paged(items, path, host, query)
    }

    /// Which endpoint `path` (without the query) is, besides the pull requests.
    fn endpoint(&self, path: &str) -> Option<Endpoint> {
        let owner = &self.owner;
        let (prefix, repos, per_repo) = match self.kind {
            Kind::Github => (
                "/api/v3",
                format!("/orgs/{owner}/repos"),
                format!("/repos/{owner}/"),
            ),
            Kind::Gitlab => (
                "/api/v4",
                format!("/groups/{owner}/projects"),
                "/projects/".to_string(),
            ),
            Kind::Gitea => (
                "/api/v1",
                format!("/orgs/{owner}/repos"),
                format!("/repos/{owner}/"),
            ),
            Kind::BitbucketServer => (
                "/rest/api/1.0",
                format!("/projects/{owner}/repos"),
                format!("/projects/{owner}/repos/"),
            ),
        };
        let path = path.strip_prefix(prefix)?;
        if path == repos {
            return Some(Endpoint::Repos);
        }
        let (name, rest) = path.strip_prefix(&per_repo)?.split_once('/')?;
        let name = decode(name);
        let rest = match self.kind {
            Kind::Gitlab => rest.strip_prefix("repository/")?,
            _ => rest,
        };
        Some(match rest.split_once('/') {
            None if rest == "branches" => Endpoint::Branches(name),
            None if rest == "labels" && self.kind == Kind::Gitea => Endpoint::Labels(name),
            None if rest == "tree" && self.kind == Kind::Gitlab => Endpoint::Tree(name),
            Some(("branches", "default")) if self.kind == Kind::BitbucketServer => {
                Endpoint::Branch(name, String::new())
            }
            Some(("branches", branch)) if self.kind != Kind::BitbucketServer => {
                Endpoint::Branch(name, decode(branch))
            }
            Some(("contents", file)) if matches!(self.kind, Kind::Github | Kind::Gitea) => {
                Endpoint::Path(name, decode(file))
            }
            Some(("browse", file)) if self.kind == Kind::BitbucketServer => {
                Endpoint::Path(name, decode(file))
            }
            _ => return None,
        })
    }

    /// One page of `items` with the provider's paging headers or fields.
    fn paged(&self, items: Vec<Value>, path: &str, host: &str, query: &str) -> Answer {
        let param = |key: &str| {
            query
                .split('&')
                .find_map(|pair| pair.strip_prefix(&format!("{key}=")))
                .and_then(|value| value.parse::<usize>().ok())
        };
        let size = self.page_size;
        let pages = items.len().div_ceil(size).max(1);
        if self.kind == Kind::BitbucketServer {
            let start = param("start").unwrap_or(0);
            let values: Vec<Value> = items.iter().skip(start).take(size).cloned().collect();
            let last = start + values.len() >= items.len();
            let mut body = json!({"size": values.len(), "limit": size, "isLastPage": last, "start": start, "values": values});
            if !last {
                body["nextPageStart"] = json!(start + size);
            }
            return ok(Vec::new(), body);
        }
        let page = param("page").unwrap_or(1).max(1);
        let values: Vec<Value> = items
            .iter()
            .skip((page - 1) * size)
            .take(size)
            .cloned()
            .collect();
        // The other query parameters (a GitLab tree's path and ref) stay in the links.
        let kept: String = query
            .split('&')
            .filter(|pair| {
                !pair.is_empty()
                    && !["page", "per_page", "limit"]
                        .iter()
                        .any(|key| pair.starts_with(&format!("{key}=")))
            })
            .map(|pair| format!("&{pair}"))
            .collect();
        let link = |number: usize| format!("http://{host}{path}?limit={size}&page={number}{kept}");
        let mut links = Vec::new();
        if page < pages {
            links.push(format!("<{}>; rel=\"next\"", link(page + 1)));
            links.push(format!("<{}>; rel=\"last\"", link(pages)));
        }
        if page > 1 {
            links.push(format!("<{}>; rel=\"first\"", link(1)));
            links.push(format!("<{}>; rel=\"prev\"", link(page - 1)));
        }
        let mut out = Vec::new();
        if !links.is_empty() {
            out.push(("link".to_string(), links.join(", ")));
        }
        match self.kind {
            Kind::Github => {
                out.push(("x-ratelimit-limit".into(), "5000".into()));
                out.push(("x-ratelimit-remaining".into(), "4999".into()));
            }
            Kind::Gitlab => {
                let next = if page < pages {
                    (page + 1).to_string()
                } else {
                    String::new()
                };
                out.extend([
                    ("x-next-page".to_string(), next),
                    ("x-page".to_string(), page.to_string()),
                    ("x-per-page".to_string(), size.to_string()),
                    ("x-total".to_string(), items.len().to_string()),
                    ("x-total-pages".to_string(), pages.to_string()),
                ]);
            }
            Kind::Gitea => out.push(("x-total-count".into(), items.len().to_string())),
            Kind::BitbucketServer => {}
        }
        ok(out, Value::Array(values))
    }

    fn unauthorized(&self) -> Answer {
        let body = match self.kind {
            Kind::Github => {
                json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
            }
            Kind::Gitlab => json!({"message": "401 Unauthorized"}),
            Kind::Gitea => {
                json!({"message": "token is required", "url": "https://gitea.example/api/swagger"})
            }
            Kind::BitbucketServer => {
                json!({"errors": [{"context": null, "message": "Authentication failed. Please check your credentials and try again.", "exceptionName": "com.atlassian.bitbucket.auth.IncorrectPasswordAuthenticationException"}]})
            }
        };
        Answer {
            status: "401 Unauthorized",
            headers: Vec::new(),
            body,
        }
    }

    /// One repository in the provider's JSON shape, cloned from `host`.
    fn repo_item(&self, repo: &Repo, host: &str) -> Value {
        let (owner, name) = (&self.owner, &repo.name);
        let default = repo.branches.first().map(|(b, _)| b.clone());
        let ssh_host = host.trim_start_matches("http://");
        match self.kind {
            Kind::Github => json!({
                "id": repo.id, "node_id": format!("R_{}", repo.id), "name": name,
                "full_name": format!("{owner}/{name}"), "private": true,
                "owner": {"login": owner, "id": 1, "type": "Organization"},
                "html_url": format!("{host}/{owner}/{name}"),
                "clone_url": format!("{host}/{owner}/{name}.git"),
                "ssh_url": format!("git@{ssh_host}:{owner}/{name}.git"),
                "default_branch": default, "archived": false, "disabled": false,
                "topics": repo.topics,
            }),
            Kind::Gitlab => json!({
                "id": repo.id, "name": name, "path": name,
                "path_with_namespace": format!("{owner}/{name}"),
                "namespace": {"id": 3, "name": owner, "path": owner, "kind": "group", "full_path": owner},
                "default_branch": default,
                "ssh_url_to_repo": format!("git@{ssh_host}:{owner}/{name}.git"),
                "http_url_to_repo": format!("{host}/{owner}/{name}.git"),
                "web_url": format!("{host}/{owner}/{name}"),
                "topics": repo.topics, "tag_list": repo.topics, "archived": false,
            }),
            Kind::Gitea => json!({
                "id": repo.id, "name": name, "full_name": format!("{owner}/{name}"),
                "owner": {"id": 1, "login": owner},
                "html_url": format!("{host}/{owner}/{name}"),
                "clone_url": format!("{host}/{owner}/{name}.git"),
                "ssh_url": format!("git@{ssh_host}:{owner}/{name}.git"),
                "default_branch": default.unwrap_or_else(|| "main".into()),
                "empty": repo.branches.is_empty(), "archived": false,
            }),
            Kind::BitbucketServer => json!({
                "id": repo.id, "slug": name, "name": name, "scmId": "git", "state": "AVAILABLE",
                "project": {"key": owner, "id": 1, "name": owner},
                "public": false,
                "links": {
                    "clone": [
                        {"href": format!("{host}/scm/{}/{name}.git", owner.to_lowercase()), "name": "http"},
                        {"href": format!("ssh://git@{ssh_host}/{}/{name}.git", owner.to_lowercase()), "name": "ssh"},
                    ],
                    "self": [{"href": format!("{host}/projects/{owner}/repos/{name}/browse")}],
                },
            }),
        }
    }

    /// One branch of `repo` in the provider's JSON shape.
    fn branch_item(&self, repo: &Repo, branch: &str, sha: &str) -> Value {
        let default = repo.branches.first().is_some_and(|(b, _)| b == branch);
        match self.kind {
            Kind::Github => json!({
                "name": branch, "protected": false,
                "commit": {"sha": sha, "url": format!("https://api.example/commits/{sha}")},
            }),
            Kind::Gitlab => json!({
                "name": branch, "merged": false, "protected": false, "default": default,
                "commit": {"id": sha, "short_id": &sha[..8], "title": "A change"},
            }),
            Kind::Gitea => json!({
                "name": branch, "protected": false,
                "commit": {"id": sha, "message": "A change", "url": format!("https://gitea.example/commit/{sha}")},
            }),
            Kind::BitbucketServer => json!({
                "id": format!("refs/heads/{branch}"), "displayId": branch, "type": "BRANCH",
                "latestCommit": sha, "latestChangeset": sha, "isDefault": default,
            }),
        }
    }

    /// What the provider answers for an existing `file` (a file or a directory) of `repo`.
    fn content_item(&self, repo: &Repo, file: &str) -> Value {
        let file = file.trim_matches('/');
        let is_file = repo.files.iter().any(|f| f == file);
        match (self.kind, is_file) {
            (Kind::BitbucketServer, true) => json!({"type": "FILE"}),
            (Kind::BitbucketServer, false) => json!({"type": "DIRECTORY"}),
            (_, true) => json!({
                "type": "file", "name": file.rsplit('/').next(), "path": file,
                "sha": "3d21ec53a331a6f037a91c368710b99387d012c1", "encoding": "base64", "content": "",
            }),
            (_, false) => Value::Array(
                repo.tree(file)
                    .into_iter()
                    .map(|(path, is_dir)| json!({"type": if is_dir { "dir" } else { "file" }, "path": path}))
                    .collect(),
            ),
        }
    }

    /// One pull request in the provider's JSON shape.
    fn item(&self, pull: &Pull) -> Value {
        let title = format!("Change {}", pull.number);
        match self.kind {
            Kind::Github | Kind::Gitea => json!({
                "id": 1000 + pull.number,
                "number": pull.number,
                "state": "open",
                "title": title,
                "user": {"login": "octocat", "id": 1},
                "labels": pull.labels.iter().map(|l| json!({"id": 7, "name": l, "color": "f29513"})).collect::<Vec<_>>(),
                "head": {"label": format!("acme:{}", pull.branch), "ref": pull.branch, "sha": pull.sha},
                "base": {"label": "acme:main", "ref": "main", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e"},
            }),
            Kind::Gitlab => json!({
                "id": 1000 + pull.number,
                "iid": pull.number,
                "project_id": 3,
                "title": title,
                "state": "opened",
                "source_branch": pull.branch,
                "target_branch": "main",
                "sha": pull.sha,
                "labels": pull.labels,
                "author": {"id": 1, "username": "octocat", "name": "Octo Cat"},
            }),
            Kind::BitbucketServer => json!({
                "id": pull.number,
                "version": 0,
                "title": title,
                "state": "OPEN",
                "open": true,
                "fromRef": {"id": format!("refs/heads/{}", pull.branch), "displayId": pull.branch, "latestCommit": pull.sha},
                "toRef": {"id": "refs/heads/main", "displayId": "main", "latestCommit": "6dcb09b5b57875f334f61aebed695e2e4193db5e"},
                "author": {"user": {"name": "octocat", "displayName": "Octo Cat"}, "role": "AUTHOR"},
            }),
        }
    }
}

/// The endpoints the fake answers, by repository (name, or GitLab's id).
enum Endpoint {
    Pulls,
    Repos,
    Branches(String),
    /// A branch by name; the default branch when empty (Bitbucket Server's `branches/default`).
    Branch(String, String),
    Labels(String),
    /// A file or directory (`contents`, `browse`); the branch is in the query.
    Path(String, String),
    /// GitLab's `repository/tree`; the directory and branch are in the query.
    Tree(String),
}

fn not_found() -> Answer {
    Answer {
        status: "404 Not Found",
        headers: Vec::new(),
        body: json!({"message": "Not Found"}),
    }
}

fn ok(headers: Vec<(String, String)>, body: Value) -> Answer {
    Answer {
        status: "200 OK",
        headers,
        body,
    }
}
