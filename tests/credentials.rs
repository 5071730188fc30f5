//! Credentials on the real control plane, with `flotilla controller` run as users run it (its
//! standard error captured at debug level): a private repository served over `http://` by
//! `git http-backend` behind a loopback server that checks the password, read through a
//! `repository` Secret by a git generator and by the Applications it makes; a `repo-creds`
//! Secret with a wrong password gives a clear error naming the repository; neither password
//! appears in the log, a status or an Event, and no credential file is left behind. The
//! Secret's `noProxy` bypasses an absent `proxy`; a host answering 404 without the password is
//! read with `forceHttpBasicAuth` by an Application of the Secret's `project`, not by one of
//! another, and likewise by the git generator of an ApplicationSet whose template names that
//! project, not by one whose template names another. A cluster Secret whose `execProviderConfig` runs a script printing a token reaches cluster 2 with it;
//! one with `awsAuthConfig` and no `aws` on PATH is refused naming the cluster. A Helm chart
//! repository behind basic auth is read with a `type: helm` Secret (real `helm`). Over ssh, an
//! `sshd` on loopback serves bare repositories: a Secret's `sshPrivateKey` reads one whose host
//! key the controller's `--ssh-known-hosts` lists, `insecure: "true"` one it does not; a wrong key
//! and an unknown host give clear errors naming the repository; the key is never shown. A
//! two-step RollingSync whose repository only a project-scoped Secret reads resolves its
//! revision with that Secret and rolls out both steps in order.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::api::{Application, ApplicationSet};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use serde_json::{Value, json};

use flotilla::cluster::watches::watched_secrets::WatchedSecrets;
use flotilla::repo::LocalRepos;
use flotilla::repo::cache::RepoCache;
use support::chart_repository::ChartRepository;
use support::git_remote::{GitHttp, Remote};
use support::git_ssh::{self, GitSsh};
use support::two_tier_appset::{rolled_out, two_tier_appset};
use support::{TestNamespace, apply, eventually, everything_written, object, wait_until};

const PASSWORD: &str = "pw-Zq8f3Lr2Xv";
const WRONG_PASSWORD: &str = "pw-wrong-K7m2Qa";

/// `flotilla controller` for one namespace, its stderr in a file, its temporary files in a
/// directory of its own; killed when dropped.
struct Controller {
    child: Child,
    log: PathBuf,
    temporary: tempfile::TempDir,
    _cache: tempfile::TempDir,
}

impl Controller {
    /// Starts it with `PATH` set to `path` and `extra` arguments.
    fn start(ns: &TestNamespace, path: &str, extra: &[&std::ffi::OsStr]) -> Self {
        let temporary = tempfile::tempdir().expect("a temporary directory");
        let cache = tempfile::tempdir().expect("a repository cache");
        let log = temporary.path().join("controller.log");
        let stderr = std::fs::File::create(&log).expect("creates the log");
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args(["controller", "--namespace", &ns.name, "--identity", "only"])
            .args(["--app-resync", "2s", "--repo-refresh", "0s", "--repo-cache"])
            .arg(cache.path())
            .arg("--kubeconfig")
            .arg(support::kubeconfig_path(1))
            .args(extra)
            .env("RUST_LOG", "debug")
            .env("NO_COLOR", "1")
            .env("PATH", path)
            .env("TMPDIR", temporary.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("starts flotilla controller");
        Self {
            child,
            log,
            temporary,
            _cache: cache,
        }
    }

    /// Stops it (SIGTERM) and returns what it logged.
    fn stop(&mut self) -> String {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: signalling a child process this test started and has not reaped.
        #[allow(unsafe_code, reason = "a SIGTERM is only sent through kill(2)")]
        unsafe {
            libc::kill(pid, libc::SIGTERM)
        };
        let _ = self.child.wait();
        std::fs::read_to_string(&self.log).expect("reads the controller's log")
    }

    /// The credential directories git runs left in its temporary directory.
    fn credential_files_left(&self) -> Vec<String> {
        std::fs::read_dir(self.temporary.path())
            .expect("lists the temporary directory")
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("flotilla-git-auth-"))
            .collect()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Its log goes with its temporary directory: a failed test prints the end of it.
        support::print_log_tail_if_panicking(&self.log, 120);
    }
}

/// `PATH` without the directories holding `program`.
fn path_without(program: &str) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| !dir.join(program).exists())
        .collect();
    std::env::join_paths(kept)
        .expect("a PATH")
        .to_string_lossy()
        .into_owned()
}

