//! How one `git` run that reaches a remote is given a repository's credentials, without any
//! secret in a process argument: its configuration goes in `GIT_CONFIG_*` environment
//! variables, the password is answered by a credential helper (scoped to the repository's
//! scheme and host) that prints a file, and an ssh key is a file `GIT_SSH_COMMAND` names. Both
//! files have mode 0600 in a private directory (0700) removed when the [`GitAuth`] is dropped.
//! Every run gets `GIT_TERMINAL_PROMPT=0` (never wait for a person) and the user's own
//! credential helpers switched off (a password is never stored). `forceHttpBasicAuth` sends the
//! password with the first request: an `Authorization: Basic` header scoped to the repository's
//! origin (`http.<origin>.extraHeader`, in the run's environment like the rest of its
//! configuration; git 2.46's `http.proactiveAuth` would do it, but Debian 12 ships git 2.39);
//! `noProxy` becomes `NO_PROXY`. Host keys: with `insecure`
//! ssh checks none; otherwise it checks strictly, against the known-hosts file given (the
//! controller's `--ssh-known-hosts`) or ssh's own.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use flotilla_core::secrets::repository::{RepoCredentials, is_ssh_url, scrub};

/// The environment of one git run reaching a remote, and the files it reads.
#[derive(Debug, Default)]
pub struct GitAuth {
    env: Vec<(String, OsString)>,
    secrets: Vec<String>,
    _files: Option<tempfile::TempDir>,
}

impl GitAuth {
    /// The environment for reaching `url` with `credentials` (none: anonymously), with host keys
    /// checked against `known_hosts` when given.
    ///
    /// # Errors
    /// The private directory or its files cannot be written.
    pub fn new(
        url: &str,
        credentials: Option<&RepoCredentials>,
        known_hosts: Option<&Path>,
    ) -> std::io::Result<Self> {
        let mut config = vec![("credential.helper".to_owned(), String::new())];
        let mut auth = Self::default();
        auth.env.push(("GIT_TERMINAL_PROMPT".into(), "0".into()));
        let Some(credentials) = credentials else {
            auth.set_config(&config);
            return Ok(auth);
        };
        auth.secrets = credentials
            .secret_values()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let files = tempfile::Builder::new()
            .prefix("flotilla-git-auth-")
            .tempdir()?;
        if is_ssh_url(url) {
            let mut command = String::from("ssh -o BatchMode=yes");
            if let Some(key) = &credentials.ssh_private_key {
                let mut key = key.expose().to_owned();
                if !key.ends_with('\n') {
                    key.push('\n');
                }
                let path = files.path().join("key");
                private_file(&path, &key)?;
                command.push_str(&format!(" -o IdentitiesOnly=yes -i {}", quoted(&path)));
            }
            if credentials.insecure {
                command.push_str(" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null");
            } else {
                command.push_str(" -o StrictHostKeyChecking=yes");
                if let Some(known_hosts) = known_hosts {
                    command.push_str(&format!(" -o UserKnownHostsFile={}", quoted(known_hosts)));
                }
            }
            auth.env.push(("GIT_SSH_COMMAND".into(), command.into()));
        } else {
            if let (Some(origin), true) = (origin(url), credentials.has_credentials()) {
                let path = files.path().join("credentials");
                let answer = format!(
                    "username={}\npassword={}\n",
                    credentials.username.as_deref().unwrap_or_default(),
                    credentials
                        .password
                        .as_ref()
                        .map(|p| p.expose())
                        .unwrap_or_default()
                );
                private_file(&path, &answer)?;
                let helper = format!("!f() {{ test \"$1\" = get && cat {}; }}; f", quoted(&path));
                config.push((format!("credential.{origin}.helper"), helper));
            }
            if let (Some(origin), true) = (origin(url), credentials.force_http_basic_auth) {
                use base64::Engine as _;
                let basic = base64::engine::general_purpose::STANDARD.encode(format!(
                    "{}:{}",
                    credentials.username.as_deref().unwrap_or_default(),
                    credentials
                        .password
                        .as_ref()
                        .map(|p| p.expose())
                        .unwrap_or_default()
                ));
                auth.secrets.push(basic.clone());
                config.push((
                    format!("http.{origin}.extraHeader"),
                    format!("Authorization: Basic {basic}"),
                ));
            }
            if credentials.insecure {
                config.push(("http.sslVerify".into(), "false".into()));
            }
            if let Some(proxy) = &credentials.proxy {
                config.push(("http.proxy".into(), proxy.expose().to_owned()));
            }
            if let Some(no_proxy) = &credentials.no_proxy {
                for name in ["NO_PROXY", "no_proxy"] {
                    auth.env.push((name.into(), no_proxy.into()));
                }
            }
        }
        auth.set_config(&config);
        auth._files = Some(files);
        Ok(auth)
    }

    /// The variables to set for the run.
    #[must_use]
    pub fn env(&self) -> &[(String, OsString)] {
        &self.env
    }

    /// `text` (git's message) with every secret value replaced.
    #[must_use]
    pub fn scrub(&self, text: &str) -> String {
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        scrub(text, &secrets)
    }

    fn set_config(&mut self, config: &[(String, String)]) {
        self.env
            .push(("GIT_CONFIG_COUNT".into(), config.len().to_string().into()));
        for (index, (key, value)) in config.iter().enumerate() {
            self.env
                .push((format!("GIT_CONFIG_KEY_{index}"), key.into()));
            self.env
                .push((format!("GIT_CONFIG_VALUE_{index}"), value.into()));
        }
    }
}

