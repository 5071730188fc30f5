//! Reading a list from a provider's REST API page by page, as each provider documents its
//! pagination: GitHub and Gitea with a `Link: <…>; rel="next"` header, GitLab with
//! `X-Next-Page` (or `Link`), Bitbucket Server with `isLastPage`/`nextPageStart` in the body.
//! Pure decisions over [`HttpAnswer`]s; the GETs go through the injected [`ScmApi`].

use serde_json::Value;

use super::rate_limit::{RetryAfter, rate_limited};
use crate::source::{HttpAnswer, ScmApi, ScmCallError};

/// More pages than this is an error rather than a loop without end.
pub const MAX_PAGES: usize = 500;

/// How much of an error answer's body an error quotes.
const QUOTED_BODY: usize = 200;

/// How a provider says where the next page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paging {
    /// A `Link` header with `rel="next"` (GitHub, Gitea); the body is a JSON list.
    Link,
    /// `X-Next-Page: N` (empty on the last page) or a `Link` header; the body is a JSON list.
    GitlabNextPage,
    /// The body is `{"values": [...], "isLastPage": bool, "nextPageStart": N}`.
    BitbucketStart,
}

/// Asking a provider's API failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScmError {
    #[error("GET {url}: {source}")]
    Call {
        url: String,
        #[source]
        source: ScmCallError,
    },
    #[error("GET {url}: answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("GET {url}: rate limited (HTTP {status}); {retry}")]
    RateLimited {
        url: String,
        status: u16,
        retry: RetryAfter,
    },
    #[error("GET {url}: {message}")]
    Answer { url: String, message: String },
    #[error("GET {url}: more than {MAX_PAGES} pages")]
    TooManyPages { url: String },
}

/// A GET with the same headers and TLS setting for every page.
pub struct PagedGet<'a> {
    pub api: &'a dyn ScmApi,
    pub headers: Vec<(String, String)>,
    pub insecure: bool,
}

impl PagedGet<'_> {
    /// Every item of every page, starting at `url`.
    ///
    /// # Errors
    /// A page that cannot be read, a status other than 200, a rate limit, an answer of the
    /// wrong shape, more than [`MAX_PAGES`] pages.
    pub fn all(&self, url: &str, paging: Paging) -> Result<Vec<Value>, ScmError> {
        let mut items = Vec::new();
        let mut next = Some(url.to_string());
        for _ in 0..MAX_PAGES {
            let Some(url) = next.take() else {
                return Ok(items);
            };
            let answer = self.one(&url)?;
            let body = json(&url, &answer)?;
            items.extend(
                page_items(&body, paging).map_err(|message| ScmError::Answer {
                    url: url.clone(),
                    message,
                })?,
            );
            next = next_page(&url, &answer, &body, paging);
        }
        match next {
            None => Ok(items),
            Some(_) => Err(ScmError::TooManyPages { url: url.into() }),
        }
    }

    /// The JSON object at `url` (not paged); `Ok(None)` when it answers 404.
    ///
    /// # Errors
    /// As [`Self::all`], for any status but 200 and 404.
    pub fn object(&self, url: &str) -> Result<Option<Value>, ScmError> {
        self.found(url)?
            .map(|answer| json(url, &answer))
            .transpose()
    }

    /// The answer to one GET of `url` when it is 200 OK; `Ok(None)` when it is 404.
    ///
    /// # Errors
    /// As [`Self::all`], for any status but 200 and 404.
    pub fn found(&self, url: &str) -> Result<Option<HttpAnswer>, ScmError> {
        match self.one(url) {
            Err(ScmError::Status { status: 404, .. }) => Ok(None),
            other => other.map(Some),
        }
    }

    fn one(&self, url: &str) -> Result<HttpAnswer, ScmError> {
        let answer = self
            .api
            .get(url, &self.headers, self.insecure)
            .map_err(|source| ScmError::Call {
                url: url.into(),
                source,
            })?;
        if answer.status == 200 {
            return Ok(answer);
        }
        if let Some(retry) = rate_limited(&answer) {
            return Err(ScmError::RateLimited {
                url: url.into(),
                status: answer.status,
                retry,
            });
        }
        let body = String::from_utf8_lossy(&answer.body);
        Err(ScmError::Status {
            url: url.into(),
            status: answer.status,
            body: body
                .chars()
                .take(QUOTED_BODY)
                .collect::<String>()
                .trim()
                .into(),
        })
    }
}

