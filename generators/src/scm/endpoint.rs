//! Where a provider's REST API is and how a request authenticates, as each provider (and the
//! client library Argo CD uses for it) documents it: the API root from `api` (GitHub
//! Enterprise under `/api/v3/`, GitLab under `/api/v4`, Gitea under `/api/v1`, Bitbucket Server
//! under `/rest`), the credentials read from Secrets of the controller's namespace, and the
//! request headers they make.

use base64::Engine as _;

use crate::generator::{GeneratorError, GeneratorErrorReason};
use crate::scm_api::paging::{PagedGet, Paging, ScmError};
use crate::source::{NamespaceObjects, ScmApi};
use crate::spec::{BasicAuth, BearerToken, SecretKeyRef};

/// The providers Flotilla asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    Github,
    Gitlab,
    Gitea,
    BitbucketServer,
}

impl Provider {
    /// The field that names the provider in a generator.
    #[must_use]
    pub fn field(self) -> &'static str {
        match self {
            Self::Github => "github",
            Self::Gitlab => "gitlab",
            Self::Gitea => "gitea",
            Self::BitbucketServer => "bitbucketServer",
        }
    }

    /// The root of the REST API for the generator's `api` (empty: the public service, for
    /// GitHub and GitLab), without a trailing slash.
    #[must_use]
    pub fn root(self, api: &str) -> String {
        let api = api.trim_end_matches('/');
        match self {
            Self::Github if api.is_empty() => "https://api.github.com".into(),
            // go-github's enterprise rule: `/api/v3` is added unless the URL already is an API
            // host or path.
            Self::Github
                if api.ends_with("/api/v3") || api.contains("://api.") || api.contains(".api.") =>
            {
                api.into()
            }
            Self::Github => format!("{api}/api/v3"),
            Self::Gitlab if api.is_empty() => "https://gitlab.com/api/v4".into(),
            Self::Gitlab if api.ends_with("/api/v4") => api.into(),
            Self::Gitlab => format!("{api}/api/v4"),
            Self::Gitea if api.ends_with("/api/v1") => api.into(),
            Self::Gitea => format!("{api}/api/v1"),
            Self::BitbucketServer if api.ends_with("/rest") => api.into(),
            Self::BitbucketServer => format!("{api}/rest"),
        }
    }

    /// How the provider pages its lists.
    #[must_use]
    pub fn paging(self) -> Paging {
        match self {
            Self::Github | Self::Gitea => Paging::Link,
            Self::Gitlab => Paging::GitlabNextPage,
            Self::BitbucketServer => Paging::BitbucketStart,
        }
    }

    /// The headers of every request: JSON, a user agent (GitHub refuses requests without one)
    /// and the credential as the provider expects it.
    #[must_use]
    pub fn headers(self, credential: &Credential) -> Vec<(String, String)> {
        let mut headers = vec![
            ("accept".to_string(), self.accept().to_string()),
            ("user-agent".to_string(), "flotilla".to_string()),
        ];
        let authorization = match (self, credential) {
            (_, Credential::None) => None,
            (Self::Gitlab, Credential::Token(token)) => {
                Some(("private-token".to_string(), token.clone()))
            }
            (Self::Gitea, Credential::Token(token)) => {
                Some(("authorization".to_string(), format!("token {token}")))
            }
            (_, Credential::Token(token) | Credential::Bearer(token)) => {
                Some(("authorization".to_string(), format!("Bearer {token}")))
            }
            (_, Credential::Basic { username, password }) => {
                let pair = base64::engine::general_purpose::STANDARD
                    .encode(format!("{username}:{password}"));
                Some(("authorization".to_string(), format!("Basic {pair}")))
            }
        };
        headers.extend(authorization);
        headers
    }

    fn accept(self) -> &'static str {
        match self {
            Self::Github => "application/vnd.github+json",
            _ => "application/json",
        }
    }

    /// A GET of this provider's API with `credential`.
    #[must_use]
    pub fn client<'a>(
        self,
        api: &'a dyn ScmApi,
        credential: &Credential,
        insecure: bool,
    ) -> PagedGet<'a> {
        PagedGet {
            api,
            headers: self.headers(credential),
            insecure,
        }
    }
}

/// How requests authenticate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// Anonymous (public repositories).
    None,
    /// An access token, sent as the provider expects (`Bearer`, `PRIVATE-TOKEN`, `token`).
    Token(String),
    /// HTTP basic authentication.
    Basic { username: String, password: String },
    /// `Authorization: Bearer`.
    Bearer(String),
}

