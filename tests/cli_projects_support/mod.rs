//! Helpers shared by tests/cli_projects.rs and tests/cli_projects_offline.rs.
// Each of the two test binaries compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::Path;

/// A directory with a ConfigMap and a ClusterRole named after `prefix`, and a project file
/// `default.yaml` (Argo CD's YAML) permitting every destination and no cluster-scoped kind.
pub fn inputs(prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a directory");
    let write = |name: &str, text: String| {
        std::fs::write(dir.path().join(name), text).expect("writes");
    };
    write(
        "app.yaml",
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {prefix}-settings}}\ndata: {{k: v}}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: {prefix}-reader}}\nrules: []\n"
        ),
    );
    std::fs::create_dir(dir.path().join("projects")).expect("a directory");
    std::fs::write(
        dir.path().join("projects/default.yaml"),
        "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: default, namespace: argocd}\n\
         spec:\n  sourceRepos: ['*']\n  destinations: [{server: '*', namespace: '*'}]\n",
    )
    .expect("writes");
    dir
}

pub fn project_file(dir: &Path) -> String {
    dir.join("projects/default.yaml").display().to_string()
}