/// A credentials Secret of `kind` (`repository` or `repo-creds`).
fn credentials_secret(name: &str, kind: &str, url: &str, password: &str) -> Secret {
    object(json!({
        "metadata": {"name": name, "labels": {"argocd.argoproj.io/secret-type": kind}},
        "stringData": {"url": url, "username": "deploy", "password": password}
    }))
}

/// The messages of an Application's conditions.
fn conditions(app: &Application) -> String {
    app.status
        .as_ref()
        .map(|status| {
            status
                .conditions
                .iter()
                .map(|c| c.message.clone())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_private_repository_is_read_with_its_secret_and_its_password_is_never_shown() {
    let ns = support::namespace(1, "credentials-http").await;
    support::install_flotilla_crds(&ns.client).await;
    let private = Remote::new("private");
    for name in ["web", "api"] {
        private.write(
            &format!("apps/{name}/cm.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\n  \
                 namespace: {}\ndata:\n  from: private\n",
                ns.name
            ),
        );
    }
    let commit = private.push("two apps");
    let locked = Remote::new("locked");
    locked.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: locked\n",
    );
    locked.push("locked");
    let hidden = Remote::new("hidden");
    hidden.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hidden\ndata:\n  from: hidden\n",
    );
    hidden.push("hidden");
    let server = GitHttp::start_with_password(private.exported(), "deploy", PASSWORD);
    let other = GitHttp::start_with_password(locked.exported(), "deploy", "the-right-one");
    let quiet = GitHttp::start_unchallenged(hidden.exported(), "deploy", PASSWORD);
    let url = server.url(&private.served_name());
    let locked_url = other.url(&locked.served_name());
    let hidden_url = quiet.url(&hidden.served_name());

    // Without credentials the server refuses: the password is needed.
    let anonymous = Command::new("git")
        .args(["ls-remote", &url])
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("git runs");
    assert!(
        !anonymous.status.success(),
        "the server checks the password"
    );
    let unchallenged = Command::new("git")
        .args(["ls-remote", &hidden_url.replace("://", "://deploy:pw@")])
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("git runs");
    let refused = String::from_utf8_lossy(&unchallenged.stderr);
    assert!(
        refused.contains("not found"),
        "git waits for a challenge: {refused}"
    );
    let secrets = ns.api::<Secret>();
    // Through a proxy that is not there, except for the repository's host (noProxy).
    let mut private_secret = credentials_secret("private-repo", "repository", &url, PASSWORD);
    let data = private_secret.string_data.get_or_insert_default();
    data.insert("proxy".into(), "http://127.0.0.1:9".into());
    data.insert("noProxy".into(), "127.0.0.1".into());
    apply(&secrets, &private_secret).await;
    // The password sent up front, for Applications of project `default` only.
    let mut hidden_secret = credentials_secret("hidden-repo", "repository", &hidden_url, PASSWORD);
    let data = hidden_secret.string_data.get_or_insert_default();
    data.insert("forceHttpBasicAuth".into(), "true".into());
    data.insert("project".into(), "default".into());
    apply(&secrets, &hidden_secret).await;
    support::permissive_project(&ns, "other").await;
    // A template for every repository of the other server, with a wrong password.
    let prefix = locked_url
        .trim_end_matches(&locked.served_name())
        .to_owned();
    apply(
        &secrets,
        &credentials_secret("other-host", "repo-creds", &prefix, WRONG_PASSWORD),
    )
    .await;

    let mut controller = Controller::start(&ns, &std::env::var("PATH").unwrap_or_default(), &[]);
    let appset: ApplicationSet = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "private-apps"},
        "spec": {
            "generators": [{"git": {"repoURL": url, "revision": "main", "directories": [{"path": "apps/*"}]}}],
            "template": {
                "metadata": {"name": "{{path.basename}}"},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": url, "targetRevision": "main", "path": "{{path}}"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
                    "syncPolicy": {"automated": {}}
                }
            }
        }
    }));
    apply(&ns.api::<ApplicationSet>(), &appset).await;
    let locked_app: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "locked"},
        "spec": {
            "project": "default",
            "source": {"repoURL": locked_url, "targetRevision": "main", "path": "."},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "syncPolicy": {"automated": {}}
        }
    }));
    apply(&ns.api::<Application>(), &locked_app).await;
    let apps = ns.api::<Application>();
    for (name, project) in [("hidden", "default"), ("hidden-other", "other")] {
        let mut app = git_application(name, &hidden_url, ".", &ns.name);
        app.spec.project = project.to_owned();
        apply(&apps, &app).await;
        // A git generator over the same repository, its template naming the same project.
        let generated: ApplicationSet = object(json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "ApplicationSet",
            "metadata": {"name": format!("{name}-apps")},
            "spec": {
                "generators": [{"git": {"repoURL": hidden_url, "revision": "main", "files": [{"path": "cm.yaml"}]}}],
                "template": {
                    "metadata": {"name": format!("{name}-{{{{metadata.name}}}}")},
                    "spec": {
                        "project": project,
                        "source": {"repoURL": hidden_url, "targetRevision": "main", "path": "."},
                        "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name}
                    }
                }
            }
        }));
        apply(&ns.api::<ApplicationSet>(), &generated).await;
    }

    // The git generator read the private repository, and each Application synced from it.
    for name in ["web", "api"] {
        synced_at(&apps, name, &commit).await;
    }
    let config_maps = ns.api::<ConfigMap>();
    let web = config_maps
        .get("web-config")
        .await
        .expect("web's ConfigMap");
    assert_eq!(web.data.unwrap()["from"], "private");
    // Project default's Secret sends the password up front; project other has none.
    wait_until(&apps, "hidden", "hidden Synced", |app| {
        let sync = app.status.as_ref().and_then(|s| s.sync.clone());
        sync.is_some_and(|s| s.status == SyncStatusCode::Synced)
    })
    .await;
    let unscoped = wait_until(&apps, "hidden-other", "hidden-other refused", |app| {
        conditions(app).contains(&format!("repository {hidden_url}"))
    })
    .await;
    let message = conditions(&unscoped);
    assert!(message.contains("not found"), "{message}");
    assert!(!message.contains("hidden-repo"), "{message}");
    // The generator of project default's template read it; the other's could not.
    wait_until(
        &apps,
        "hidden-hidden",
        "the Application hidden-apps generates",
        |_| true,
    )
    .await;
    let appsets = ns.api::<ApplicationSet>();
    let refused = wait_until(
        &appsets,
        "hidden-other-apps",
        "its generator refused",
        |appset| {
            serde_json::to_string(&appset.status).is_ok_and(|status| status.contains(&hidden_url))
        },
    )
    .await;
    let status = serde_json::to_string(&refused.status).expect("serialises");
    assert!(status.contains("not found"), "{status}");
    assert!(
        apps.get_opt("hidden-other-hidden")
            .await
            .expect("reads")
            .is_none()
    );

    // The wrong password: a clear error naming the repository and the Secret.
    refused_naming(
        &apps,
        "locked",
        "Authentication failed",
        &[
            &format!("repository {locked_url}"),
            "credentials of Secret other-host",
        ],
    )
    .await;
    assert!(
        config_maps
            .get_opt("locked")
            .await
            .expect("reads")
            .is_none(),
        "nothing synced from a repository it cannot read"
    );

    let written = everything_written(&ns).await;
    let log = controller.stop();
    assert!(
        log.contains(&locked_url),
        "the log is the controller's: {log}"
    );
    for secret in [PASSWORD, WRONG_PASSWORD] {
        assert!(
            !written.contains(secret),
            "a status or Event shows a password"
        );
        assert!(!log.contains(secret), "the controller logged a password");
    }
    assert_eq!(controller.credential_files_left(), Vec::<String>::new());
}