impl Credential {
    /// The token of `token_ref`, if set; `field` names it in errors (`github.tokenRef`).
    ///
    /// # Errors
    /// The Secret or its key is missing or cannot be read.
    pub fn token(
        objects: &dyn NamespaceObjects,
        field: &str,
        token_ref: Option<&SecretKeyRef>,
    ) -> Result<Self, GeneratorError> {
        token_ref.map_or(Ok(Self::None), |secret| {
            read_secret(objects, field, secret).map(Self::Token)
        })
    }

    /// The bearer token of `token_ref`; `field` names it in errors.
    ///
    /// # Errors
    /// As [`Self::token`].
    pub fn bearer(
        objects: &dyn NamespaceObjects,
        field: &str,
        token_ref: &SecretKeyRef,
    ) -> Result<Self, GeneratorError> {
        read_secret(objects, field, token_ref).map(Self::Bearer)
    }

    /// The user and password of `basic_auth`; `field` names it in errors.
    ///
    /// # Errors
    /// As [`Self::token`].
    pub fn basic(
        objects: &dyn NamespaceObjects,
        field: &str,
        basic_auth: &BasicAuth,
    ) -> Result<Self, GeneratorError> {
        let password = read_secret(
            objects,
            &format!("{field}.passwordRef"),
            &basic_auth.password_ref,
        )?;
        Ok(Self::Basic {
            username: basic_auth.username.clone(),
            password,
        })
    }
}

/// How a provider block authenticates, as its fields say.
#[derive(Clone, Copy, Debug)]
pub enum Auth<'a> {
    /// `tokenRef` (GitHub, GitLab, Gitea); anonymous without it.
    Token(Option<&'a SecretKeyRef>),
    /// Bitbucket Server's `basicAuth` or `bearerToken` (at most one); anonymous without either.
    BitbucketServer {
        basic_auth: Option<&'a BasicAuth>,
        bearer_token: Option<&'a BearerToken>,
    },
}

impl Auth<'_> {
    /// The credential, read from its Secret; errors name `provider`'s field
    /// (`github.tokenRef`).
    ///
    /// # Errors
    /// Both `basicAuth` and `bearerToken` set; a Secret or key missing.
    pub fn credential(
        self,
        provider: Provider,
        objects: &dyn NamespaceObjects,
    ) -> Result<Credential, GeneratorError> {
        let field = provider.field();
        match self {
            Self::Token(token_ref) => {
                Credential::token(objects, &format!("{field}.tokenRef"), token_ref)
            }
            Self::BitbucketServer {
                basic_auth,
                bearer_token,
            } => match (basic_auth, bearer_token) {
                (Some(_), Some(_)) => {
                    Err(field_error(field, "set basicAuth or bearerToken, not both"))
                }
                (Some(basic), None) => {
                    Credential::basic(objects, &format!("{field}.basicAuth"), basic)
                }
                (None, Some(bearer)) => Credential::bearer(
                    objects,
                    &format!("{field}.bearerToken.tokenRef"),
                    &bearer.token_ref,
                ),
                (None, None) => Ok(Credential::None),
            },
        }
    }
}

/// The provider block a generator sets: its `github`, `gitlab`, `gitea` or `bitbucketServer`
/// (each generator has its own types for them).
#[derive(Clone, Copy, Debug)]
pub enum Block<G, L, T, B> {
    Github(G),
    Gitlab(L),
    Gitea(T),
    BitbucketServer(B),
}

impl<G, L, T, B> Block<G, L, T, B> {
    /// The one block set among a generator's four; the providers the generator does not
    /// implement (`unsupported`) are named in the error when none is set.
    ///
    /// # Errors
    /// No block, or several.
    pub fn one(
        unsupported: &str,
        github: Option<G>,
        gitlab: Option<L>,
        gitea: Option<T>,
        bitbucket_server: Option<B>,
    ) -> Result<Self, GeneratorError> {
        let mut set: Vec<Self> = [
            github.map(Self::Github),
            gitlab.map(Self::Gitlab),
            gitea.map(Self::Gitea),
            bitbucket_server.map(Self::BitbucketServer),
        ]
        .into_iter()
        .flatten()
        .collect();
        if set.len() == 1 {
            return Ok(set.swap_remove(0));
        }
        let names: Vec<&str> = set.iter().map(|block| block.provider().field()).collect();
        Err(GeneratorError::here(GeneratorErrorReason::ScmProviders(
            if names.is_empty() {
                format!(
                    "set one provider: github, gitlab, gitea or bitbucketServer ({unsupported} are not supported)"
                )
            } else {
                format!("several providers are set ({}); set one", names.join(", "))
            },
        )))
    }

