//! helm runs that reach a chart repository or an OCI registry, in one session: one private
//! HOME for all its runs (the `repositories.yaml` of `helm repo add` and the registry
//! `config.json` of `helm registry login` live there and are removed with it), the repository
//! Secret's `proxy` as `HTTP_PROXY`/`HTTPS_PROXY` and its `noProxy` as `NO_PROXY` on every run
//! (`repo add` and `registry login` too), passwords only on standard input, and helm's
//! messages scrubbed of every secret value the session was given. Knows nothing of charts.

use std::ffi::OsString;

use super::SourceError;
use super::run::{RunInput, ToolError};
use super::tools::Tools;
use flotilla_core::secrets::repository::{RepoCredentials, Sensitive, scrub};

/// A session of helm runs sharing one private HOME (removed when dropped).
#[derive(Debug)]
pub struct HelmSession<'t> {
    tools: &'t Tools,
    home: tempfile::TempDir,
    /// `HTTP_PROXY`/`HTTPS_PROXY` of every run: the first proxy a repository gave.
    proxy: Option<Sensitive>,
    /// `NO_PROXY` of every run, with [`Self::proxy`].
    no_proxy: Option<Sensitive>,
    /// Every secret value given, scrubbed from helm's messages.
    secrets: Vec<Sensitive>,
}

/// How an OCI registry is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegistryAccess {
    /// Over plain HTTP (`insecureOCIForceHttp`).
    pub plain_http: bool,
    /// Without TLS verification (`insecure`).
    pub insecure: bool,
}

impl RegistryAccess {
    /// The access the credentials of a registry ask for.
    #[must_use]
    pub fn of(credentials: Option<&RepoCredentials>) -> Self {
        Self {
            plain_http: credentials.is_some_and(|c| c.insecure_oci_force_http),
            insecure: credentials.is_some_and(|c| c.insecure),
        }
    }

    /// The flags of a `helm pull` or `helm dependency build` from the registry.
    #[must_use]
    pub fn pull_flags(self) -> Vec<OsString> {
        let mut flags = Vec::new();
        if self.plain_http {
            flags.push("--plain-http".into());
        }
        if self.insecure {
            flags.push("--insecure-skip-tls-verify".into());
        }
        flags
    }
}

/// The `helm repo add` arguments adding `url` as `name`, with `username` and the password read
/// from standard input (never an argument) when given.
#[must_use]
pub fn repo_add_args(
    name: &str,
    url: &str,
    username: Option<&str>,
    pass_credentials: bool,
    insecure: bool,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["repo", "add", name, url].map(Into::into).into();
    if let Some(username) = username {
        args.extend([
            "--username".into(),
            username.into(),
            "--password-stdin".into(),
        ]);
    }
    if pass_credentials {
        args.push("--pass-credentials".into());
    }
    if insecure {
        args.push("--insecure-skip-tls-verify".into());
    }
    args
}

/// The `helm registry login` arguments for `host` as `username`, the password on standard
/// input; `--insecure` lets helm reach it without TLS verification or over plain HTTP.
#[must_use]
pub fn registry_login_args(host: &str, username: &str, access: RegistryAccess) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "registry",
        "login",
        host,
        "--username",
        username,
        "--password-stdin",
    ]
    .map(Into::into)
    .into();
    if access.plain_http || access.insecure {
        args.push("--insecure".into());
    }
    args
}

impl<'t> HelmSession<'t> {
    /// A session with a new private HOME.
    ///
    /// # Errors
    /// The private directory cannot be made.
    pub fn new(tools: &'t Tools) -> Result<Self, SourceError> {
        let home = tools
            .helm(Vec::new())
            .private_home()
            .map_err(|error| SourceError::Tool {
                tool: "helm",
                error,
            })?;
        Ok(Self {
            tools,
            home,
            proxy: None,
            no_proxy: None,
            secrets: Vec::new(),
        })
    }

    /// Takes the proxy (if none yet) and the secret values of `credentials`.
    pub fn remember(&mut self, credentials: Option<&RepoCredentials>) {
        let Some(credentials) = credentials else {
            return;
        };
        if self.proxy.is_none() && credentials.proxy.is_some() {
            self.proxy.clone_from(&credentials.proxy);
            self.no_proxy = credentials.no_proxy.clone().map(Sensitive::new);
        }
        self.secrets
            .extend(credentials.secret_values().into_iter().map(Sensitive::new));
    }