/// The body of `answer` (to a GET of `url`) as JSON.
fn json(url: &str, answer: &HttpAnswer) -> Result<Value, ScmError> {
    serde_json::from_slice(&answer.body).map_err(|e| ScmError::Answer {
        url: url.into(),
        message: format!("the answer is not JSON: {e}"),
    })
}

/// The items of one page.
fn page_items(body: &Value, paging: Paging) -> Result<Vec<Value>, String> {
    let list = match paging {
        Paging::Link | Paging::GitlabNextPage => body,
        Paging::BitbucketStart => body.get("values").ok_or("the answer has no values")?,
    };
    list.as_array()
        .cloned()
        .ok_or_else(|| "the answer is not a list".into())
}

/// The URL of the page after the one `url` answered, if there is one.
#[must_use]
pub fn next_page(url: &str, answer: &HttpAnswer, body: &Value, paging: Paging) -> Option<String> {
    match paging {
        Paging::Link => link_next(answer),
        Paging::GitlabNextPage => match answer.header("x-next-page").map(str::trim) {
            Some(page) if !page.is_empty() => Some(with_query(url, "page", page)),
            _ => link_next(answer),
        },
        Paging::BitbucketStart => {
            if body.get("isLastPage").and_then(Value::as_bool) != Some(false) {
                return None;
            }
            let start = body.get("nextPageStart").and_then(Value::as_u64)?;
            Some(with_query(url, "start", &start.to_string()))
        }
    }
}

/// The `rel="next"` target of the answer's `Link` header.
fn link_next(answer: &HttpAnswer) -> Option<String> {
    answer.header("link")?.split(',').find_map(|link| {
        let (target, params) = link.split_once(';')?;
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let is_next = params.split(';').any(|param| {
            param.trim().strip_prefix("rel=").is_some_and(|rel| {
                rel.trim_matches('"')
                    .split_whitespace()
                    .any(|rel| rel == "next")
            })
        });
        is_next.then(|| target.to_string())
    })
}

