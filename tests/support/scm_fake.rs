//! Hand-written fakes of SCM providers' REST APIs on loopback, for the pullRequest generator:
//! each answers as its provider documents it — GitHub (Enterprise paths under `/api/v3`, `Link`
//! headers, `X-RateLimit-*`, 401 `Bad credentials`), GitLab (`/api/v4`, `PRIVATE-TOKEN`,
//! `X-Next-Page`/`X-Page`/`X-Total-Pages`), Gitea (`/api/v1`, `Authorization: token`, `Link`,
//! `X-Total-Count`) and Bitbucket Server (`/rest/api/1.0`, basic auth, `isLastPage` and
//! `nextPageStart`). A page holds at most `page_size` items whatever the client asks, as a
//! provider caps its page size, so short lists still span several pages. The pull requests can
//! be changed while the fake runs; every request is counted. [`pull_request_entry`] is the
//! generator entry that lists a fake's pull requests.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

#[derive(Default)]
struct State {
    pulls: Vec<Pull>,
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
        if path != self.path {
            return Answer {
                status: "404 Not Found",
                headers: Vec::new(),
                body: json!({"message": "Not Found"}),
            };
        }
        let param = |key: &str| {
            query
                .split('&')
                .find_map(|pair| pair.strip_prefix(&format!("{key}=")))
                .and_then(|value| value.parse::<usize>().ok())
        };
        let items: Vec<Value> = state.pulls.iter().map(|p| self.item(p)).collect();
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
        let link = |number: usize| format!("http://{host}{path}?limit={size}&page={number}");
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

fn ok(headers: Vec<(String, String)>, body: Value) -> Answer {
    Answer {
        status: "200 OK",
        headers,
        body,
    }
}
