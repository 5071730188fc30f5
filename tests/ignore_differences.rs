//! Fields owned by someone else on the real control plane: an autoscaler-like field manager
//! takes `spec.replicas` of a Deployment that `flotilla`'s controller synced from a bare
//! repository. Without `ignoreDifferences` the Application is OutOfSync, naming `/spec/replicas`;
//! with it, Synced; and with `RespectIgnoreDifferences=true` the next sync keeps the live
//! replicas — also under a RollingSync, whose steps then complete. System-wide rules come from
//! the settings ConfigMap (`argocd-cm`), `flotilla app diff` shows what the controller compares,
//! and an ApplicationSet's `ignoreApplicationDifferences` keeps what people changed. A Helm
//! chart's autoscaling/v2 HPA, run by kube-controller-manager, owns the replicas it sets.

mod controller_support;
mod support;

use flotilla_core::api::{Application, ApplicationSet};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use controller_support::{appset, setup, start};
use support::git_remote::{GitDaemon, Remote};
use support::{TestNamespace, apply, eventually, object, run_flotilla, wait_until};

/// The Deployment `web` of the repository, with `image`.
fn deployment(image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  \
         selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    \
         spec:\n      containers: [{{name: web, image: \"{image}\"}}]\n"
    )
}

/// The Application `web`, synced automatically into `<ns>-web`, with `extra` spec fields and
/// sync options.
fn application(ns: &TestNamespace, remote: &Remote, extra: Value, options: &[&str]) -> Application {
    let mut spec = json!({
        "project": "default",
        "source": {"repoURL": remote.file_url(), "targetRevision": "main", "path": "web"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": format!("{}-web", ns.name)},
        "syncPolicy": {"automated": {}, "syncOptions": options}
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web"},
        "spec": spec
    }))
}

/// (sync status, revision, first difference of `web`).
fn sync_of(app: &Application) -> (String, String, String) {
    let status = app.status.as_ref();
    let sync = status.and_then(|s| s.sync.as_ref());
    let difference = status
        .and_then(|s| s.resources.iter().find(|r| r.name == "web"))
        .map(|r| r.first_difference.clone())
        .unwrap_or_default();
    (
        sync.map(|s| s.status.as_str().to_owned())
            .unwrap_or_default(),
        sync.map(|s| s.revision.clone()).unwrap_or_default(),
        difference,
    )
}

#[tokio::test]
async fn replicas_owned_by_an_autoscaler_are_ignored_and_kept() {
    let ns = setup("ignore-diff").await;
    let remote = Remote::new("platform");
    remote.write("web/deployment.yaml", &deployment("registry.example/web:1"));
    let first = remote.push("web");
    let controller = start(&ns, "only");
    let apps = ns.api::<Application>();
    apply(
        &apps,
        &application(&ns, &remote, json!({}), &["CreateNamespace=true"]),
    )
    .await;
    wait_until(&apps, "web", "web Synced", |app| {
        sync_of(app) == ("Synced".into(), first.clone(), String::new())
    })
    .await;

    // The autoscaler scales out, as its own field manager.
    let deployments: Api<Deployment> =
        Api::namespaced(ns.client.clone(), &format!("{}-web", ns.name));
    deployments
        .patch(
            "web",
            &PatchParams::apply("horizontal-pod-autoscaler").force(),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                 "metadata": {"name": "web"}, "spec": {"replicas": 5}})),
        )
        .await
        .expect("scaling web");
    wait_until(&apps, "web", "web OutOfSync at /spec/replicas", |app| {
        sync_of(app) == ("OutOfSync".into(), first.clone(), "/spec/replicas".into())
    })
    .await;

    let ignore = json!({"ignoreDifferences": [
        {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}
    ]});
    apply(
        &apps,
        &application(
            &ns,
            &remote,
            ignore,
            &["CreateNamespace=true", "RespectIgnoreDifferences=true"],
        ),
    )
    .await;
    wait_until(&apps, "web", "web Synced with replicas ignored", |app| {
        sync_of(app) == ("Synced".into(), first.clone(), String::new())
    })
    .await;

    // A new revision is synced, and the autoscaler's replicas stay.
    remote.write("web/deployment.yaml", &deployment("registry.example/web:2"));
    let second = remote.push("web 2");
    wait_until(&apps, "web", "web Synced at the second revision", |app| {
        sync_of(app) == ("Synced".into(), second.clone(), String::new())
    })
    .await;
    let web = wait_until(&deployments, "web", "web at image 2", |d| {
        let spec = d.spec.as_ref().and_then(|s| s.template.spec.as_ref());
        spec.is_some_and(|s| s.containers[0].image.as_deref() == Some("registry.example/web:2"))
    })
    .await;
    assert_eq!(web.spec.and_then(|s| s.replicas), Some(5));
    controller.stop().await;
}

