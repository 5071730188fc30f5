//! `flotilla plan` names the objects an AppProject refuses, offline. The syncs a project refuses or
//! holds (sync windows) are in cli_projects.rs.

mod cli_projects_support;
mod support;
mod sync_support;

use std::process::Command;

use cli_projects_support::{inputs, project_file};

#[test]
fn plan_names_the_objects_a_project_refuses() {
    let dir = inputs("plan");
    let manifest = dir.path().join("app.yaml");
    let plan = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .arg("plan")
            .arg(&manifest)
            .args(["--namespace", "shop"])
            .args(extra)
            .output()
            .expect("flotilla runs")
    };
    assert!(plan(&[]).status.success());
    let refused = plan(&["--project", &project_file(dir.path())]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "refused: ClusterRole.rbac.authorization.k8s.io plan-reader is not permitted in \
             project \"default\": clusterResourceWhitelist is empty: no cluster-scoped kind is permitted"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("plan-settings"), "{stderr}");
}