#[tokio::test]
async fn a_rolling_sync_resolves_its_sources_with_the_projects_secret() {
    let ns = support::namespace(1, "credentials-rollout").await;
    support::install_flotilla_crds(&ns.client).await;
    let private = Remote::new("rollout");
    for name in ["database", "backend"] {
        private.write(
            &format!("apps/{name}/cm.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\n"),
        );
    }
    let commit = private.push("two tiers");
    let server = GitHttp::start_with_password(private.exported(), "deploy", PASSWORD);
    let url = server.url(&private.served_name());
    // The only Secret of the repository serves project team alone.
    let mut secret = credentials_secret("team-repo", "repository", &url, PASSWORD);
    let data = secret.string_data.get_or_insert_default();
    data.insert("project".into(), "team".into());
    apply(&ns.api::<Secret>(), &secret).await;
    support::permissive_project(&ns, "team").await;
    let mut appset = two_tier_appset(
        "tiers",
        &ns.name,
        "source",
        json!({"repoURL": url, "targetRevision": "main", "path": "apps/{{.component}}"}),
    );
    appset["spec"]["template"]["spec"]["project"] = json!("team");
    apply(
        &ns.api::<ApplicationSet>(),
        &object::<ApplicationSet>(appset),
    )
    .await;
    let mut controller = Controller::start(&ns, &std::env::var("PATH").unwrap_or_default(), &[]);

    let appsets = ns.api::<ApplicationSet>();
    let apps = ns.api::<Application>();
    let started = rolled_out(
        &appsets,
        &apps,
        "tiers",
        std::slice::from_ref(&commit),
        support::TIMEOUT,
        |name, status| {
            let sync = status.sync.unwrap_or_default();
            if sync.status != SyncStatusCode::Synced || sync.revision != commit {
                return Err(format!("{name}: {sync:?}"));
            }
            let operation = status
                .operation_state
                .ok_or(format!("{name} never synced"))?;
            let finished = operation.finished_at.ok_or("not finished")?.0;
            Ok((operation.started_at.ok_or("no start time")?.0, finished))
        },
    )
    .await;
    let [(_, database_done), (backend_started, _)] = started[..] else {
        panic!("two Applications")
    };
    assert!(
        database_done <= backend_started,
        "step 2 (backend) started after step 1 (database) finished: {started:?}"
    );
    for name in ["database", "backend"] {
        ns.api::<ConfigMap>()
            .get(&format!("{name}-config"))
            .await
            .expect("synced from the private repository");
    }
    let log = controller.stop();
    assert!(
        !log.contains(PASSWORD),
        "the controller logged the password"
    );
}

