//! Helpers shared by tests/cli_errors.rs and tests/cli_errors_offline.rs.
// Each of the two test binaries compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::TestNamespace;

/// A manifest directory named `name` in a temporary directory (removed on drop), holding `files`
/// (file name, text).
pub struct Manifests {
    pub _work: tempfile::TempDir,
    pub dir: PathBuf,
}

pub fn manifests(name: &str, files: &[(&str, &str)]) -> Manifests {
    let work = tempfile::tempdir().expect("a temporary directory");
    let dir = work.path().join(name);
    std::fs::create_dir_all(&dir).expect("creating the manifest directory");
    for (file, text) in files {
        std::fs::write(dir.join(file), text).expect("writing a manifest");
    }
    Manifests { _work: work, dir }
}

/// Runs `flotilla ARGS...` to its end.
pub async fn flotilla(args: Vec<String>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_flotilla"));
    command.args(args).stdin(Stdio::null());
    tokio::task::spawn_blocking(move || command.output().expect("flotilla runs"))
        .await
        .expect("joined")
}

/// `flotilla sync DIR --namespace NS --kubeconfig <cluster 1> ARGS...`.
pub async fn sync(dir: &Path, ns: &TestNamespace, args: &[&str]) -> Output {
    let mut all = vec![
        "sync".to_owned(),
        dir.display().to_string(),
        "--namespace".to_owned(),
        ns.name.clone(),
        "--kubeconfig".to_owned(),
        crate::support::kubeconfig_path(1).display().to_string(),
    ];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    flotilla(all).await
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub const WEB_CONFIG: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: hello
";

/// A kubeconfig whose only context, `staging-admin` (the current one), names a server on a
/// closed loopback port; returns its port.
pub fn unreachable_kubeconfig(path: &Path) -> u16 {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    std::fs::write(
        path,
        format!(
            "\
apiVersion: v1
kind: Config
clusters:
- name: staging
  cluster:
    server: https://127.0.0.1:{port}
    insecure-skip-tls-verify: true
contexts:
- name: staging-admin
  context: {{cluster: staging, user: staging-admin}}
current-context: staging-admin
users:
- name: staging-admin
  user: {{token: not-a-real-token}}
"
        ),
    )
    .expect("writing the kubeconfig");
    port
}
