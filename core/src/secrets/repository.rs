//! Repository credentials as Argo CD stores them: Secrets labelled
//! `argocd.argoproj.io/secret-type: repository` (one repository, its `url` matched exactly after
//! Argo CD's URL normalisation) or `repo-creds` (a template for every repository whose normalised
//! URL starts with its `url`; the longest prefix wins). A `repository` Secret wins over
//! `repo-creds`; one without credentials of its own takes them from the best `repo-creds`, as
//! Argo CD does. A Secret with a `project` is used only for that project's Applications, and
//! wins over one without (Argo CD's project-scoped repositories). Pure: the Secrets are given,
//! nothing is fetched. Secret values are kept in [`Sensitive`], which never prints them.

use std::fmt;

use flotilla_generators::cause::Cause;
use k8s_openapi::api::core::v1::Secret;

use crate::secrets::cluster::{ClusterSecretError, SECRET_TYPE_LABEL, secret_field};

/// The label value of a Secret for one repository.
pub const SECRET_TYPE_REPOSITORY: &str = "repository";
/// The label value of a Secret for every repository under a URL prefix.
pub const SECRET_TYPE_REPO_CREDS: &str = "repo-creds";

/// Argo CD's credential fields Flotilla does not use: a Secret setting one is refused, so a
/// repository is never read anonymously when its owner meant it to authenticate.
const UNSUPPORTED_FIELDS: [&str; 7] = [
    "bearerToken",
    "githubAppID",
    "githubAppPrivateKey",
    "gcpServiceAccountKey",
    "tlsClientCertData",
    "tlsClientCertKey",
    "useAzureWorkloadIdentity",
];

/// A secret value: shown as `********` by `Debug`, read only through [`Sensitive::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Sensitive(String);

impl Sensitive {
    /// Wraps a secret value.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for writing it where only git or helm reads it.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Sensitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("********")
    }
}

/// What kind of repository a Secret is for (`type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RepoType {
    #[default]
    Git,
    Helm,
}

/// The credentials and connection settings for one repository.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoCredentials {
    /// The Secret they come from (its name, for messages; never its values).
    pub secret: String,
    pub username: Option<String>,
    /// A password or token (https, helm).
    pub password: Option<Sensitive>,
    /// A private key in OpenSSH or PEM form (ssh).
    pub ssh_private_key: Option<Sensitive>,
    /// Skip TLS verification (https) or host key checking (ssh).
    pub insecure: bool,
    /// An HTTP(S) proxy URL.
    pub proxy: Option<Sensitive>,
    /// Hosts reached without the proxy (`noProxy`, comma-separated as in `NO_PROXY`).
    pub no_proxy: Option<String>,
    /// Send basic auth with the first request instead of waiting for a challenge
    /// (`forceHttpBasicAuth`).
    pub force_http_basic_auth: bool,
    /// The project the Secret is scoped to (`project`), if any.
    pub project: Option<String>,
    pub repo_type: RepoType,
    /// The URL names an OCI registry (`enableOCI`), its charts pulled as `oci://URL/CHART`.
    pub enable_oci: bool,
    /// Reach the OCI registry over plain HTTP (`insecureOCIForceHttp`).
    pub insecure_oci_force_http: bool,
}

impl RepoCredentials {
    /// Whether a username, password or key is set.
    #[must_use]
    pub fn has_credentials(&self) -> bool {
        self.username.is_some() || self.password.is_some() || self.ssh_private_key.is_some()
    }

    /// The values that must never appear in a message: the password, key and proxy.
    #[must_use]
    pub fn secret_values(&self) -> Vec<&str> {
        [&self.password, &self.ssh_private_key, &self.proxy]
            .into_iter()
            .flatten()
            .map(Sensitive::expose)
            .filter(|value| !value.is_empty())
            .collect()
    }

    /// `text` (a tool's message) with every secret value replaced by `********`.
    #[must_use]
    pub fn scrub(&self, text: &str) -> String {
        scrub(text, &self.secret_values())
    }
}

/// `text` with every one of `secrets` replaced by `********`.
#[must_use]
pub fn scrub(text: &str, secrets: &[&str]) -> String {
    secrets
        .iter()
        .filter(|secret| !secret.is_empty())
        .fold(text.to_owned(), |text, secret| {
            text.replace(secret, "********")
        })
}