    /// The provider of the block.
    #[must_use]
    pub fn provider(&self) -> Provider {
        match self {
            Self::Github(_) => Provider::Github,
            Self::Gitlab(_) => Provider::Gitlab,
            Self::Gitea(_) => Provider::Gitea,
            Self::BitbucketServer(_) => Provider::BitbucketServer,
        }
    }
}

/// An error of asking `provider`'s API.
#[must_use]
pub fn api_error(provider: Provider, source: ScmError) -> GeneratorError {
    GeneratorError::here(GeneratorErrorReason::ScmApi {
        provider: provider.field(),
        source: Box::new(source),
    })
}

/// Whether `provider`'s API can be asked at all (there is no network in `flotilla render` and
/// `simulate`), said for `url` before any Secret is read.
///
/// # Errors
/// No network access here.
pub fn ensure_available(
    api: &dyn ScmApi,
    provider: Provider,
    url: &str,
) -> Result<(), GeneratorError> {
    api.available().map_err(|source| {
        api_error(
            provider,
            ScmError::Call {
                url: url.into(),
                source,
            },
        )
    })
}

/// `path` (`a/b c`) as URL path segments, each percent-encoded (`a/b%20c`); slashes at either
/// end dropped.
#[must_use]
pub fn path_segments(path: &str) -> String {
    path.trim_matches('/')
        .split('/')
        .map(segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// The value of `secret`, trimmed of surrounding white space (a token file's newline).
fn read_secret(
    objects: &dyn NamespaceObjects,
    field: &str,
    secret: &SecretKeyRef,
) -> Result<String, GeneratorError> {
    objects
        .secret_value(&secret.secret_name, &secret.key)
        .map(|value| value.trim().to_string())
        .map_err(|source| {
            GeneratorError::here(GeneratorErrorReason::ScmSecret {
                field: field.into(),
                source: Box::new(source),
            })
        })
}

/// `text` as one URL path segment: everything but unreserved characters percent-encoded
/// (GitLab's `group/project` becomes `group%2Fproject`).
#[must_use]
pub fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// An error in the generator's own fields: `field` (`github.appSecretName`) and why.
pub fn field_error(field: impl Into<String>, message: impl Into<String>) -> GeneratorError {
    GeneratorError::here(GeneratorErrorReason::ScmField {
        field: field.into(),
        message: message.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_roots_as_the_providers_clients_make_them() {
        let cases = [
            (Provider::Github, "", "https://api.github.com"),
            (
                Provider::Github,
                "https://ghe.example/",
                "https://ghe.example/api/v3",
            ),
            (
                Provider::Github,
                "https://ghe.example/api/v3/",
                "https://ghe.example/api/v3",
            ),
            (
                Provider::Github,
                "https://api.ghe.example",
                "https://api.ghe.example",
            ),
            (Provider::Gitlab, "", "https://gitlab.com/api/v4"),
            (
                Provider::Gitlab,
                "https://gl.example/",
                "https://gl.example/api/v4",
            ),
            (
                Provider::Gitea,
                "https://gitea.example",
                "https://gitea.example/api/v1",
            ),
            (
                Provider::BitbucketServer,
                "https://bb.example",
                "https://bb.example/rest",
            ),
            (
                Provider::BitbucketServer,
                "https://bb.example/rest/",
                "https://bb.example/rest",
            ),
        ];
        for (provider, api, root) in cases {
            assert_eq!(provider.root(api), root, "{provider:?} {api}");
        }
    }

    #[test]
    fn credentials_are_sent_as_each_provider_expects() {
        let auth = |provider: Provider, credential: &Credential| {
            provider
                .headers(credential)
                .into_iter()
                .filter(|(name, _)| name != "accept" && name != "user-agent")
                .collect::<Vec<_>>()
        };
        let token = Credential::Token("t0k".into());
        let pair = |name: &str, value: &str| vec![(name.to_string(), value.to_string())];
        assert_eq!(
            auth(Provider::Github, &token),
            pair("authorization", "Bearer t0k")
        );
        assert_eq!(auth(Provider::Gitlab, &token), pair("private-token", "t0k"));
        assert_eq!(
            auth(Provider::Gitea, &token),
            pair("authorization", "token t0k")
        );
        assert_eq!(
            auth(
                Provider::BitbucketServer,
                &Credential::Basic {
                    username: "ci".into(),
                    password: "pw".into()
                }
            ),
            pair("authorization", "Basic Y2k6cHc=")
        );
        assert_eq!(
            auth(Provider::BitbucketServer, &Credential::Bearer("b".into())),
            pair("authorization", "Bearer b")
        );
        assert!(auth(Provider::Github, &Credential::None).is_empty());
        assert_eq!(segment("group/sub project"), "group%2Fsub%20project");
    }
}
