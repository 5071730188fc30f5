//! `--project FILE` on the command line: `flotilla plan` names the objects a project refuses,
//! and `flotilla sync` (on the real control plane) fails before its first write, as the
//! controller does — the same check, from a project file in Argo CD's YAML.
//! An Application file synced with `--project` is refused in a deny window of that project
//! unless the window has `manualSync`, as Argo CD refuses a manual sync.
//! (Feature `controlplane`; `flotilla plan` with a project runs offline, in cli_projects_offline.rs.)

mod cli_projects_support;
mod support;
mod sync_support;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use sync_support::{sync, sync_command};

use cli_projects_support::{inputs, project_file};

#[tokio::test]
async fn sync_fails_before_its_first_write_when_the_project_refuses_an_object() {
    let ns = support::namespace(1, "cli-projects").await;
    let dir = inputs(&ns.name);
    let project = project_file(dir.path());
    let run = sync(
        &dir.path().join("app.yaml"),
        &ns.name,
        &["--project", &project],
    )
    .await;
    run.assert_failed_with(&format!(
        "nothing was written: project \"default\" does not permit ClusterRole {}-reader",
        ns.name
    ));
    let maps: Api<ConfigMap> = ns.api();
    let settings = format!("{}-settings", ns.name);
    assert!(maps.get_opt(&settings).await.expect("reads").is_none());
    sync(&dir.path().join("app.yaml"), &ns.name, &[])
        .await
        .assert_succeeded();
    assert!(maps.get_opt(&settings).await.expect("reads").is_some());
}

/// An Application file (Argo CD's YAML) of the directory `manifests` of `dir`, and the project
/// `windows.yaml` whose deny window is open at every minute, `manualSync` as given.
fn windowed_inputs(prefix: &str, manual_sync: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a directory");
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).expect("a directory");
        std::fs::write(path, text).expect("writes");
    };
    write(
        "repo/manifests/cm.yaml",
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {prefix}-windowed}}\ndata: {{k: v}}\n"
        ),
    );
    write(
        "app.yaml",
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {{name: {prefix}, namespace: argocd}}\n\
             spec:\n  project: frozen\n  source: {{repoURL: 'https://git.example/app.git', path: manifests}}\n  \
             destination: {{server: 'https://kubernetes.default.svc', namespace: {prefix}}}\n"
        ),
    );
    write(
        "frozen.yaml",
        format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {{name: frozen, namespace: argocd}}\n\
             spec:\n  sourceRepos: ['*']\n  destinations: [{{server: '*', namespace: '*'}}]\n  \
             syncWindows:\n  - {{kind: deny, schedule: '* * * * *', duration: 2h, applications: ['*'], manualSync: {manual_sync}}}\n"
        ),
    );
    dir
}

#[tokio::test]
async fn sync_of_an_application_file_honours_the_projects_sync_windows() {
    let ns = support::namespace(1, "cli-windows").await;
    let maps: Api<ConfigMap> = ns.api();
    let name = format!("{}-windowed", ns.name);
    for manual_sync in [false, true] {
        let dir = windowed_inputs(&ns.name, manual_sync);
        let repo = format!(
            "https://git.example/app.git={}",
            dir.path().join("repo").display()
        );
        let project = dir.path().join("frozen.yaml").display().to_string();
        let args = ["--project", &project, "--repo", &repo];
        let app = dir.path().join("app.yaml");
        if manual_sync {
            sync(&app, &ns.name, &args).await.assert_succeeded();
            assert!(maps.get_opt(&name).await.expect("reads").is_some());
        } else {
            let out = sync_command(&app, &ns.name, &args)
                .output()
                .expect("flotilla runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{stderr}");
            assert!(
                stderr.contains(&format!(
                    "error: {}: sync refused: blocked by window 'deny * * * * *'",
                    app.display()
                )),
                "{stderr}"
            );
            assert!(
                maps.get_opt(&name).await.expect("reads").is_none(),
                "nothing applied in a deny window"
            );
        }
    }
}