    /// `helm repo add name url` with the credentials (and proxy) of `credentials`.
    ///
    /// # Errors
    /// helm's failure (an unreachable repository, a refused password), scrubbed.
    pub fn add_repository(
        &mut self,
        name: &str,
        url: &str,
        credentials: Option<&RepoCredentials>,
        pass_credentials: bool,
    ) -> Result<(), SourceError> {
        self.remember(credentials);
        let password = credentials.and_then(|c| c.password.as_ref());
        let username = password.map(|_| {
            credentials
                .and_then(|c| c.username.as_deref())
                .unwrap_or_default()
        });
        let insecure = credentials.is_some_and(|c| c.insecure);
        let args = repo_add_args(name, url, username, pass_credentials, insecure);
        self.run_with_stdin(args, password).map(drop)
    }

    /// `helm registry login host` when `credentials` hold a password (else nothing: the
    /// registry is read anonymously).
    ///
    /// # Errors
    /// helm's failure (an unreachable registry, a refused password), scrubbed.
    pub fn login_registry(
        &mut self,
        host: &str,
        credentials: Option<&RepoCredentials>,
    ) -> Result<(), SourceError> {
        self.remember(credentials);
        let Some((credentials, password)) =
            credentials.and_then(|c| c.password.as_ref().map(|p| (c, p)))
        else {
            return Ok(());
        };
        let username = credentials.username.as_deref().unwrap_or_default();
        let args = registry_login_args(host, username, RegistryAccess::of(Some(credentials)));
        self.run_with_stdin(args, Some(password)).map(drop)
    }

    /// Runs helm with `args` in this session, allowed the network; returns its output.
    ///
    /// # Errors
    /// helm's failure with its stderr, scrubbed of the session's secrets.
    pub fn run(&self, args: Vec<OsString>) -> Result<String, SourceError> {
        self.run_with_stdin(args, None)
    }

    fn run_with_stdin(
        &self,
        args: Vec<OsString>,
        stdin: Option<&Sensitive>,
    ) -> Result<String, SourceError> {
        let mut command = self.tools.helm(args);
        command.network = true;
        let mut input = RunInput::new(self.home.path());
        input.stdin = stdin;
        if let Some(proxy) = &self.proxy {
            input.env = vec![("HTTP_PROXY", proxy), ("HTTPS_PROXY", proxy)];
        }
        if let Some(no_proxy) = &self.no_proxy {
            input
                .env
                .extend([("NO_PROXY", no_proxy), ("no_proxy", no_proxy)]);
        }
        command
            .run_with(self.tools.timeout, &input)
            .map_err(|error| SourceError::Tool {
                tool: "helm",
                error: self.scrubbed(error),
            })
    }

    /// `error` with the session's secret values replaced in helm's message.
    fn scrubbed(&self, error: ToolError) -> ToolError {
        match error {
            ToolError::Failed {
                command,
                status,
                stderr,
            } => {
                let secrets: Vec<&str> = self.secrets.iter().map(Sensitive::expose).collect();
                ToolError::Failed {
                    command,
                    status,
                    stderr: scrub(&stderr, &secrets),
                }
            }
            error => error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(args: Vec<OsString>) -> String {
        args.into_iter()
            .map(|a| a.into_string().unwrap())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn passwords_are_never_arguments() {
        assert_eq!(
            text(repo_add_args("r", "https://c", Some("u"), true, true)),
            "repo add r https://c --username u --password-stdin --pass-credentials \
             --insecure-skip-tls-verify"
        );
        assert_eq!(
            text(repo_add_args("r", "https://c", None, false, false)),
            "repo add r https://c"
        );
        let plain = RegistryAccess {
            plain_http: true,
            insecure: false,
        };
        assert_eq!(
            text(registry_login_args("reg:5000", "u", plain)),
            "registry login reg:5000 --username u --password-stdin --insecure"
        );
        assert_eq!(text(plain.pull_flags()), "--plain-http");
    }

    #[test]
    fn runs_get_the_first_proxy_and_scrub_every_secret() {
        let tools = Tools::default();
        let mut session = HelmSession::new(&tools).unwrap();
        let with = |proxy: &str, password: &str| RepoCredentials {
            proxy: Some(Sensitive::new(proxy)),
            no_proxy: Some("internal".into()),
            password: Some(Sensitive::new(password)),
            ..RepoCredentials::default()
        };
        session.remember(Some(&with("http://first:3128", "pw-one")));
        session.remember(Some(&with("http://second:3128", "pw-two")));
        assert_eq!(
            session.proxy.as_ref().unwrap().expose(),
            "http://first:3128"
        );
        let failed = ToolError::Failed {
            command: Tools::default().helm(Vec::new()),
            status: std::process::ExitStatus::default(),
            stderr: "pw-one via http://second:3128 and pw-two".into(),
        };
        let ToolError::Failed { stderr, .. } = session.scrubbed(failed) else {
            panic!("still a failure");
        };
        assert_eq!(stderr, "******** via ******** and ********");
    }
}
