//! Integration tests against the real test control plane (Kubernetes API servers and controller
//! managers of the version tests/controlplane/kube/go.mod pins) with `flotilla-node-sim` playing the kubelet: workload status is computed
//! by the real controllers, failures are injected through `sim.flotilla.dev/*` annotations.

mod support;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;
use support::{apply, eventually, namespace, object, wait_until};

/// Both clusters run the Kubernetes that tests/controlplane/kube/go.mod requires, never another.
#[tokio::test]
async fn the_clusters_run_the_pinned_kubernetes() {
    let go_mod = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/controlplane/kube/go.mod"),
    )
    .expect("reads kube/go.mod");
    let pinned = go_mod
        .lines()
        .find_map(|line| line.strip_prefix("require k8s.io/kubernetes "))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("kube/go.mod requires k8s.io/kubernetes");
    for cluster in [1, 2] {
        let version = support::client(cluster)
            .await
            .apiserver_version()
            .await
            .expect("reads /version");
        assert_eq!(version.git_version, pinned, "cluster {cluster}");
    }
}

fn deployment(name: &str, replicas: i32, annotations: serde_json::Value) -> Deployment {
    object(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations},
                "spec": {"containers": [{"name": "app", "image": "example.com/app:1"}]},
            },
        },
    }))
}

fn job(name: &str, annotations: serde_json::Value) -> Job {
    object(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "task", "image": "example.com/task:1"}]},
            },
        },
    }))
}

fn job_condition(job: &Job, type_: &str) -> bool {
    let conditions = job.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| c.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

#[tokio::test]
async fn deployment_of_three_replicas_becomes_available_and_scales_down() {
    let ns = namespace(1, "deploy").await;
    let deployments: Api<Deployment> = ns.api();
    apply(&deployments, &deployment("web", 3, json!({}))).await;
    let available = wait_until(&deployments, "web", "3 available replicas", |d| {
        d.status.as_ref().and_then(|s| s.available_replicas) == Some(3)
    })
    .await;
    let status = available.status.unwrap();
    assert_eq!(status.ready_replicas, Some(3));
    assert_eq!(status.observed_generation, available.metadata.generation);

    apply(&deployments, &deployment("web", 1, json!({}))).await;
    let pods: Api<Pod> = ns.api();
    eventually(
        "scale-down to one pod (terminating pods deleted by the simulator)",
        async || {
            let names: Vec<String> = pods
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect();
            if names.len() == 1 {
                Ok(())
            } else {
                Err(format!("pods {names:?}"))
            }
        },
    )
    .await;
}

#[tokio::test]
async fn job_completes() {
    let ns = namespace(1, "job").await;
    let jobs: Api<Job> = ns.api();
    apply(&jobs, &job("migrate", json!({}))).await;
    let done = wait_until(&jobs, "migrate", "condition Complete", |j| {
        job_condition(j, "Complete")
    })
    .await;
    assert_eq!(done.status.unwrap().succeeded, Some(1));
}

#[tokio::test]
async fn injected_failure_fails_the_job() {
    let ns = namespace(1, "job-fail").await;
    let jobs: Api<Job> = ns.api();
    apply(
        &jobs,
        &job("migrate", json!({"sim.flotilla.dev/fail": "true"})),
    )
    .await;
    let failed = wait_until(&jobs, "migrate", "condition Failed", |j| {
        job_condition(j, "Failed")
    })
    .await;
    assert!(!job_condition(&failed, "Complete"));
    assert_eq!(failed.status.unwrap().failed, Some(1));
}

#[tokio::test]
async fn image_pull_error_leaves_the_deployment_unavailable() {
    let ns = namespace(1, "pull").await;
    let deployments: Api<Deployment> = ns.api();
    apply(
        &deployments,
        &deployment(
            "web",
            2,
            json!({"sim.flotilla.dev/image-pull-error": "true"}),
        ),
    )
    .await;
    let pods: Api<Pod> = ns.api();
    eventually("two pods in ImagePullBackOff", async || {
        let pods = pods.list(&ListParams::default()).await.unwrap().items;
        let reasons: Vec<Option<String>> = pods
            .iter()
            .map(|p| {
                let statuses = p
                    .status
                    .as_ref()
                    .and_then(|s| s.container_statuses.as_ref());
                let waiting = statuses
                    .and_then(|c| c.first())
                    .and_then(|c| c.state.as_ref()?.waiting.as_ref());
                waiting.and_then(|w| w.reason.clone())
            })
            .collect();
        let pulling = reasons
            .iter()
            .filter(|r| r.as_deref() == Some("ImagePullBackOff"))
            .count();
        if pulling == 2 {
            Ok(())
        } else {
            Err(format!("waiting reasons {reasons:?}"))
        }
    })
    .await;
    let unavailable = wait_until(&deployments, "web", "condition Available=False", |d| {
        let conditions = d.status.as_ref().and_then(|s| s.conditions.as_ref());
        conditions.is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Available" && c.status == "False")
        })
    })
    .await;
    let status = unavailable.status.unwrap();
    assert_eq!(status.available_replicas.unwrap_or(0), 0);
    assert_eq!(status.unavailable_replicas, Some(2));
}

