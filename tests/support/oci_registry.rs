//! An OCI registry on loopback: Debian's `docker-registry` (distribution 2.8.2, installed by
//! tests/tools/install.sh) started on a free port with a temporary configuration, its storage
//! in a temporary directory and HTTP basic auth from an htpasswd file (`htpasswd -B`), plain
//! HTTP; the fixture chart `db` pushed to it with the real `helm push`. Stopped when dropped.

use std::path::Path;
use std::process::{Command, Stdio};

use super::chart_repository::{helm, package_db, run};
use super::git_remote::{free_port, wait_for_port};
use super::server_process::ServerProcess;

/// A running registry holding `charts/db` at some versions.
pub struct OciRegistry {
    /// `127.0.0.1:PORT`.
    pub host: String,
    child: ServerProcess,
    _dir: tempfile::TempDir,
}

impl OciRegistry {
    /// A registry asking `username`/`password`, holding `oci://HOST/charts/db` at each of
    /// `versions`.
    pub fn start(versions: &[&str], username: &str, password: &str) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let htpasswd = Command::new("htpasswd")
            .args(["-Bbn", username, password])
            .output()
            .expect("htpasswd runs (apache2-utils, tests/tools/install.sh)");
        assert!(htpasswd.status.success(), "htpasswd: {htpasswd:?}");
        std::fs::write(dir.path().join("htpasswd"), &htpasswd.stdout).expect("writes htpasswd");
        let port = free_port();
        let host = format!("127.0.0.1:{port}");
        let config = format!(
            "version: 0.1\nlog: {{level: warn}}\n\
             storage: {{filesystem: {{rootdirectory: {root}}}}}\n\
             http: {{addr: '{host}'}}\n\
             auth: {{htpasswd: {{realm: flotilla-test, path: {htpasswd}}}}}\n",
            root = dir.path().join("data").display(),
            htpasswd = dir.path().join("htpasswd").display(),
        );
        let config_file = dir.path().join("config.yml");
        std::fs::write(&config_file, config).expect("writes the registry's configuration");
        let child = ServerProcess::spawn(
            Command::new("docker-registry")
                .arg("serve")
                .arg(&config_file)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .expect("docker-registry runs (tests/tools/install.sh installs it)");
        wait_for_port(port, "the OCI registry");
        let registry = Self {
            host,
            child,
            _dir: dir,
        };
        registry.push_db(versions, username, password);
        registry
    }

    /// `oci://HOST/charts`.
    pub fn url(&self) -> String {
        format!("oci://{}/charts", self.host)
    }

    /// Packages `db` at `versions` and pushes it, logged in from a HOME of its own.
    fn push_db(&self, versions: &[&str], username: &str, password: &str) {
        let work = tempfile::tempdir().expect("a temporary directory");
        let packaged = work.path().join("packaged");
        package_db(versions, &packaged);
        let home = work.path().join("home");
        std::fs::create_dir_all(&home).expect("a HOME");
        let with_home = |command: &mut Command| {
            command
                .env("HOME", &home)
                .env_remove("XDG_CONFIG_HOME")
                .env_remove("XDG_CACHE_HOME");
        };
        let mut login = helm();
        with_home(&mut login);
        login.args([
            "registry",
            "login",
            &self.host,
            "--username",
            username,
            "--password",
            password,
        ]);
        run(&mut login);
        for version in versions {
            let mut push = helm();
            with_home(&mut push);
            push.arg("push")
                .arg(Path::new(&packaged).join(format!("db-{version}.tgz")))
                .arg(self.url())
                .arg("--plain-http");
            run(&mut push);
        }
    }
}
