//! The deployment manifests read as files: the controller's role may read AppProjects. What they
//! do on the API server (kubectl apply) is in deploy_manifests.rs.

mod deploy_manifests_support;
mod support;

use k8s_openapi::api::rbac::v1::Role;

use deploy_manifests_support::read;

#[test]
fn the_controller_may_read_app_projects() {
    let rbac = read("base/role.yaml");
    let role: Role = rbac
        .split("\n---\n")
        .filter_map(|doc| serde_saphyr::from_str::<Role>(doc).ok())
        .find(|role| {
            role.rules.iter().flatten().any(|rule| {
                rule.resources
                    .iter()
                    .flatten()
                    .any(|r| r == "applicationsets")
            })
        })
        .expect("the controller's Role in its namespace");
    let rule = role
        .rules
        .iter()
        .flatten()
        .find(|rule| rule.resources.iter().flatten().any(|r| r == "appprojects"))
        .expect("a rule for appprojects");
    for verb in ["list", "watch"] {
        assert!(rule.verbs.iter().any(|v| v == verb), "{verb}");
    }
}
