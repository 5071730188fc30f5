//! Argo CD's jsonnet guestbook, offline: `flotilla plan` renders it and names jsonnet's errors,
//! and a jsonnet file that never ends or grows without bound is stopped and named. Its deployment
//! through the controller is in argocd_migration.rs.

mod argocd_migration_support;
mod controller_support;
mod support;

use support::flotilla_offline as flotilla;

use std::path::Path;

use serde_json::{Value, json};

use argocd_migration_support::{fixtures, guestbook_directory};

/// An Argo CD Application file of `path` in `https://git.example/apps.git` with `directory`.
fn application_file(dir: &Path, path: &str, directory: &Value) -> String {
    let app = json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "guestbook"},
        "spec": {
            "project": "default",
            "source": {"repoURL": "https://git.example/apps.git", "targetRevision": "main",
                       "path": path, "directory": directory},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "prod"},
        }
    });
    let file = dir.join(format!("{}.yaml", path.replace('/', "-")));
    std::fs::write(&file, serde_json::to_string(&app).unwrap()).expect("writes the Application");
    file.display().to_string()
}

/// The objects of `flotilla plan -o json` as (kind, name, file).
fn planned(printed: &str) -> Vec<(String, String, String)> {
    let printed: Value = serde_json::from_str(printed).expect("json");
    printed["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .flat_map(|step| step["objects"].as_array().cloned().unwrap_or_default())
        .map(|o| {
            let text = |k: &str| o[k].as_str().unwrap_or_default().to_owned();
            (text("kind"), text("name"), text("file"))
        })
        .collect()
}

#[test]
fn flotilla_plan_renders_the_jsonnet_guestbook_and_names_jsonnet_errors() {
    let files = tempfile::tempdir().unwrap();
    let repo = format!("https://git.example/apps.git={}", fixtures().display());
    let app = application_file(files.path(), "guestbook", &guestbook_directory());
    let (ok, printed, stderr) = flotilla(&["plan", &app, "--repo", &repo, "-o", "json"]);
    assert!(ok, "{stderr}");
    assert_eq!(
        planned(&printed),
        [
            (
                "Service".into(),
                "guestbook-ui".into(),
                "guestbook-ui.jsonnet#0".into()
            ),
            (
                "Deployment".into(),
                "guestbook-ui".into(),
                "guestbook-ui.jsonnet#1".into()
            ),
        ]
    );

    // Without the external variable the file does not evaluate: the error names where.
    let bare = application_file(
        files.path(),
        "guestbook",
        &json!({"jsonnet": {"libs": ["lib"]}}),
    );
    let (ok, _, stderr) = flotilla(&["plan", &bare, "--repo", &repo]);
    assert!(!ok, "a missing extVar fails the plan");
    assert!(
        stderr.contains(
            "guestbook-ui.jsonnet: guestbook-ui.jsonnet:9: undefined external variable `image`"
        ),
        "{stderr}"
    );
    // Without `libs` the library is not found.
    let no_libs = application_file(files.path(), "guestbook", &json!({}));
    let (ok, _, stderr) = flotilla(&["plan", &no_libs, "--repo", &repo]);
    assert!(!ok);
    assert!(
        stderr.contains(r#"guestbook-ui.jsonnet:3: import "guestbook.libsonnet": no such file"#),
        "{stderr}"
    );

    // A syntax error and an import leaving the repository, in a repository written here.
    let written = tempfile::tempdir().unwrap();
    std::fs::write(written.path().join("secret.libsonnet"), "{ token: 'x' }").unwrap();
    let repository = written.path().join("repo");
    std::fs::create_dir_all(repository.join("broken")).unwrap();
    std::fs::create_dir_all(repository.join("escape")).unwrap();
    std::fs::write(
        repository.join("broken/app.jsonnet"),
        "{\n  apiVersion: 'v1',\n  kind: 'ConfigMap'\n  metadata: { name: 'x' },\n}\n",
    )
    .unwrap();
    std::fs::write(
        repository.join("escape/app.jsonnet"),
        "local secret = import '../../secret.libsonnet';\n{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: secret.token } }\n",
    )
    .unwrap();
    let repo = format!("https://git.example/apps.git={}", repository.display());
    let broken = application_file(files.path(), "broken", &json!({}));
    let (ok, _, stderr) = flotilla(&["plan", &broken, "--repo", &repo]);
    assert!(!ok);
    assert!(
        stderr.contains("app.jsonnet: app.jsonnet:4: syntax error"),
        "{stderr}"
    );
    let escape = application_file(files.path(), "escape", &json!({}));
    let (ok, _, stderr) = flotilla(&["plan", &escape, "--repo", &repo]);
    assert!(!ok);
    assert!(
        stderr.contains(
            r#"app.jsonnet: app.jsonnet:1: import "../../secret.libsonnet" is outside the repository; refused"#
        ),
        "{stderr}"
    );
}

#[test]
fn a_jsonnet_file_that_never_ends_or_grows_without_bound_is_stopped_and_named() {
    let files = tempfile::tempdir().unwrap();
    let repository = files.path().join("repo");
    let write = |path: &str, text: &str| {
        let file = repository.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    // 2^100 calls, never more than 100 deep: only time bounds it.
    write(
        "endless/app.jsonnet",
        "local fib(n) = if n < 2 then n else fib(n - 1) + fib(n - 2);\n\
         { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { n: '' + fib(100) } }\n",
    );
    // A string doubled until memory runs out (2^30 bytes 30 calls deep).
    write(
        "grows/app.jsonnet",
        "local grow(s) = if std.length(s) > 0 then grow(s + s) else s;\n\
         { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { s: grow('x') } }\n",
    );
    let repo = format!("https://git.example/apps.git={}", repository.display());

    let endless = application_file(files.path(), "endless", &json!({}));
    let (ok, _, stderr) = flotilla(&["plan", &endless, "--repo", &repo, "--exec-timeout", "2s"]);
    assert!(!ok, "an endless evaluation fails the plan");
    assert!(
        stderr.contains(
            "app.jsonnet: the evaluation did not finish within 2s (the exec timeout: \
             --exec-timeout, ARGOCD_EXEC_TIMEOUT) and was stopped"
        ),
        "{stderr}"
    );

    let grows = application_file(files.path(), "grows", &json!({}));
    let (ok, _, stderr) = flotilla(&[
        "plan",
        &grows,
        "--repo",
        &repo,
        "--jsonnet-memory-mib",
        "64",
    ]);
    assert!(!ok, "an evaluation out of memory fails the plan");
    assert!(
        stderr.contains(
            "app.jsonnet: the evaluation needed more than 64 MiB of memory \
             (--jsonnet-memory-mib) and was stopped"
        ),
        "{stderr}"
    );
}
