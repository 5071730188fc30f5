//! A real SMTP server on loopback for the notification tests: Debian's aiosmtpd (installed by
//! `tests/tools/install-servers.sh`) run as `/usr/bin/python3 -m aiosmtpd` (Debian's Python, whatever else is first on the PATH), delivering every message it
//! accepts into a Maildir; stopped when dropped.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// An SMTP server and the Maildir it delivers to.
pub struct SmtpServer {
    pub port: u16,
    maildir: tempfile::TempDir,
    child: Child,
}

impl SmtpServer {
    /// Starts it on a free loopback port and waits until it accepts connections.
    pub fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let maildir = tempfile::tempdir().expect("a temporary directory");
        let child = Command::new("/usr/bin/python3")
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(maildir.path().join("mail"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m aiosmtpd runs (tests/tools/install-servers.sh installs it)");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "aiosmtpd never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            port,
            maildir,
            child,
        }
    }

    /// The messages delivered so far, as their text.
    pub fn messages(&self) -> Vec<String> {
        let new: PathBuf = self.maildir.path().join("mail").join("new");
        let mut found: Vec<String> = std::fs::read_dir(new)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        found
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
