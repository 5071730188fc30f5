//! `flotilla import` on the real control plane: Argo CD's CRDs (a minimal `argoproj.io` set,
//! shaped as Argo CD's: namespaced, no status subresource), an AppProject, an ApplicationSet
//! with the Application it generated, an Application, and the ConfigMaps Argo CD deployed for
//! them (its field manager, tracking annotation and instance label) are written as Argo CD
//! writes them. An Application with a field Flotilla does not implement is refused by name and
//! nothing is written, with or without `--apply`; once it is gone, the dry run prints the plan
//! and the tracking to take over and writes nothing; `--apply` writes the `flotilla.dev`
//! objects with the same specs (a second run finds them unchanged), and the controller takes
//! over: the Applications sync and no live object is created again (same uids).

mod controller_support;
mod support;

use std::process::Output;

use flotilla_core::api::Application;
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DeleteParams, DynamicObject, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use controller_support::{setup, start};
use support::git_remote::{GitDaemon, Remote};
use support::{TestNamespace, object, run_flotilla, wait_until};

/// Argo CD's three kinds, as its CRDs name them.
const ARGO_CD_KINDS: [(&str, &str, &str); 3] = [
    ("Application", "applications", "app"),
    ("ApplicationSet", "applicationsets", "appset"),
    ("AppProject", "appprojects", "appproj"),
];

/// Installs a minimal CRD for each of Argo CD's kinds (any fields, no status subresource, as
/// Argo CD's Application CRD) and returns their resources by kind.
async fn install_argo_cd_crds(client: &Client) -> Vec<ApiResource> {
    let mut resources = Vec::new();
    for (kind, plural, short) in ARGO_CD_KINDS {
        let crd = object(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.argoproj.io")},
            "spec": {
                "group": "argoproj.io",
                "scope": "Namespaced",
                "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(),
                          "shortNames": [short]},
                "versions": [{
                    "name": "v1alpha1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                                                   "x-kubernetes-preserve-unknown-fields": true}}
                }]
            }
        }));
        support::install_crd(client, &crd).await;
        resources.push(ApiResource {
            group: "argoproj.io".into(),
            version: "v1alpha1".into(),
            api_version: "argoproj.io/v1alpha1".into(),
            kind: kind.into(),
            plural: plural.into(),
        });
    }
    resources
}

/// Creates the Argo CD object `value` in the namespace (its kind's resource among `argo`).
async fn create_argo(ns: &TestNamespace, argo: &[ApiResource], value: Value) -> DynamicObject {
    let kind = value["kind"].as_str().unwrap();
    let resource = argo.iter().find(|r| r.kind == kind).unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &ns.name, resource);
    api.create(&PostParams::default(), &object(value))
        .await
        .expect("an Argo CD object")
}

/// A ConfigMap as Argo CD's controller writes it for the Application `app`: its tracking
/// annotation (unless `label_only`) and instance label.
fn argocd_config_map(name: &str, namespace: &str, app: &str, label_only: bool) -> ConfigMap {
    let mut map: ConfigMap = object(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/instance": app},
            "annotations": {
                "argocd.argoproj.io/tracking-id": format!("{app}:/ConfigMap:{namespace}/{name}"),
            },
        },
        "data": {"owner": "argocd"},
    }));
    if label_only {
        map.metadata.annotations = None;
    }
    map
}

/// `status.resources` as Argo CD writes it, for ConfigMaps `names` in `namespace`.
fn status_resources(namespace: &str, names: &[&str]) -> Value {
    let resources: Vec<Value> = names
        .iter()
        .map(|name| {
            json!({"version": "v1", "kind": "ConfigMap", "namespace": namespace,
                          "name": name, "status": "Synced"})
        })
        .collect();
    json!({"sync": {"status": "Synced"}, "resources": resources})
}

/// `flotilla import ARGS -o json -n <ns>`: its exit, report and stderr.
async fn import(ns: &TestNamespace, args: &[&str]) -> (Output, Value) {
    let mut all = vec!["import", "-o", "json"];
    all.extend_from_slice(args);
    let out = run_flotilla(ns, &all).await;
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|error| {
        panic!(
            "a JSON report ({error}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, report)
}

/// `(kind, name, action)` of each object of a report.
fn actions(report: &Value) -> Vec<(String, String, String)> {
    report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let text = |k: &str| o[k].as_str().unwrap_or_default().to_owned();
            (text("kind"), text("name"), text("action"))
        })
        .collect()
}

fn triple(kind: &str, name: &str, action: &str) -> (String, String, String) {
    (kind.into(), name.into(), action.into())
}