/// Scales Deployment `name` in `namespace` to `replicas` as an autoscaler would: its own field
/// manager, server-side.
async fn autoscale(ns: &TestNamespace, namespace: &str, name: &str, replicas: i32) {
    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), namespace);
    deployments
        .patch(
            name,
            &PatchParams::apply("horizontal-pod-autoscaler").force(),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                 "metadata": {"name": name}, "spec": {"replicas": replicas}})),
        )
        .await
        .expect("scaling");
}

/// (exit code, stdout) of `flotilla app diff` with `args`.
async fn app_diff(ns: &TestNamespace, args: &[&str]) -> (Option<i32>, String) {
    let output = run_flotilla(ns, &[&["app", "diff"], args].concat()).await;
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test]
async fn system_rules_from_the_settings_config_map_and_app_diff() {
    let ns = setup("ignore-system").await;
    let remote = Remote::new("platform");
    remote.write("web/deployment.yaml", &deployment("registry.example/web:1"));
    let first = remote.push("web");
    let daemon = GitDaemon::start(remote.exported());
    let controller = start(&ns, "only");
    let apps = ns.api::<Application>();
    let mut app = application(&ns, &remote, json!({}), &["CreateNamespace=true"]);
    app.spec.source.repo_url = daemon.url(&remote.served_name());
    apply(&apps, &app).await;
    wait_until(&apps, "web", "web Synced", |app| {
        sync_of(app) == ("Synced".into(), first.clone(), String::new())
    })
    .await;
    assert_eq!(app_diff(&ns, &["web"]).await, (Some(0), String::new()));

    autoscale(&ns, &format!("{}-web", ns.name), "web", 5).await;
    wait_until(&apps, "web", "web OutOfSync at /spec/replicas", |app| {
        sync_of(app) == ("OutOfSync".into(), first.clone(), "/spec/replicas".into())
    })
    .await;
    let (code, text) = app_diff(&ns, &["web"]).await;
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("-  replicas: 5") && text.contains("+  replicas: 1"),
        "{text}"
    );
    let (code, json_text) = app_diff(&ns, &["web", "-o", "json"]).await;
    assert_eq!(code, Some(1), "{json_text}");
    let objects: Vec<Value> = serde_json::from_str(&json_text).expect("JSON");
    assert_eq!(objects.len(), 1, "{json_text}");
    assert_eq!(objects[0]["status"], "OutOfSync");
    assert_eq!(objects[0]["changedPaths"], json!(["/spec/replicas"]));

    // The platform team ignores replicas of every Deployment, by jq path, in argocd-cm.
    let settings: ConfigMap = object(json!({
        "metadata": {"name": "argocd-cm"},
        "data": {"resource.customizations.ignoreDifferences.apps_Deployment":
                 "jqPathExpressions:\n- .spec.replicas\n"}
    }));
    apply(&ns.api::<ConfigMap>(), &settings).await;
    wait_until(
        &apps,
        "web",
        "web Synced under the system-wide rule",
        |app| sync_of(app) == ("Synced".into(), first.clone(), String::new()),
    )
    .await;
    assert_eq!(app_diff(&ns, &["web"]).await, (Some(0), String::new()));
    let (code, _) = app_diff(&ns, &["no-such-app"]).await;
    assert_eq!(code, Some(2));
    controller.stop().await;
}

/// `(state, target revisions)` of each Application in the rollout status of `appset`, and
/// whether the rollout is complete.
fn rollout_of(appset: &ApplicationSet) -> (Vec<(String, String, Value)>, bool) {
    let status = serde_json::to_value(&appset.status).expect("status as JSON");
    let apps = status["applicationStatus"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["application"].as_str().unwrap_or_default().to_owned(),
                s["status"].as_str().unwrap_or_default().to_owned(),
                s["targetRevisions"].clone(),
            )
        })
        .collect();
    let complete = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            c["type"] == "RolloutProgressing" && c["reason"] == "ApplicationSetRolloutComplete"
        });
    (apps, complete)
}