/// `scheme://host[:port]` of an http(s) URL (user info dropped), the scope of the credential
/// helper: a redirect to another host is not given the password.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    Some(format!("{scheme}://{host}"))
}

/// Writes `content` to a new file at `path` readable only by its owner.
fn private_file(path: &Path, content: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(content.as_bytes())
}

/// `path` quoted for the shell git runs helpers and `GIT_SSH_COMMAND` with.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use flotilla_core::secrets::repository::Sensitive;

    fn value<'a>(auth: &'a GitAuth, name: &str) -> Option<&'a str> {
        auth.env
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.to_str())
    }

    fn config(auth: &GitAuth) -> Vec<(String, String)> {
        let count: usize = value(auth, "GIT_CONFIG_COUNT").unwrap().parse().unwrap();
        (0..count)
            .map(|i| {
                (
                    value(auth, &format!("GIT_CONFIG_KEY_{i}"))
                        .unwrap()
                        .to_owned(),
                    value(auth, &format!("GIT_CONFIG_VALUE_{i}"))
                        .unwrap()
                        .to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn https_credentials_are_answered_from_a_private_file_removed_afterwards() {
        let credentials = RepoCredentials {
            secret: "repo".into(),
            username: Some("deploy".into()),
            password: Some(Sensitive::new("s3cret")),
            insecure: true,
            proxy: Some(Sensitive::new("http://proxy:3128")),
            no_proxy: Some(".internal,10.0.0.1".into()),
            force_http_basic_auth: true,
            ..RepoCredentials::default()
        };
        let auth = GitAuth::new(
            "https://me@git.example.com:8443/acme/app.git",
            Some(&credentials),
            None,
        )
        .unwrap();
        let config = config(&auth);
        assert_eq!(config[0], ("credential.helper".into(), String::new()));
        assert_eq!(
            config[1].0,
            "credential.https://git.example.com:8443.helper"
        );
        assert_eq!(
            config[2],
            (
                "http.https://git.example.com:8443.extraHeader".into(),
                "Authorization: Basic ZGVwbG95OnMzY3JldA==".into()
            )
        );
        assert_eq!(auth.scrub("header ZGVwbG95OnMzY3JldA=="), "header ********");
        assert_eq!(config[3], ("http.sslVerify".into(), "false".into()));
        assert_eq!(config[4], ("http.proxy".into(), "http://proxy:3128".into()));
        assert_eq!(value(&auth, "NO_PROXY"), Some(".internal,10.0.0.1"));
        assert_eq!(value(&auth, "no_proxy"), Some(".internal,10.0.0.1"));
        let file = auth._files.as_ref().unwrap().path().join("credentials");
        assert!(config[1].1.contains(&file.display().to_string()));
        assert!(!config[1].1.contains("s3cret"));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "username=deploy\npassword=s3cret\n"
        );
        assert_eq!(file.metadata().unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(value(&auth, "GIT_TERMINAL_PROMPT"), Some("0"));
        assert_eq!(
            auth.scrub("fatal: s3cret via http://proxy:3128"),
            "fatal: ******** via ********"
        );
        drop(auth);
        assert!(!file.exists());
    }

    #[test]
    fn ssh_runs_with_a_private_key_file_and_checks_host_keys_unless_insecure() {
        let mut credentials = RepoCredentials {
            secret: "repo".into(),
            ssh_private_key: Some(Sensitive::new(
                "-----BEGIN KEY-----\nabc\n-----END KEY-----",
            )),
            ..RepoCredentials::default()
        };
        let known = Path::new("/etc/flotilla/known_hosts");
        let auth = GitAuth::new(
            "git@github.com:acme/app.git",
            Some(&credentials),
            Some(known),
        )
        .unwrap();
        let key = auth._files.as_ref().unwrap().path().join("key");
        assert_eq!(
            value(&auth, "GIT_SSH_COMMAND").unwrap(),
            format!(
                "ssh -o BatchMode=yes -o IdentitiesOnly=yes -i '{}' -o StrictHostKeyChecking=yes \
                 -o UserKnownHostsFile='/etc/flotilla/known_hosts'",
                key.display()
            )
        );
        assert!(
            std::fs::read_to_string(&key)
                .unwrap()
                .ends_with("-----END KEY-----\n")
        );
        assert_eq!(key.metadata().unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(config(&auth), [("credential.helper".into(), String::new())]);
        drop(auth);
        assert!(!key.exists());

        credentials.insecure = true;
        let auth = GitAuth::new("ssh://git@h:2222/x", Some(&credentials), Some(known)).unwrap();
        assert!(
            value(&auth, "GIT_SSH_COMMAND")
                .unwrap()
                .ends_with(" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null")
        );
    }

    #[test]
    fn anonymous_runs_never_prompt_nor_use_stored_credentials() {
        let auth = GitAuth::new("https://h/x", None, None).unwrap();
        assert!(auth._files.is_none());
        assert_eq!(config(&auth), [("credential.helper".into(), String::new())]);
        assert_eq!(value(&auth, "GIT_TERMINAL_PROMPT"), Some("0"));
        assert_eq!(
            origin("http://u:p@127.0.0.1:80/r?x"),
            Some("http://127.0.0.1:80".into())
        );
        assert_eq!(origin("git://h/x"), None);
    }
}