/// Whether `url` names a remote repository (credentials apply), not a local path or
/// `file://` URL.
#[must_use]
pub fn is_remote(url: &str) -> bool {
    (url.contains("://") && !url.starts_with("file://")) || is_ssh_url(url)
}

/// A credentials Secret that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    #[error(transparent)]
    Field(#[from] ClusterSecretError),
    #[error("Secret {secret}: field {field}: {message}")]
    Invalid {
        secret: String,
        field: &'static str,
        message: String,
    },
    #[error(
        "Secret {secret}: field {field} is not supported by Flotilla (put a token in password; \
         use username/password or sshPrivateKey)"
    )]
    Unsupported { secret: String, field: &'static str },
    /// The Secrets cannot be read here (no runtime to watch them with).
    #[error("repository credentials in namespace {namespace}: {message}")]
    Unavailable { namespace: String, message: String },
    /// The watch of the Secrets failed to start or to list them.
    #[error("repository credentials in namespace {namespace}: {cause}")]
    Watch {
        namespace: String,
        #[source]
        cause: Cause,
    },
}

/// Where credentials for a repository URL come from.
pub trait CredentialSource: Send + Sync + fmt::Debug {
    /// The credentials for `url` read for an Application of `project` (see
    /// [`credentials_for`]), if a Secret has some. Blocking: call it off the async workers.
    ///
    /// # Errors
    /// The Secrets cannot be read, or the Secret that matches is unusable.
    fn credentials(
        &self,
        url: &str,
        project: Option<&str>,
    ) -> Result<Option<RepoCredentials>, CredentialsError>;
}

/// The credentials for `url`, read for an Application of `project` (`None`: for no project,
/// e.g. an ApplicationSet's generator), among `secrets` (the credential Secrets of the
/// controller's namespace): the `repository` Secret whose `url` is the same repository,
/// completed by the `repo-creds` Secret with the longest `url` prefix when it has no
/// credentials of its own. A Secret scoped to another project is skipped; one scoped to
/// `project` wins over an unscoped one. Secrets whose `url` cannot be read match nothing.
///
/// # Errors
/// The matching Secret is unusable (a value that is not UTF-8 or valid, an unsupported field).
pub fn credentials_for<'a>(
    secrets: impl IntoIterator<Item = &'a Secret>,
    url: &str,
    project: Option<&str>,
) -> Result<Option<RepoCredentials>, CredentialsError> {
    let wanted = normalize_url(url);
    // (scoped to `project`, prefix length) ranks candidates; the first of equal rank wins.
    let mut repository: Option<(bool, &Secret)> = None;
    let mut template: Option<((bool, usize), &Secret)> = None;
    for secret in secrets {
        let Ok(Some(secret_url)) = secret_field(secret, "url") else {
            continue;
        };
        let scoped = match secret_field(secret, "project") {
            Ok(Some(scope)) if !scope.is_empty() => {
                if project != Some(scope.as_str()) {
                    continue;
                }
                true
            }
            _ => false,
        };
        let secret_url = normalize_url(&secret_url);
        match secret_type(secret) {
            Some(SECRET_TYPE_REPOSITORY)
                if secret_url == wanted && repository.is_none_or(|(best, _)| scoped && !best) =>
            {
                repository = Some((scoped, secret));
            }
            Some(SECRET_TYPE_REPO_CREDS)
                if wanted.starts_with(&secret_url)
                    && template.is_none_or(|(rank, _)| (scoped, secret_url.len()) > rank) =>
            {
                template = Some(((scoped, secret_url.len()), secret));
            }
            _ => {}
        }
    }
    let repository = repository.map(|(_, secret)| secret);
    let template = template.map(|(_, secret)| read(secret)).transpose()?;
    let Some(repository) = repository.map(read).transpose()? else {
        return Ok(template);
    };
    Ok(Some(match template {
        Some(template) if !repository.has_credentials() => RepoCredentials {
            username: template.username,
            password: template.password,
            ssh_private_key: template.ssh_private_key,
            proxy: repository.proxy.or(template.proxy),
            no_proxy: repository.no_proxy.or(template.no_proxy),
            secret: format!("{} (credentials of {})", repository.secret, template.secret),
            ..repository
        },
        _ => repository,
    }))
}