/// A `repository` Secret for `url` with an ssh key, `insecure` when asked.
fn ssh_secret(name: &str, url: &str, key: &str, insecure: bool) -> Secret {
    let mut data = json!({"url": url, "sshPrivateKey": key});
    if insecure {
        data["insecure"] = json!("true");
    }
    object(json!({
        "metadata": {"name": name, "labels": {"argocd.argoproj.io/secret-type": "repository"}},
        "stringData": data
    }))
}

/// An automated Application of `path` in the git repository `url`, deployed to `namespace`.
fn git_application(name: &str, url: &str, path: &str, namespace: &str) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": "default",
            "source": {"repoURL": url, "targetRevision": "main", "path": path},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            "syncPolicy": {"automated": {}}
        }
    }))
}

#[tokio::test]
async fn a_repository_over_ssh_is_read_with_its_key_and_the_key_is_never_shown() {
    let ns = support::namespace(1, "credentials-ssh").await;
    support::install_flotilla_crds(&ns.client).await;
    let fleet = Remote::new("fleet");
    for name in ["checked", "unchecked"] {
        fleet.write(
            &format!("{name}/cm.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  over: ssh\n"
            ),
        );
    }
    let commit = fleet.push("two apps");
    let other = Remote::new("other");
    other.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
    );
    other.push("other");
    let sshd = GitSsh::start();
    let keys = tempfile::tempdir().expect("a directory for keys");
    let key = sshd.authorized_key().to_owned();
    let wrong_key = git_ssh::new_key(keys.path(), "wrong");
    // 127.0.0.1 is in the known-hosts file, localhost is not.
    let checked_url = sshd.url("127.0.0.1", &fleet.bare());
    let unchecked_url = sshd.url("localhost", &fleet.bare());
    let denied_url = sshd.url("127.0.0.1", &other.bare());
    let unknown_url = sshd.url("localhost", &other.bare());
    let secrets = ns.api::<Secret>();
    for secret in [
        ssh_secret("ssh-checked", &checked_url, &key, false),
        ssh_secret("ssh-unchecked", &unchecked_url, &key, true),
        ssh_secret("ssh-denied", &denied_url, &wrong_key, false),
        ssh_secret("ssh-unknown", &unknown_url, &key, false),
    ] {
        apply(&secrets, &secret).await;
    }

    let known_hosts = sshd.known_hosts();
    let mut controller = Controller::start(
        &ns,
        &std::env::var("PATH").unwrap_or_default(),
        &["--ssh-known-hosts".as_ref(), known_hosts.as_os_str()],
    );
    let apps = ns.api::<Application>();
    for app in [
        git_application("checked", &checked_url, "checked", &ns.name),
        git_application("unchecked", &unchecked_url, "unchecked", &ns.name),
        git_application("denied", &denied_url, ".", &ns.name),
        git_application("unknown", &unknown_url, ".", &ns.name),
    ] {
        apply(&apps, &app).await;
    }

    for name in ["checked", "unchecked"] {
        synced_at(&apps, name, &commit).await;
        let written = ns
            .api::<ConfigMap>()
            .get(name)
            .await
            .expect("its ConfigMap");
        assert_eq!(written.data.unwrap()["over"], "ssh");
    }
    refused_naming(
        &apps,
        "denied",
        "Permission denied (publickey)",
        &[
            &format!("repository {denied_url}"),
            "credentials of Secret ssh-denied",
        ],
    )
    .await;
    refused_naming(
        &apps,
        "unknown",
        "Host key verification failed",
        &[&format!("repository {unknown_url}")],
    )
    .await;
    assert!(
        ns.api::<ConfigMap>()
            .get_opt("other")
            .await
            .expect("reads")
            .is_none(),
        "nothing synced from a repository it cannot read"
    );

    let written = everything_written(&ns).await;
    let log = controller.stop();
    assert!(
        log.contains(&denied_url),
        "the log is the controller's: {log}"
    );
    let key_lines = [&key, &wrong_key]
        .into_iter()
        .flat_map(|key| key.lines())
        .filter(|line| !line.starts_with("-----"));
    for line in key_lines {
        assert!(
            !written.contains(line),
            "a status or Event shows a private key"
        );
        assert!(!log.contains(line), "the controller logged a private key");
    }
    assert_eq!(controller.credential_files_left(), Vec::<String>::new());
    assert!(sshd.log().contains("Accepted publickey"), "{}", sshd.log());
}