#[tokio::test]
async fn a_rolling_sync_step_completes_while_an_autoscaler_owns_replicas() {
    let ns = setup("ignore-rolling").await;
    let remote = Remote::new("fleet");
    let write = |image: &str| {
        for name in ["db", "web"] {
            remote.write(
                &format!("apps/{name}/deployment.yaml"),
                &deployment(image).replace("web", name),
            );
        }
    };
    write("registry.example/app:1");
    let first = remote.push("fleet 1");
    let daemon = GitDaemon::start(remote.exported());
    let target = format!("{}-fleet", ns.name);
    let mut fleet = appset(
        &target,
        &daemon.url(&remote.served_name()),
        &[],
        json!({
            "generators": [{"list": {"elements": [{"name": "db", "tier": "1"}, {"name": "web", "tier": "2"}]}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": [
                {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["1"]}]},
                {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["2"]}]}
            ]}}
        }),
    );
    let template = &mut fleet.spec.template;
    template
        .metadata
        .labels
        .insert("tier".into(), "{{tier}}".into());
    template.spec.ignore_differences = vec![object(
        json!({"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}),
    )];
    template.spec.sync_policy = Some(object(json!({"automated": {"prune": true},
        "syncOptions": ["CreateNamespace=true", "RespectIgnoreDifferences=true"]})));
    let controller = start(&ns, "only");
    let appsets = ns.api::<ApplicationSet>();
    apply(&appsets, &fleet).await;
    let on = |revision: &str| {
        vec![
            ("db".to_owned(), "Healthy".to_owned(), json!([revision])),
            ("web".to_owned(), "Healthy".to_owned(), json!([revision])),
        ]
    };
    let want = on(&first);
    wait_until(
        &appsets,
        "stack",
        "the rollout complete on the first commit",
        |a| rollout_of(a) == (want.clone(), true),
    )
    .await;

    autoscale(&ns, &target, "db", 3).await;
    write("registry.example/app:2");
    let second = remote.push("fleet 2");
    let want = on(&second);
    wait_until(
        &appsets,
        "stack",
        "the rollout complete on the second commit",
        |a| rollout_of(a) == (want.clone(), true),
    )
    .await;
    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &target);
    let db = deployments.get("db").await.expect("reads db");
    let spec = db.spec.expect("a spec");
    assert_eq!(spec.replicas, Some(3), "the autoscaler's replicas are kept");
    assert_eq!(
        spec.template
            .spec
            .and_then(|s| s.containers[0].image.clone()),
        Some("registry.example/app:2".into())
    );
    controller.stop().await;
}

#[tokio::test]
async fn ignore_application_differences_keeps_what_people_changed() {
    let ns = setup("ignore-appset").await;
    let remote = Remote::new("apps");
    remote.write(
        "apps/a/deployment.yaml",
        &deployment("registry.example/a:1"),
    );
    remote.push("a");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let target = format!("{}-apps", ns.name);
    let generated = |rules: Value, team: &str| {
        let mut stack = appset(&target, &url, &["a"], json!({}));
        stack.spec.ignore_application_differences = serde_json::from_value(rules).unwrap();
        stack
            .spec
            .template
            .metadata
            .annotations
            .insert("team".into(), team.into());
        stack.spec.template.spec.sync_policy = Some(object(json!({"automated": {"prune": true},
            "syncOptions": ["CreateNamespace=true"]})));
        stack
    };
    let controller = start(&ns, "only");
    let appsets = ns.api::<ApplicationSet>();
    let apps = ns.api::<Application>();
    let automated = |app: &Application| {
        app.spec
            .sync_policy
            .as_ref()
            .is_some_and(|p| p.automated.is_some())
    };
    let team = |app: &Application, want: &str| {
        app.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("team"))
            .is_some_and(|t| t == want)
    };
    let keep = json!([{"jsonPointers": ["/spec/syncPolicy/automated"]}]);
    apply(&appsets, &generated(keep.clone(), "shop")).await;
    wait_until(&apps, "a", "a generated, automated", |a| {
        automated(a) && team(a, "shop")
    })
    .await;

    // Someone turns automated sync off to debug.
    apps.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"syncPolicy": {"automated": null}}})),
    )
    .await
    .expect("turning automated sync off");
    // The template changes: the update keeps their change.
    apply(&appsets, &generated(keep, "checkout")).await;
    let a = wait_until(&apps, "a", "a updated by the template", |a| {
        team(a, "checkout")
    })
    .await;
    assert!(!automated(&a), "{:?}", a.spec.sync_policy);

    // Without the rule, the ApplicationSet reverts it.
    apply(&appsets, &generated(json!([]), "payments")).await;
    eventually("a automated again", async || {
        let a = apps.get("a").await.map_err(|e| e.to_string())?;
        (automated(&a) && team(&a, "payments"))
            .then_some(())
            .ok_or_else(|| format!("{:?}", a.spec.sync_policy))
    })
    .await;
    controller.stop().await;
}