/// The (project, URL) of every `repository` Secret scoped to a project: its project permits that
/// repository as if listed in `sourceRepos`, as Argo CD's project-scoped repositories are.
/// Secrets whose `url` or `project` cannot be read are left out (they serve no repository).
#[must_use]
pub fn scoped_repositories<'a>(
    secrets: impl IntoIterator<Item = &'a Secret>,
) -> Vec<(String, String)> {
    secrets
        .into_iter()
        .filter(|secret| secret_type(secret) == Some(SECRET_TYPE_REPOSITORY))
        .filter_map(|secret| {
            let project = secret_field(secret, "project").ok().flatten()?;
            let url = secret_field(secret, "url").ok().flatten()?;
            (!project.is_empty() && !url.is_empty()).then_some((project, url))
        })
        .collect()
}

/// The `argocd.argoproj.io/secret-type` label of `secret`.
fn secret_type(secret: &Secret) -> Option<&str> {
    secret
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(SECRET_TYPE_LABEL))
        .map(String::as_str)
}

/// Reads the credential fields of `secret`.
fn read(secret: &Secret) -> Result<RepoCredentials, CredentialsError> {
    let name = secret.metadata.name.clone().unwrap_or_default();
    let invalid = |field, message: &str| CredentialsError::Invalid {
        secret: name.clone(),
        field,
        message: message.to_owned(),
    };
    for field in UNSUPPORTED_FIELDS {
        if secret_field(secret, field)?.is_some_and(|v| !v.is_empty() && v != "false") {
            return Err(CredentialsError::Unsupported {
                secret: name.clone(),
                field,
            });
        }
    }
    let field = |key: &'static str| -> Result<Option<String>, CredentialsError> {
        Ok(secret_field(secret, key)?.filter(|value| !value.is_empty()))
    };
    let one_line = |key: &'static str| -> Result<Option<String>, CredentialsError> {
        match field(key)? {
            Some(value) if value.contains(['\n', '\r', '\0']) => {
                Err(invalid(key, "must be one line"))
            }
            value => Ok(value),
        }
    };
    let flag = |key: &'static str| -> Result<bool, CredentialsError> {
        match field(key)?.as_deref() {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(invalid(key, "must be \"true\" or \"false\"")),
        }
    };
    let repo_type = match field("type")?.as_deref() {
        None | Some("git") => RepoType::Git,
        Some("helm") => RepoType::Helm,
        Some(other) => {
            return Err(invalid(
                "type",
                &format!("{other:?} is not a supported type (git, helm)"),
            ));
        }
    };
    Ok(RepoCredentials {
        username: one_line("username")?,
        password: one_line("password")?.map(Sensitive),
        ssh_private_key: field("sshPrivateKey")?.map(Sensitive),
        insecure: flag("insecure")?,
        proxy: one_line("proxy")?.map(Sensitive),
        no_proxy: one_line("noProxy")?,
        force_http_basic_auth: flag("forceHttpBasicAuth")?,
        enable_oci: flag("enableOCI")?,
        insecure_oci_force_http: flag("insecureOCIForceHttp")?,
        project: one_line("project")?,
        repo_type,
        secret: name,
    })
}

/// Argo CD's normalised form of a repository URL, used to compare them: lower case, an
/// scp-style ssh address (`git@host:org/repo`) written as a URL without its `ssh://`, and no
/// `.git` suffix.
#[must_use]
pub fn normalize_url(url: &str) -> String {
    let mut url = url.trim().to_lowercase();
    if is_ssh_url(&url) {
        if let Some(rest) = url.strip_prefix("ssh://") {
            url = rest.to_owned();
        } else {
            url = url.replacen(':', "/", 1);
        }
    }
    url.strip_suffix(".git").map(str::to_owned).unwrap_or(url)
}

