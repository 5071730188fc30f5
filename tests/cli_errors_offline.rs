//! Clear errors from the real binary that need no cluster: a closed stdout, an unreadable input
//! file (exit code 2), an unreachable server named with its kubeconfig context; and bash completion.
//! The errors that need the API server are in cli_errors.rs.

mod cli_errors_support;
mod support;

use std::process::Stdio;

use cli_errors_support::{WEB_CONFIG, flotilla, manifests, text, unreachable_kubeconfig};

#[tokio::test]
async fn an_unreachable_server_is_named_with_its_kubeconfig_context() {
    let work = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = work.path().join("staging.kubeconfig");
    let port = unreachable_kubeconfig(&kubeconfig);
    let source = manifests("web", &[("config.yaml", WEB_CONFIG)]);

    let output = flotilla(
        [
            "sync",
            &source.dir.display().to_string(),
            "--namespace",
            "shop",
            "--kubeconfig",
            &kubeconfig.display().to_string(),
        ]
        .map(str::to_owned)
        .to_vec(),
    )
    .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let expected = format!(
        "error: cannot reach the Kubernetes API server https://127.0.0.1:{port}/ (kubeconfig context \"staging-admin\" of {}): ",
        kubeconfig.display()
    );
    assert!(
        stderr.starts_with(&expected) && stderr.lines().count() == 1,
        "{stderr}\n!~ {expected}"
    );
    assert!(stderr.contains("Connection refused"), "{stderr}");
}

/// `flotilla completion bash` is a script bash sources, whose function completes the
/// subcommands and their flags.
#[test]
fn bash_completes_subcommands_and_flags() {
    let script = std::process::Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .args(["completion", "bash"])
        .output()
        .expect("flotilla runs");
    assert!(script.status.success());
    let dir = tempfile::tempdir().expect("a directory");
    let file = dir.path().join("flotilla.bash");
    std::fs::write(&file, &script.stdout).expect("writes");
    let complete = |words: &str, cword: usize| {
        let (cur, prev) = {
            let split: Vec<&str> = words.split(' ').collect();
            (split[cword], split[cword - 1])
        };
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{words}'; \
             COMP_POINT=${{#COMP_LINE}}; _flotilla flotilla {cur} {prev}; echo \"${{COMPREPLY[*]}}\"",
            file.display()
        );
        let out = std::process::Command::new("bash")
            .args(["--norc", "-c", &program])
            .output()
            .expect("bash runs");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(complete("flotilla sim", 1), "simulate");
    assert!(complete("flotilla render --pro", 2).contains("--project"));
}

/// A file that is not what it must be is an input error: exit code 2, naming the file.
#[test]
fn an_unreadable_input_file_exits_with_2() {
    let dir = tempfile::tempdir().expect("a directory");
    let file = dir.path().join("appset.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nspec: {}\n",
    )
    .expect("writes");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .arg("render")
        .arg(&file)
        .output()
        .expect("flotilla runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("appset.yaml:4:7") && stderr.contains("missing field `generators`"),
        "{stderr}"
    );
}

/// An offline command whose reader goes away ends quietly (killed by SIGPIPE, as `head` expects
/// of a producer), not with a panic about printing to stdout.
#[test]
fn a_closed_stdout_ends_an_offline_command_quietly() {
    use std::os::unix::process::ExitStatusExt;

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .arg("crd")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("flotilla runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("flotilla ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A plugins directory with a file that is not a valid plugin stops any command before it
/// starts (exit code 2), naming the file and the field.
#[tokio::test]
async fn a_bad_plugin_file_is_named_with_its_field() {
    let plugins = tempfile::tempdir().expect("a plugins directory");
    let file = plugins.path().join("vault.yaml");
    std::fs::write(
        &file,
        "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata: {name: vault}\n\
         spec:\n  generate: {command: [avp, generate, ./]}\n  provideGitCreds: true\n",
    )
    .expect("writes");
    let output = flotilla(
        [
            "--plugins-dir",
            &plugins.path().display().to_string(),
            "version",
        ]
        .map(str::to_owned)
        .to_vec(),
    )
    .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim(),
        format!(
            "error: {}: ConfigManagementPlugin \"vault\": unsupported field spec.provideGitCreds: \
             Flotilla does not implement it (check the spelling, or remove it)",
            file.display()
        )
    );
}