/// `url` with query parameter `key` set to `value` (replaced when present).
#[must_use]
pub fn with_query(url: &str, key: &str, value: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut pairs: Vec<String> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some(key))
        .map(str::to_string)
        .collect();
    pairs.push(format!("{key}={value}"));
    format!("{base}?{}", pairs.join("&"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::source::Offline;
    use crate::testing::MemoryScm as Pages;

    fn answer(status: u16, headers: &[(&str, &str)], body: &Value) -> HttpAnswer {
        HttpAnswer {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: body.to_string().into_bytes(),
        }
    }

    fn get_offline() -> PagedGet<'static> {
        get(&Offline)
    }

    fn get(pages: &dyn ScmApi) -> PagedGet<'_> {
        PagedGet {
            api: pages,
            headers: vec![("authorization".into(), "Bearer t".into())],
            insecure: false,
        }
    }

    #[test]
    fn link_headers_are_followed_to_the_last_page() {
        let mut pages = Pages::default();
        let next =
            r#"<https://api.test/r?page=2>; rel="next", <https://api.test/r?page=2>; rel="last""#;
        pages.pages.insert(
            "https://api.test/r".into(),
            answer(200, &[("link", next)], &json!([1, 2])),
        );
        let prev =
            r#"<https://api.test/r?page=1>; rel="prev", <https://api.test/r?page=1>; rel="first""#;
        pages.pages.insert(
            "https://api.test/r?page=2".into(),
            answer(200, &[("link", prev)], &json!([3])),
        );
        let items = get(&pages).all("https://api.test/r", Paging::Link).unwrap();
        assert_eq!(items, vec![json!(1), json!(2), json!(3)]);
        let asked = pages.asked.lock().unwrap();
        assert_eq!(asked.len(), 2);
        assert_eq!(
            asked[1].1,
            vec![("authorization".into(), "Bearer t".into())]
        );
    }

    #[test]
    fn gitlab_and_bitbucket_pages() {
        let url = "https://gl.test/api/v4/projects/1/merge_requests?per_page=100";
        let empty = json!([]);
        let gitlab = |headers: &[(&str, &str)]| {
            next_page(
                url,
                &answer(200, headers, &empty),
                &empty,
                Paging::GitlabNextPage,
            )
        };
        assert_eq!(
            gitlab(&[("x-next-page", "2")]).as_deref(),
            Some("https://gl.test/api/v4/projects/1/merge_requests?per_page=100&page=2")
        );
        assert_eq!(gitlab(&[("x-next-page", "")]), None);
        assert_eq!(
            gitlab(&[("link", "<https://gl.test/keyset?id_after=9>; rel=\"next\"")]).as_deref(),
            Some("https://gl.test/keyset?id_after=9")
        );
        assert_eq!(
            with_query("https://gl.test/x?page=2&a=b", "page", "3"),
            "https://gl.test/x?a=b&page=3"
        );

        let bitbucket = |body: Value| {
            next_page(
                "https://bb.test/rest/api/1.0/projects/P/repos/r/pull-requests?limit=100",
                &answer(200, &[], &body),
                &body,
                Paging::BitbucketStart,
            )
        };
        assert_eq!(
            bitbucket(json!({"values": [], "isLastPage": false, "nextPageStart": 100})).as_deref(),
            Some(
                "https://bb.test/rest/api/1.0/projects/P/repos/r/pull-requests?limit=100&start=100"
            )
        );
        assert_eq!(bitbucket(json!({"values": [], "isLastPage": true})), None);
        assert_eq!(bitbucket(json!({"values": []})), None);
    }

    #[test]
    fn errors_say_what_was_asked_and_what_came_back() {
        let mut pages = Pages::default();
        pages.pages.insert(
            "https://api.test/missing".into(),
            answer(404, &[], &json!({"message": "Not Found"})),
        );
        pages.pages.insert(
            "https://api.test/object".into(),
            answer(200, &[], &json!({})),
        );
        pages.pages.insert(
            "https://api.test/limited".into(),
            answer(
                403,
                &[
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", "1700000000"),
                ],
                &json!({"message": "API rate limit exceeded"}),
            ),
        );
        let get = get(&pages);
        assert_eq!(
            get.all("https://api.test/missing", Paging::Link)
                .unwrap_err()
                .to_string(),
            r#"GET https://api.test/missing: answered HTTP 404: {"message":"Not Found"}"#
        );
        assert_eq!(get.found("https://api.test/missing").unwrap(), None);
        assert_eq!(get.object("https://api.test/missing").unwrap(), None);
        assert_eq!(
            get.object("https://api.test/object").unwrap(),
            Some(json!({}))
        );
        assert_eq!(
            get.all("https://api.test/object", Paging::Link)
                .unwrap_err()
                .to_string(),
            "GET https://api.test/object: the answer is not a list"
        );
        assert!(matches!(
            get.all("https://api.test/limited", Paging::Link)
                .unwrap_err(),
            ScmError::RateLimited {
                status: 403,
                retry: RetryAfter::ResetAt(1_700_000_000),
                ..
            }
        ));
        assert_eq!(
            get_offline()
                .all("https://api.test/r", Paging::Link)
                .unwrap_err()
                .to_string(),
            "GET https://api.test/r: pullRequest and scmProvider generators ask the provider's API over the network, which flotilla render and simulate do not (they read files only)"
        );
    }

    #[test]
    fn a_page_that_points_at_itself_ends_after_the_limit() {
        let mut pages = Pages::default();
        let link = r#"<https://api.test/loop>; rel="next""#;
        pages.pages.insert(
            "https://api.test/loop".into(),
            answer(200, &[("link", link)], &json!([])),
        );
        assert!(matches!(
            get(&pages).all("https://api.test/loop", Paging::Link),
            Err(ScmError::TooManyPages { .. })
        ));
        assert_eq!(pages.asked.lock().unwrap().len(), MAX_PAGES);
    }
}
