//! The manifests under `deploy/` as a cluster admits them: the controller's pod meets the
//! restricted Pod Security Standard its namespace enforces (checked field by field, as the
//! admission plugin does: the test control plane predates Pod Security admission), and its
//! Role lets it read AppProjects.

use std::path::PathBuf;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::Role;

fn read(file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_controller_pod_meets_the_restricted_pod_security_standard() {
    let namespace: Namespace =
        serde_saphyr::from_str(&read("namespace.yaml")).expect("a Namespace");
    let labels = namespace.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("pod-security.kubernetes.io/enforce")
            .map(String::as_str),
        Some("restricted")
    );
    let deployment: Deployment =
        serde_saphyr::from_str(&read("deployment.yaml")).expect("a Deployment");
    let pod = deployment
        .spec
        .and_then(|s| s.template.spec)
        .expect("a pod spec");
    let pod_security = pod.security_context.unwrap_or_default();
    assert_eq!(pod_security.run_as_non_root, Some(true));
    assert!(pod.host_network.is_none() && pod.host_pid.is_none() && pod.host_ipc.is_none());
    for container in pod
        .containers
        .iter()
        .chain(pod.init_containers.iter().flatten())
    {
        let security = container.security_context.clone().unwrap_or_default();
        assert_eq!(
            security.allow_privilege_escalation,
            Some(false),
            "{}",
            container.name
        );
        assert_ne!(security.privileged, Some(true), "{}", container.name);
        let capabilities = security.capabilities.unwrap_or_default();
        assert_eq!(
            capabilities.drop,
            Some(vec!["ALL".to_owned()]),
            "{}",
            container.name
        );
        assert!(
            capabilities
                .add
                .unwrap_or_default()
                .iter()
                .all(|c| c == "NET_BIND_SERVICE")
        );
        let seccomp = security
            .seccomp_profile
            .or_else(|| pod_security.seccomp_profile.clone())
            .expect("a seccomp profile");
        assert!(["RuntimeDefault", "Localhost"].contains(&seccomp.type_.as_str()));
        assert!(
            security.run_as_non_root == Some(true) || pod_security.run_as_non_root == Some(true)
        );
        assert_ne!(security.run_as_user, Some(0));
    }
}

#[test]
fn the_controller_may_read_app_projects() {
    let rbac = read("rbac.yaml");
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
    for verb in ["get", "list", "watch"] {
        assert!(rule.verbs.iter().any(|v| v == verb), "{verb}");
    }
}