/// The chart `web`: a Deployment of one replica, its autoscaling/v2 HorizontalPodAutoscaler (at
/// least `min` replicas) and a policy/v1 PodDisruptionBudget, as charts made today write them.
fn autoscaled_chart(remote: &Remote, min: u32) {
    remote.write(
        "chart/Chart.yaml",
        "apiVersion: v2\nname: web\nversion: 0.1.0\nappVersion: \"1\"\n",
    );
    remote.write(
        "chart/values.yaml",
        &format!(
            "image: registry.example/web:1\nautoscaling:\n  minReplicas: {min}\n  maxReplicas: 5\n  \
             targetCPUUtilizationPercentage: 80\n"
        ),
    );
    remote.write(
        "chart/templates/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  \
         replicas: 1\n  selector: {matchLabels: {app: {{ .Release.Name }}}}\n  template:\n    \
         metadata: {labels: {app: {{ .Release.Name }}}}\n    spec:\n      containers:\n      \
         - name: web\n        image: {{ .Values.image | quote }}\n        resources: {requests: {cpu: 100m}}\n",
    );
    remote.write(
        "chart/templates/hpa.yaml",
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: {{ .Release.Name }}\n\
         spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: {{ .Release.Name }}}\n  \
         minReplicas: {{ .Values.autoscaling.minReplicas }}\n  maxReplicas: {{ .Values.autoscaling.maxReplicas }}\n  \
         metrics:\n  - type: Resource\n    resource:\n      name: cpu\n      target:\n        \
         type: Utilization\n        averageUtilization: {{ .Values.autoscaling.targetCPUUtilizationPercentage }}\n",
    );
    remote.write(
        "chart/templates/pdb.yaml",
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: {{ .Release.Name }}\n\
         spec:\n  minAvailable: 1\n  selector: {matchLabels: {app: {{ .Release.Name }}}}\n",
    );
}

/// A Helm chart with an autoscaling/v2 HPA and a policy/v1 PDB deploys through the controller;
/// kube-controller-manager's autoscaler scales the Deployment to the HPA's minimum through the
/// scale subresource, as its own field manager, and the Application ignores those replicas as
/// Argo CD documents it (`managedFieldsManagers: [kube-controller-manager]`): it stays Synced,
/// and a new revision keeps the autoscaler's replicas.
#[tokio::test]
async fn a_charts_autoscaler_owns_the_replicas_and_they_are_ignored() {
    let ns = setup("ignore-hpa").await;
    let remote = Remote::new("autoscaled");
    autoscaled_chart(&remote, 3);
    let first = remote.push("web chart");
    let controller = start(&ns, "only");
    let apps = ns.api::<Application>();
    let mut app = application(
        &ns,
        &remote,
        json!({"ignoreDifferences": [{"group": "apps", "kind": "Deployment",
                                      "managedFieldsManagers": ["kube-controller-manager"]}]}),
        &["CreateNamespace=true", "RespectIgnoreDifferences=true"],
    );
    app.spec.source.path = "chart".into();
    apply(&apps, &app).await;
    let namespace = format!("{}-web", ns.name);
    let deployments: Api<Deployment> = Api::namespaced(ns.client.clone(), &namespace);
    let scaled = wait_until(
        &deployments,
        "web",
        "web scaled to 3 by the autoscaler",
        |d| d.spec.as_ref().and_then(|s| s.replicas) == Some(3),
    )
    .await;
    let owner = scaled
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .find(|entry| {
            entry.subresource.as_deref() == Some("scale")
                && entry
                    .fields_v1
                    .as_ref()
                    .is_some_and(|f| f.0.pointer("/f:spec/f:replicas").is_some())
        })
        .and_then(|entry| entry.manager);
    assert_eq!(owner.as_deref(), Some("kube-controller-manager"));
    wait_until(
        &apps,
        "web",
        "web Synced with the autoscaler's replicas",
        |app| sync_of(app) == ("Synced".into(), first.clone(), String::new()),
    )
    .await;

    remote.write(
        "chart/values.yaml",
        "image: registry.example/web:2\nautoscaling:\n  minReplicas: 3\n  maxReplicas: 5\n  \
         targetCPUUtilizationPercentage: 80\n",
    );
    let second = remote.push("web 2");
    wait_until(&apps, "web", "web Synced at the second revision", |app| {
        sync_of(app) == ("Synced".into(), second.clone(), String::new())
    })
    .await;
    let web = wait_until(&deployments, "web", "web at image 2", |d| {
        let spec = d.spec.as_ref().and_then(|s| s.template.spec.as_ref());
        spec.is_some_and(|s| s.containers[0].image.as_deref() == Some("registry.example/web:2"))
    })
    .await;
    assert_eq!(web.spec.and_then(|s| s.replicas), Some(3));
    for (kind, present) in [
        (
            "HorizontalPodAutoscaler",
            Api::<HorizontalPodAutoscaler>::namespaced(ns.client.clone(), &namespace)
                .get_opt("web")
                .await
                .expect("reads")
                .is_some(),
        ),
        (
            "PodDisruptionBudget",
            Api::<PodDisruptionBudget>::namespaced(ns.client.clone(), &namespace)
                .get_opt("web")
                .await
                .expect("reads")
                .is_some(),
        ),
    ] {
        assert!(present, "{kind} web deployed");
    }
    controller.stop().await;
}