/// A cluster Secret registering `server` as `name` with `config`.
fn cluster_secret(name: &str, server: &str, config: &Value) -> Secret {
    object(json!({
        "metadata": {"name": format!("cluster-{name}"), "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": name, "server": server, "config": config.to_string()}
    }))
}

/// An Application syncing `repo` to `namespace` of the cluster called `cluster`.
fn application(name: &str, repo: &Path, cluster: &str, namespace: &str) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": "default",
            "source": {"repoURL": format!("file://{}", repo.display()), "path": "."},
            "destination": {"name": cluster, "namespace": namespace},
            "syncPolicy": {"automated": {}}
        }
    }))
}

#[tokio::test]
async fn an_exec_provider_reaches_the_cluster_with_its_token_and_aws_without_aws_is_refused() {
    let ns = support::namespace(1, "credentials-exec").await;
    support::install_flotilla_crds(&ns.client).await;
    let remote = support::namespace(2, "credentials-exec-target").await;
    let (server, ca, token) = support::cluster_credentials(2);
    let scripts = tempfile::tempdir().expect("a directory for the plugin");
    let plugin = scripts.path().join("token-plugin");
    let calls = scripts.path().join("calls");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\necho \"$1 $PLUGIN_MODE\" >> \"$CALLS\"\n\
             printf '{{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\
             \"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{token}\"}}}}'\n"
        ),
    )
    .expect("writes the plugin");
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("makes the plugin executable");
    let exec = json!({
        "execProviderConfig": {
            "command": plugin.display().to_string(),
            "args": ["get-token"],
            "env": {"CALLS": calls.display().to_string(), "PLUGIN_MODE": "exec"},
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "installHint": "the test writes token-plugin"
        },
        "tlsClientConfig": {"caData": ca}
    });
    let aws = json!({"awsAuthConfig": {"clusterName": "prod"}, "tlsClientConfig": {"caData": ca}});
    let secrets = ns.api::<Secret>();
    apply(&secrets, &cluster_secret("through-exec", &server, &exec)).await;
    // The same API server under another address, so the two registrations differ.
    let other_address = server.replace("127.0.0.1", "localhost");
    apply(
        &secrets,
        &cluster_secret("through-aws", &other_address, &aws),
    )
    .await;

    let repo = tempfile::tempdir().expect("a repository");
    support::git_remote::git(repo.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(
        repo.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: via-exec\ndata:\n  ok: \"yes\"\n",
    )
    .expect("writes a manifest");
    support::git_remote::git(repo.path(), &["add", "-A"]);
    support::git_remote::git(repo.path(), &["commit", "-q", "-m", "one"]);

    let mut controller = Controller::start(&ns, &path_without("aws"), &[]);
    let apps = ns.api::<Application>();
    apply(
        &apps,
        &application("via-exec", repo.path(), "through-exec", &remote.name),
    )
    .await;
    apply(
        &apps,
        &application("via-aws", repo.path(), "through-aws", &remote.name),
    )
    .await;

    let on_cluster2: Api<ConfigMap> = Api::namespaced(remote.client.clone(), &remote.name);
    let written = eventually("the ConfigMap written to cluster 2", async || {
        on_cluster2
            .get_opt("via-exec")
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "not yet".to_owned())
    })
    .await;
    assert_eq!(written.data.unwrap()["ok"], "yes");
    let called = std::fs::read_to_string(&calls).expect("the plugin ran");
    assert!(called.lines().all(|l| l == "get-token exec"), "{called}");

    let refused = wait_until(&apps, "via-aws", "awsAuthConfig refused", |app| {
        conditions(app).contains("awsAuthConfig")
    })
    .await;
    let message = conditions(&refused);
    assert!(
        message.contains(&format!("cluster {other_address}")),
        "{message}"
    );
    assert!(
        message.contains("aws command (AWS CLI), which is not on PATH"),
        "{message}"
    );
    let log = controller.stop();
    assert!(
        !log.contains(&token),
        "the controller logged the plugin's token"
    );
}

