//! Repositories served over ssh as a git host serves them: an OpenSSH server (`/usr/sbin/sshd`,
//! installed by `tests/tools/install.sh`) started on a loopback port with its own host key,
//! configuration and authorized key in a temporary directory; `git-upload-pack` runs as the
//! test's user for `ssh://USER@127.0.0.1:PORT/<bare repository path>`. Keys are made by
//! `ssh-keygen`. Stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::git_remote::{free_port, wait_for_port};
use super::server_process::ServerProcess;

/// The directory sshd needs for privilege separation (compiled into Debian's sshd).
const PRIVSEP_DIR: &str = "/run/sshd";

/// A new ed25519 key pair under `dir` called `name`: returns the private key's text.
pub fn new_key(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&path)
        .output()
        .expect("ssh-keygen runs");
    assert!(
        out.status.success(),
        "ssh-keygen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&path).expect("reads the private key")
}

/// An sshd on loopback accepting one generated key for the test's user.
pub struct GitSsh {
    child: ServerProcess,
    dir: tempfile::TempDir,
    port: u16,
    user: String,
    key: String,
}

impl GitSsh {
    /// Starts sshd (fails the test, saying why, when it cannot run).
    pub fn start() -> Self {
        let sshd = Path::new("/usr/sbin/sshd");
        assert!(
            sshd.is_file(),
            "{} is missing: run tests/tools/install.sh (Debian's openssh-server)",
            sshd.display()
        );
        if !Path::new(PRIVSEP_DIR).is_dir() {
            // /run is emptied at boot; sshd refuses to start without it.
            std::fs::create_dir_all(PRIVSEP_DIR).unwrap_or_else(|error| {
                panic!("sshd needs {PRIVSEP_DIR}, which cannot be created: {error}")
            });
        }
        let dir = tempfile::tempdir().expect("a directory for sshd");
        new_key(dir.path(), "host");
        let key = new_key(dir.path(), "client");
        let port = free_port();
        let config = dir.path().join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "ListenAddress 127.0.0.1\nPort {port}\nHostKey {host}\nPidFile none\n\
                 AuthorizedKeysFile {authorized}\nPermitRootLogin prohibit-password\n\
                 StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 UsePAM no\n",
                host = dir.path().join("host").display(),
                authorized = dir.path().join("client.pub").display(),
            ),
        )
        .expect("writes sshd_config");
        let log = std::fs::File::create(dir.path().join("sshd.log")).expect("creates the log");
        let child = ServerProcess::spawn(
            Command::new(sshd)
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log),
        )
        .expect("starts sshd");
        let mut server = Self {
            child,
            dir,
            port,
            user: current_user(),
            key,
        };
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("sshd exited ({status}): {}", server.log());
        }
        wait_for_port(port, "sshd");
        server
    }

    /// `ssh://USER@HOST:PORT/<bare>`, `host` being `127.0.0.1` or `localhost`.
    pub fn url(&self, host: &str, bare: &Path) -> String {
        format!("ssh://{}@{host}:{}{}", self.user, self.port, bare.display())
    }

    /// The private key sshd accepts.
    pub fn authorized_key(&self) -> &str {
        &self.key
    }

    /// A known-hosts file naming this server's host key for `127.0.0.1` (not `localhost`).
    pub fn known_hosts(&self) -> PathBuf {
        let public =
            std::fs::read_to_string(self.dir.path().join("host.pub")).expect("reads the host key");
        let key: Vec<&str> = public.split_whitespace().take(2).collect();
        let path = self.dir.path().join("known_hosts");
        std::fs::write(
            &path,
            format!("[127.0.0.1]:{} {}\n", self.port, key.join(" ")),
        )
        .expect("writes known_hosts");
        path
    }

    /// What sshd logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

/// The name of the user the test runs as.
fn current_user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id runs");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