#[tokio::test]
async fn statefulset_and_daemonset_become_ready() {
    let ns = namespace(1, "sts-ds").await;
    let template = |app: &str| {
        json!({
            "metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "app", "image": "example.com/app:1"}]},
        })
    };
    let statefulsets: Api<StatefulSet> = ns.api();
    let sts: StatefulSet = object(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": template("db")},
    }));
    apply(&statefulsets, &sts).await;
    let daemonsets: Api<DaemonSet> = ns.api();
    let ds: DaemonSet = object(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template("agent")},
    }));
    apply(&daemonsets, &ds).await;
    wait_until(&statefulsets, "db", "2 ready replicas", |s| {
        s.status.as_ref().and_then(|s| s.ready_replicas) == Some(2)
    })
    .await;
    let ready = wait_until(&daemonsets, "agent", "one ready daemon pod per node", |d| {
        d.status.as_ref().is_some_and(|s| {
            s.desired_number_scheduled >= 1 && s.number_ready == s.desired_number_scheduled
        })
    })
    .await;
    assert_eq!(ready.status.unwrap().number_misscheduled, 0);
}

#[tokio::test]
async fn crd_becomes_established_and_accepts_a_custom_resource() {
    let ns = namespace(1, "crd").await;
    let crds: Api<CustomResourceDefinition> = Api::all(ns.client.clone());
    let crd: CustomResourceDefinition = object(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.tests.flotilla.dev"},
        "spec": {
            "group": "tests.flotilla.dev",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                }}},
            }],
        },
    }));
    apply(&crds, &crd).await;
    wait_until(
        &crds,
        "widgets.tests.flotilla.dev",
        "condition Established",
        |c| {
            let conditions = c.status.as_ref().and_then(|s| s.conditions.as_ref());
            conditions.is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
        },
    )
    .await;

    let resource = ApiResource {
        group: "tests.flotilla.dev".into(),
        version: "v1".into(),
        api_version: "tests.flotilla.dev/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widgets: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &ns.name, &resource);
    let widget: DynamicObject = object(
        json!({"apiVersion": "tests.flotilla.dev/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}}),
    );
    let params = PatchParams::apply(support::FIELD_MANAGER).force();
    let stored = eventually("the custom resource to be accepted", async || {
        widgets
            .patch("w", &params, &Patch::Apply(&widget))
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    assert_eq!(stored.data["spec"]["size"], 3);
}

#[tokio::test]
async fn both_clusters_run_workloads_and_are_distinct() {
    let first = namespace(1, "multi").await;
    let second = namespace(2, "multi").await;
    let configmaps: Api<ConfigMap> = first.api();
    let marker: ConfigMap =
        object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "only-here"}}));
    apply(&configmaps, &marker).await;

    let namespaces_two: Api<Namespace> = Api::all(second.client.clone());
    assert!(
        namespaces_two.get_opt(&first.name).await.unwrap().is_none(),
        "cluster 2 sees cluster 1's namespace"
    );
    let in_two: Api<ConfigMap> = Api::namespaced(second.client.clone(), &first.name);
    assert!(in_two.get_opt("only-here").await.unwrap().is_none());

    let deployments: Api<Deployment> = second.api();
    apply(&deployments, &deployment("web", 1, json!({}))).await;
    wait_until(
        &deployments,
        "web",
        "1 available replica on cluster 2",
        |d| d.status.as_ref().and_then(|s| s.available_replicas) == Some(1),
    )
    .await;
}