#[tokio::test]
async fn a_chart_repository_with_a_password_is_read_with_its_helm_secret() {
    let ns = support::namespace(1, "credentials-helm").await;
    let charts = ChartRepository::start_with_password(&["0.1.0", "0.2.0"], "deploy", PASSWORD);
    let url = charts.server.url();
    let helm_secret = |name: &str, url: &str, password: &str| -> Secret {
        object(json!({
            "metadata": {"name": name, "labels": {"argocd.argoproj.io/secret-type": "repository"}},
            "stringData": {"type": "helm", "url": url, "username": "deploy", "password": password}
        }))
    };
    let secrets = ns.api::<Secret>();
    apply(&secrets, &helm_secret("charts", &url, PASSWORD)).await;
    // The same server under another name, with a wrong password.
    let wrong_url = url.replace("127.0.0.1", "localhost");
    apply(
        &secrets,
        &helm_secret("charts-wrong", &wrong_url, WRONG_PASSWORD),
    )
    .await;

    let cache = tempfile::tempdir().expect("a cache");
    let credentials = WatchedSecrets::repository_credentials(ns.client.clone(), &ns.name);
    let repos = Arc::new(
        RepoCache::new(cache.path(), LocalRepos::default(), Default::default())
            .with_credentials(Arc::new(credentials), None),
    );
    let anonymous = Arc::new(RepoCache::new(
        cache.path().join("anonymous"),
        LocalRepos::default(),
        Default::default(),
    ));
    let pull = |repos: &Arc<RepoCache>, url: &str| {
        let (repos, url) = (Arc::clone(repos), url.to_owned());
        tokio::task::spawn_blocking(move || {
            repos
                .chart(&url, "db", "~0.1", None, false)
                .map_err(|error| error.to_string())
        })
    };
    let pulled = pull(&repos, &url)
        .await
        .expect("joined")
        .expect("pulled with the Secret");
    assert_eq!(pulled.revision.as_deref(), Some("0.1.0"));
    assert!(pulled.root.join("Chart.yaml").is_file());

    let refused = pull(&anonymous, &url).await.expect("joined").unwrap_err();
    assert!(
        refused.contains("401"),
        "the server checks the password: {refused}"
    );
    let wrong = pull(&repos, &wrong_url).await.expect("joined").unwrap_err();
    assert!(
        wrong.starts_with(&format!("chart repository {wrong_url}: ")),
        "{wrong}"
    );
    assert!(wrong.contains("401"), "{wrong}");
    assert!(
        wrong.contains("--password-stdin"),
        "the command line shows how: {wrong}"
    );
    assert!(!wrong.contains(WRONG_PASSWORD), "{wrong}");
}

/// Waits until Application `name` is Synced at `commit`.
async fn synced_at(apps: &Api<Application>, name: &str, commit: &str) {
    wait_until(apps, name, &format!("{name} Synced at {commit}"), |app| {
        let sync = app.status.as_ref().and_then(|s| s.sync.clone());
        sync.is_some_and(|s| s.status == SyncStatusCode::Synced && s.revision == commit)
    })
    .await;
}

/// Waits until Application `name`'s conditions say `symptom`, and checks that they also name
/// each of `naming` (the repository, the Secret).
async fn refused_naming(apps: &Api<Application>, name: &str, symptom: &str, naming: &[&str]) {
    let refused = wait_until(apps, name, symptom, |app| conditions(app).contains(symptom)).await;
    let message = conditions(&refused);
    for named in naming {
        assert!(message.contains(named), "{named}: {message}");
    }
}