/// The flotilla.dev objects of the namespace, by kind and name.
async fn flotilla_objects(ns: &TestNamespace) -> Vec<String> {
    let mut names = Vec::new();
    for (kind, plural, _) in ARGO_CD_KINDS {
        let resource = ApiResource {
            group: "flotilla.dev".into(),
            version: "v1alpha1".into(),
            api_version: "flotilla.dev/v1alpha1".into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        let api: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &ns.name, &resource);
        for item in api.list(&Default::default()).await.unwrap().items {
            names.push(format!("{kind}/{}", item.metadata.name.unwrap_or_default()));
        }
    }
    names.sort();
    names
}

/// Waits until the Application's operation Succeeded.
async fn synced(api: &Api<Application>, name: &str) {
    wait_until(api, name, &format!("{name} synced"), |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|o| o.phase == OperationPhase::Succeeded)
    })
    .await;
}

#[tokio::test]
async fn argo_cd_objects_are_imported_and_their_live_objects_taken_over() {
    let remote = Remote::new("imported");
    for (dir, name) in [
        ("guestbook", "settings"),
        ("guestbook", "labelled"),
        ("fleet", "fleet-settings"),
    ] {
        let manifests = remote.work().join(dir);
        std::fs::create_dir_all(&manifests).unwrap();
        std::fs::write(
            manifests.join(format!("{name}.yaml")),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  owner: flotilla\n"),
        )
        .unwrap();
    }
    remote.push("the Applications' manifests");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let ns = setup("import").await;
    let argo = install_argo_cd_crds(&ns.client).await;

    // What Argo CD deployed: its field manager, its tracking.
    let maps: Api<ConfigMap> = ns.api();
    let argocd = PostParams {
        field_manager: Some("argocd-controller".into()),
        ..PostParams::default()
    };
    let mut uids = Vec::new();
    for map in [
        argocd_config_map("settings", &ns.name, "guestbook", false),
        argocd_config_map("labelled", &ns.name, "guestbook", true),
        argocd_config_map("fleet-settings", &ns.name, "fleet-a", false),
    ] {
        let created = maps
            .create(&argocd, &map)
            .await
            .expect("written as Argo CD would");
        uids.push((
            created.metadata.name.unwrap(),
            created.metadata.uid.unwrap(),
        ));
    }

    // Argo CD's objects.
    let destination = json!({"server": "https://kubernetes.default.svc", "namespace": ns.name});
    create_argo(
        &ns,
        &argo,
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
            "metadata": {"name": "team"},
            "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}]},
        }),
    )
    .await;
    let fleet = create_argo(
        &ns,
        &argo,
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
            "metadata": {"name": "fleet"},
            "spec": {
                "generators": [{"list": {"elements": [{"name": "a"}]}}],
                "template": {
                    "metadata": {"name": "fleet-{{name}}"},
                    "spec": {"project": "team",
                             "source": {"repoURL": url, "targetRevision": "main", "path": "fleet"},
                             "destination": destination,
                             "syncPolicy": {"automated": {"prune": true}}}
                }
            },
        }),
    )
    .await;
    create_argo(
        &ns,
        &argo,
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "fleet-a", "ownerReferences": [{
                "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": "fleet",
                "uid": fleet.metadata.uid, "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"project": "team",
                     "source": {"repoURL": url, "targetRevision": "main", "path": "fleet"},
                     "destination": destination,
                     "syncPolicy": {"automated": {"prune": true}}},
            "status": status_resources(&ns.name, &["fleet-settings"]),
        }),
    )
    .await;
    let guestbook_spec = json!({
        "project": "team",
        "source": {"repoURL": url, "targetRevision": "main", "path": "guestbook"},
        "destination": destination,
        "syncPolicy": {"automated": {"prune": true}},
    });
    create_argo(
        &ns,
        &argo,
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "guestbook", "labels": {"team": "shop"},
                         "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
            "spec": guestbook_spec,
            "status": status_resources(&ns.name, &["settings", "labelled", "gone"]),
        }),
    )
    .await;
    let legacy = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "legacy"},
        "spec": {"project": "team",
                 "source": {"repoURL": url, "path": "guestbook"},
                 "destination": destination,
                 "info": [{"name": "owner", "value": "ops"}]},
    });
    create_argo(&ns, &argo, legacy.clone()).await;

    // A refused object: reported by name, nothing written, even with --apply.
    let refusal = "Application \"legacy\": unsupported field spec.info";
    for apply in [false, true] {
        let args: &[&str] = if apply { &["--apply"] } else { &[] };
        let (out, report) = import(&ns, args).await;
        assert_eq!(
            out.status.code(),
            Some(1),
            "a refused object fails the import"
        );
        let legacy = report["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == "legacy")
            .expect("legacy reported");
        assert_eq!(legacy["action"], "refused");
        assert!(
            legacy["reason"].as_str().unwrap().contains(refusal),
            "{legacy}"
        );
        if apply {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("nothing was written: 1 object refused (Application legacy)"),
                "{stderr}"
            );
        }
        assert_eq!(
            flotilla_objects(&ns).await,
            Vec::<String>::new(),
            "nothing written"
        );
    }
    // The same from a file: the file and the field are named.
    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("legacy.yaml");
    std::fs::write(&file, serde_json::to_string(&legacy).unwrap()).unwrap();
    let (out, report) = import(&ns, &["-f", file.to_str().unwrap()]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        report["objects"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}: {refusal}", file.display())),
        "{report}"
    );

    // Without it: the dry run prints the plan and writes nothing.
    let legacy_api: Api<DynamicObject> =
        Api::namespaced_with(ns.client.clone(), &ns.name, &argo[0]);
    legacy_api
        .delete("legacy", &DeleteParams::default())
        .await
        .expect("legacy deleted");
    let (out, report) = import(&ns, &["--dry-run"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        actions(&report),
        [
            triple("AppProject", "team", "create"),
            triple("ApplicationSet", "fleet", "create"),
            triple("Application", "fleet-a", "generated"),
            triple("Application", "guestbook", "create"),
        ]
    );
    let tracking: Vec<(String, String, String)> = report["tracking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["application"].as_str().unwrap().to_owned(),
                t["object"]["name"].as_str().unwrap().to_owned(),
                t["tracking"]["found"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        tracking,
        [
            triple("fleet-a", "fleet-settings", "annotationAndLabel"),
            triple("guestbook", "settings", "annotationAndLabel"),
            triple("guestbook", "labelled", "label"),
            triple("guestbook", "gone", "missing"),
        ]
    );
    assert_eq!(
        report["tracking"][1]["flotillaTrackingId"],
        format!("{}_guestbook:/ConfigMap:{}/settings", ns.name, ns.name)
    );
    assert_eq!(report["written"], false);
    assert_eq!(
        flotilla_objects(&ns).await,
        Vec::<String>::new(),
        "a dry run writes nothing"
    );
    // The table says the same.
    let table = run_flotilla(&ns, &["import"]).await;
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("dry run: nothing written; --apply would create 3 and update 0"),
        "{table}"
    );
    assert!(
        table.contains(
            "annotation argocd.argoproj.io/tracking-id and label app.kubernetes.io/instance"
        ),
        "{table}"
    );

    // --apply writes the flotilla.dev objects, with the same specs.
    let (out, report) = import(&ns, &["--apply"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report["written"], true);
    assert_eq!(
        flotilla_objects(&ns).await,
        [
            "AppProject/team",
            "Application/guestbook",
            "ApplicationSet/fleet"
        ]
    );
    let apps: Api<Application> = ns.api();
    let guestbook = apps.get("guestbook").await.unwrap();
    assert_eq!(
        serde_json::to_value(&guestbook.spec).unwrap()["source"],
        guestbook_spec["source"]
    );
    assert_eq!(
        guestbook.metadata.finalizers,
        Some(vec!["resources-finalizer.argocd.argoproj.io".to_owned()])
    );
    assert_eq!(
        guestbook
            .metadata
            .labels
            .unwrap_or_default()
            .get("team")
            .map(String::as_str),
        Some("shop")
    );
    let (out, report) = import(&ns, &[]).await;
    assert!(out.status.success());
    assert_eq!(
        actions(&report)
            .into_iter()
            .map(|(_, _, action)| action)
            .collect::<Vec<_>>(),
        ["unchanged", "unchanged", "generated", "unchanged"],
        "a second import changes nothing"
    );

    // Flotilla takes over: both Applications sync, nothing is created again.
    let controller = start(&ns, "import");
    synced(&apps, "guestbook").await;
    synced(&apps, "fleet-a").await;
    for (name, uid) in &uids {
        let live = maps.get(name).await.expect("still there");
        assert_eq!(
            live.metadata.uid.as_ref(),
            Some(uid),
            "{name} adopted in place"
        );
        assert_eq!(
            live.data
                .unwrap_or_default()
                .get("owner")
                .map(String::as_str),
            Some("flotilla"),
            "{name} synced by Flotilla"
        );
    }
    controller.stop().await;
}