/// Whether `url` is reached over ssh: `ssh://…`, or `user@host:path` (scp style), as Argo CD
/// tells them apart.
#[must_use]
pub fn is_ssh_url(url: &str) -> bool {
    let rest = url.strip_prefix("ssh://").unwrap_or(url);
    match rest.split_once('@') {
        Some((user, host)) => !user.contains(['/', ':']) && !host.contains('@'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, kind: &str, data: &str) -> Secret {
        serde_saphyr::from_str(&format!(
            "metadata: {{name: {name}, labels: {{{SECRET_TYPE_LABEL}: {kind}}}}}\nstringData: {data}\n"
        ))
        .expect("a valid Secret")
    }

    #[test]
    fn normalises_urls_as_argo_cd() {
        let cases = [
            (
                "https://Git.Example.com/Acme/App.git",
                "https://git.example.com/acme/app",
            ),
            ("git@github.com:acme/app.git", "git@github.com/acme/app"),
            ("ssh://git@github.com/acme/app", "git@github.com/acme/app"),
            (" http://h:8080/x ", "http://h:8080/x"),
        ];
        for (url, normal) in cases {
            assert_eq!(normalize_url(url), normal, "{url}");
        }
        assert!(is_ssh_url("git@github.com:acme/app"));
        assert!(is_ssh_url("ssh://git@h:22/x"));
        assert!(!is_ssh_url("https://user@h/x"));
        assert!(!is_ssh_url("https://h/x"));
        assert!(is_remote("https://h/x") && is_remote("git@h:x") && is_remote("git://h/x"));
        assert!(!is_remote("file:///srv/x") && !is_remote("/srv/x") && !is_remote("./x"));
    }

    #[test]
    fn a_repository_secret_wins_and_the_longest_template_prefix_wins() {
        let secrets = [
            secret(
                "org",
                "repo-creds",
                "{url: 'https://git.example.com/acme', username: org, password: p1}",
            ),
            secret(
                "all",
                "repo-creds",
                "{url: 'https://git.example.com', username: all, password: p0}",
            ),
            secret(
                "app",
                "repository",
                "{url: 'https://git.example.com/acme/app.git', username: app, password: p2, insecure: 'true'}",
            ),
            secret(
                "bare",
                "repository",
                "{url: 'https://git.example.com/acme/bare', proxy: 'http://proxy:3128'}",
            ),
            secret(
                "cluster",
                "cluster",
                "{url: 'https://git.example.com/acme/other', username: no}",
            ),
        ];
        let user = |url: &str| {
            credentials_for(&secrets, url, None)
                .unwrap()
                .map(|c| (c.secret, c.username.unwrap_or_default(), c.insecure))
        };
        assert_eq!(
            user("https://GIT.example.com/acme/app"),
            Some(("app".into(), "app".into(), true))
        );
        assert_eq!(
            user("https://git.example.com/acme/other.git"),
            Some(("org".into(), "org".into(), false))
        );
        assert_eq!(
            user("https://git.example.com/tools/x"),
            Some(("all".into(), "all".into(), false))
        );
        assert_eq!(user("https://elsewhere.example.com/acme/app"), None);
        let bare = credentials_for(&secrets, "https://git.example.com/acme/bare", None)
            .unwrap()
            .unwrap();
        assert_eq!(bare.secret, "bare (credentials of org)");
        assert_eq!(bare.password, Some(Sensitive::new("p1")));
        assert_eq!(bare.proxy, Some(Sensitive::new("http://proxy:3128")));
    }

    #[test]
    fn reads_ssh_keys_types_and_refuses_what_it_cannot_use() {
        let secrets = [secret(
            "ssh",
            "repository",
            "{url: 'git@github.com:acme/app.git', sshPrivateKey: KEY, type: helm}",
        )];
        let read = credentials_for(&secrets, "ssh://git@github.com/acme/app", None)
            .unwrap()
            .unwrap();
        assert_eq!(
            read.ssh_private_key.as_ref().map(Sensitive::expose),
            Some("KEY")
        );
        assert_eq!(read.repo_type, RepoType::Helm);
        assert_eq!(format!("{:?}", read.ssh_private_key), "Some(********)");
        assert_eq!(read.secret_values(), ["KEY"]);

        let refused = |data: &str| {
            credentials_for(&[secret("bad", "repository", data)], "https://h/x", None)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused("{url: 'https://h/x', githubAppID: '1'}"),
            "Secret bad: field githubAppID is not supported by Flotilla (put a token in \
             password; use username/password or sshPrivateKey)"
        );
        assert_eq!(
            refused("{url: 'https://h/x', insecure: 'yes'}"),
            "Secret bad: field insecure: must be \"true\" or \"false\""
        );
        assert_eq!(
            refused("{url: 'https://h/x', forceHttpBasicAuth: 'on'}"),
            "Secret bad: field forceHttpBasicAuth: must be \"true\" or \"false\""
        );
        assert_eq!(
            refused("{url: 'https://h/x', type: oci}"),
            "Secret bad: field type: \"oci\" is not a supported type (git, helm)"
        );
        assert_eq!(
            refused("{url: 'https://h/x', password: \"a\\nb\"}"),
            "Secret bad: field password: must be one line"
        );
    }

    #[test]
    fn scoped_repository_secrets_name_their_projects_repositories() {
        let secrets = [
            secret("a", "repository", "{url: 'https://h/a', project: team-a}"),
            secret("global", "repository", "{url: 'https://h/g'}"),
            secret(
                "creds",
                "repo-creds",
                "{url: 'https://h/', project: team-a}",
            ),
            secret("b", "repository", "{url: 'https://h/b', project: team-b}"),
        ];
        assert_eq!(
            scoped_repositories(&secrets),
            [
                ("team-a".to_owned(), "https://h/a".to_owned()),
                ("team-b".to_owned(), "https://h/b".to_owned())
            ]
        );
    }

    #[test]
    fn a_project_scoped_secret_serves_only_its_project_and_wins_there() {
        let secrets = [
            secret(
                "team-a-app",
                "repository",
                "{url: 'https://git.example.com/acme/app', username: a, project: team-a}",
            ),
            secret(
                "global-app",
                "repository",
                "{url: 'https://git.example.com/acme/app', username: global}",
            ),
            secret(
                "team-b-only",
                "repository",
                "{url: 'https://git.example.com/acme/b-only', username: b, project: team-b}",
            ),
            secret(
                "team-a-org",
                "repo-creds",
                "{url: 'https://git.example.com', username: a-org, project: team-a}",
            ),
            secret(
                "acme",
                "repo-creds",
                "{url: 'https://git.example.com/acme', username: acme}",
            ),
        ];
        // (url, project, the Secret used)
        let cases = [
            (
                "https://git.example.com/acme/app",
                Some("team-a"),
                Some("team-a-app"),
            ),
            (
                "https://git.example.com/acme/app",
                Some("team-b"),
                Some("global-app"),
            ),
            ("https://git.example.com/acme/app", None, Some("global-app")),
            (
                "https://git.example.com/acme/b-only",
                Some("team-b"),
                Some("team-b-only"),
            ),
            // Another project's Secret is not used: a template is, the project's own first.
            (
                "https://git.example.com/acme/b-only",
                Some("team-a"),
                Some("team-a-org"),
            ),
            (
                "https://git.example.com/acme/b-only",
                Some("team-c"),
                Some("acme"),
            ),
            (
                "https://git.example.com/tools/x",
                Some("team-a"),
                Some("team-a-org"),
            ),
            ("https://git.example.com/tools/x", Some("team-b"), None),
            ("https://git.example.com/tools/x", None, None),
        ];
        for (url, project, used) in cases {
            let found = credentials_for(&secrets, url, project).unwrap();
            assert_eq!(
                found.map(|c| c.secret).as_deref(),
                used,
                "{url} for project {project:?}"
            );
        }
    }

    #[test]
    fn reads_no_proxy_and_forced_basic_auth() {
        let secrets = [
            secret(
                "org",
                "repo-creds",
                "{url: 'https://h', username: u, password: p, noProxy: '.internal,10.0.0.1'}",
            ),
            secret(
                "app",
                "repository",
                "{url: 'https://h/app', forceHttpBasicAuth: 'true', proxy: 'http://proxy:3128', project: p}",
            ),
        ];
        let read = credentials_for(&secrets, "https://h/app", Some("p"))
            .unwrap()
            .unwrap();
        assert_eq!(read.secret, "app (credentials of org)");
        assert!(read.force_http_basic_auth);
        assert_eq!(read.no_proxy.as_deref(), Some(".internal,10.0.0.1"));
        assert_eq!(read.project.as_deref(), Some("p"));
        assert_eq!(read.username.as_deref(), Some("u"));
        let plain = credentials_for(&secrets, "https://h/other", None)
            .unwrap()
            .unwrap();
        assert!(!plain.force_http_basic_auth);
    }
}
