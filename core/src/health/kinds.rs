//! The kinds Flotilla judges by a rule of its own, as one table: Kubernetes' kinds (typed rules)
//! and the operators' kinds platform teams run, most of them a row over a status convention
//! ([`Conditions`], [`Phases`]) and a few with code where the operator is special. The table is
//! what [`super::assess`] dispatches on and what the reference docs list ([`reference`]).

use serde_json::Value;

use super::convention::{Conditions, Meaning, Phases};
use super::{
    Health, HealthStatus, apiservice, application, argo_rollout, cnpg_cluster, crd, daemonset,
    deployment, hpa, ingress, job, namespace, pod, pvc, replicaset, service, statefulset, typed,
};

/// Which objects a row judges.
#[derive(Debug, Clone, Copy)]
pub enum Selector {
    /// One group and kind.
    Kind {
        /// API group (empty for the core group).
        group: &'static str,
        /// Kind.
        kind: &'static str,
    },
    /// Any kind whose object has a shape (Crossplane's managed resources, composites and
    /// claims live in the groups their providers and users choose).
    Shape {
        /// The shape in words, for the docs.
        describe: &'static str,
        /// Whether an object has it.
        test: fn(&Value) -> bool,
    },
}

/// How a row judges.
#[derive(Debug, Clone, Copy)]
enum Rule {
    Conditions(Conditions),
    Phases(Phases),
    /// Code of its own, with what the states mean (Healthy, Progressing, Degraded).
    Code(fn(&Value) -> Health, [&'static str; 3]),
}

/// A kind with a built-in health rule.
#[derive(Debug, Clone, Copy)]
pub struct BuiltInKind {
    /// Who defines the kind: `Kubernetes`, `cert-manager`, …
    pub owner: &'static str,
    /// Which objects.
    pub selector: Selector,
    rule: Rule,
}

impl BuiltInKind {
    /// The health of `object` by this row's rule.
    #[must_use]
    pub fn assess(&self, object: &Value) -> Health {
        match &self.rule {
            Rule::Conditions(conditions) => conditions.assess(object),
            Rule::Phases(phases) => phases.assess(object),
            Rule::Code(assess, _) => assess(object),
        }
    }

    /// What Healthy, Progressing and Degraded mean for the kind.
    #[must_use]
    pub fn meaning(&self) -> Meaning {
        match &self.rule {
            Rule::Conditions(conditions) => conditions.meaning(),
            Rule::Phases(phases) => phases.meaning(),
            Rule::Code(_, [healthy, progressing, degraded]) => Meaning {
                healthy: (*healthy).to_owned(),
                progressing: (*progressing).to_owned(),
                degraded: (*degraded).to_owned(),
            },
        }
    }

    fn selects(&self, group: &str, kind: &str, object: &Value) -> bool {
        match self.selector {
            Selector::Kind { group: g, kind: k } => g == group && k == kind,
            Selector::Shape { test, .. } => test(object),
        }
    }
}

/// Every kind with a built-in rule, in the order of the reference docs.
#[must_use]
pub fn built_in_kinds() -> &'static [BuiltInKind] {
    &KINDS
}

/// The row judging `object` of `group` and `kind`: a row for the kind, else a shape row.
#[must_use]
pub fn built_in_kind(group: &str, kind: &str, object: &Value) -> Option<&'static BuiltInKind> {
    let by_kind = KINDS
        .iter()
        .filter(|row| matches!(row.selector, Selector::Kind { .. }))
        .find(|row| row.selects(group, kind, object));
    by_kind.or_else(|| {
        KINDS
            .iter()
            .filter(|row| matches!(row.selector, Selector::Shape { .. }))
            .find(|row| row.selects(group, kind, object))
    })
}

/// The reference page of the built-in rules (`docs/src/reference/health-rules.md`), Markdown.
#[must_use]
pub fn reference() -> String {
    let mut page = String::from(
        "# Built-in health rules\n\n\
         <!-- Generated from flotilla_core::health::built_in_kinds(); a test checks it. -->\n\n\
         Flotilla judges these kinds by rules of its own. A kind that is not listed is judged \
         by the status conventions (see [Health](../concepts/health.md)); a Lua check \
         configured for a kind replaces its rule. An object being deleted is Progressing \
         whatever its kind.\n",
    );
    let mut owner = "";
    for row in built_in_kinds() {
        if row.owner != owner {
            owner = row.owner;
            page.push_str(&format!(
                "\n## {owner}\n\n| Group | Kind | Healthy | Progressing | Degraded |\n|---|---|---|---|---|\n"
            ));
        }
        let (group, kind) = match row.selector {
            Selector::Kind { group: "", kind } => ("(core)".to_owned(), format!("`{kind}`")),
            Selector::Kind { group, kind } => (format!("`{group}`"), format!("`{kind}`")),
            Selector::Shape { describe, .. } => ("any".to_owned(), describe.to_owned()),
        };
        let meaning = row.meaning();
        page.push_str(&format!(
            "| {group} | {kind} | {} | {} | {} |\n",
            meaning.healthy, meaning.progressing, meaning.degraded
        ));
    }
    page
}

const fn kind(
    owner: &'static str,
    group: &'static str,
    kind: &'static str,
    rule: Rule,
) -> BuiltInKind {
    BuiltInKind {
        owner,
        selector: Selector::Kind { group, kind },
        rule,
    }
}

const K8S: &str = "Kubernetes";
const FLOTILLA: &str = "Flotilla and Argo CD";
const CERT_MANAGER: &str = "cert-manager";
const CROSSPLANE: &str = "Crossplane";
const CNPG: &str = "CloudNativePG";
const STRIMZI: &str = "Strimzi";
const KEDA: &str = "KEDA";
const ESO: &str = "External Secrets";
const ROLLOUTS: &str = "Argo Rollouts";
const FLUX: &str = "Flux";
const KNATIVE: &str = "Knative";
const CAPI: &str = "Cluster API";
const PROMETHEUS: &str = "Prometheus Operator";
const GATEWAY: &str = "Gateway API";

/// `Ready`, and nothing else.
const READY: Rule = Rule::Conditions(Conditions::READY);

/// Flux's kstatus conditions: `Reconciling` while at work, `Stalled` when it gave up.
const FLUX_CONDITIONS: Conditions = Conditions {
    ready: &["Ready"],
    busy: &["Reconciling"],
    blocking: &["Stalled"],
    paused: &[],
    waiting: &["DependencyNotReady", "Progressing", "ProgressingWithRetry"],
    suspend: Some("/spec/suspend"),
    severity: false,
};
const FLUX_RULE: Rule = Rule::Conditions(FLUX_CONDITIONS);

/// Crossplane's managed resources, composites and claims: `Synced` (the last reconcile
/// succeeded) and `Ready` (the external resource is available).
const CROSSPLANE_RESOURCE: Rule = Rule::Conditions(Conditions {
    ready: &["Synced", "Ready"],
    waiting: &["Creating", "Deleting", "ReconcilePaused"],
    ..Conditions::READY
});

/// Crossplane packages: installed and their runtime healthy.
const CROSSPLANE_PACKAGE: Rule = Rule::Conditions(Conditions {
    ready: &["Installed", "Healthy"],
    waiting: &[
        "UnpackingPackage",
        "InactivePackageRevision",
        "UnknownPackageRevisionHealth",
    ],
    ..Conditions::READY
});

/// Strimzi: `Ready`, or `NotReady` True while the operator creates the cluster.
const STRIMZI_RULE: Rule = Rule::Conditions(Conditions {
    blocking: &["NotReady"],
    waiting: &["Creating"],
    ..Conditions::READY
});

/// KEDA: `Ready`, Suspended while `Paused`.
const KEDA_RULE: Rule = Rule::Conditions(Conditions {
    paused: &["Paused"],
    ..Conditions::READY
});

/// Prometheus Operator: pods `Available` and the last reconcile `Reconciled`; `spec.paused`.
const PROMETHEUS_RULE: Rule = Rule::Conditions(Conditions {
    ready: &["Available", "Reconciled"],
    waiting: &["NoPodReady", "SomePodsNotReady"],
    suspend: Some("/spec/paused"),
    ..Conditions::READY
});

/// Gateway API: accepted by its controller and programmed into the data plane.
const GATEWAY_RULE: Rule = Rule::Conditions(Conditions {
    ready: &["Accepted", "Programmed"],
    waiting: &["Pending"],
    ..Conditions::READY
});

/// Argo Rollouts analyses and experiments: phases; Inconclusive waits for a person.
const ROLLOUTS_RUN: Rule = Rule::Phases(Phases {
    field: "/status/phase",
    healthy: &["Successful"],
    degraded: &["Failed", "Error"],
    suspended: &["Inconclusive"],
    ready: None,
    messages: &["/status/message"],
});

/// Cluster API phases of a machine, machine deployment or pool: `Running`.
const fn capi_running(ready: Option<&'static str>) -> Rule {
    Rule::Phases(Phases {
        field: "/status/phase",
        healthy: &["Running"],
        degraded: &["Failed"],
        suspended: &[],
        ready,
        messages: &["/status/failureMessage"],
    })
}

/// Cluster API's `Ready` condition, whose severity says how bad a False one is.
const CAPI_READY: Rule = Rule::Conditions(Conditions {
    severity: true,
    ..Conditions::READY
});

/// ACME orders and challenges: `status.state`.
const ACME_STATE: Rule = Rule::Phases(Phases {
    field: "/status/state",
    healthy: &["valid"],
    degraded: &["invalid", "errored", "expired"],
    suspended: &[],
    ready: None,
    messages: &["/status/reason"],
});

/// A Flux HelmRepository of type `oci` is not reconciled and has no status.
fn helm_repository(object: &Value) -> Health {
    if object.pointer("/spec/type").and_then(Value::as_str) == Some("oci") {
        return Health::new(
            HealthStatus::Healthy,
            "OCI Helm repositories are not reconciled",
        );
    }
    FLUX_CONDITIONS.assess(object)
}

/// A Crossplane managed resource: it says what the provider should create.
fn managed_resource(object: &Value) -> bool {
    object.pointer("/spec/forProvider").is_some()
}

/// A Crossplane composite resource or claim: it names (or was given) a composition.
fn composite_or_claim(object: &Value) -> bool {
    let spec = object.get("spec");
    [
        "compositionRef",
        "compositionSelector",
        "compositionRevisionRef",
        "resourceRefs",
    ]
    .iter()
    .any(|field| spec.and_then(|s| s.get(field)).is_some())
        || object.pointer("/spec/crossplane/compositionRef").is_some()
}

static KINDS: [BuiltInKind; 76] = [
    kind(
        K8S,
        "apps",
        "Deployment",
        Rule::Code(
            |o| typed(o, deployment::assess),
            [
                "all replicas updated and available for the current generation (Suspended: `spec.paused`)",
                "a rollout in progress, or the generation not observed yet",
                "the progress deadline exceeded",
            ],
        ),
    ),
    kind(
        K8S,
        "apps",
        "StatefulSet",
        Rule::Code(
            |o| typed(o, statefulset::assess),
            [
                "all replicas ready and updated to the current revision",
                "a rollout in progress, or the generation not observed yet",
                "never (its Pods are judged on their own)",
            ],
        ),
    ),
    kind(
        K8S,
        "apps",
        "DaemonSet",
        Rule::Code(
            |o| typed(o, daemonset::assess),
            [
                "every scheduled Pod updated and available",
                "a rollout in progress, or the generation not observed yet",
                "never (its Pods are judged on their own)",
            ],
        ),
    ),
    kind(
        K8S,
        "apps",
        "ReplicaSet",
        Rule::Code(
            |o| typed(o, replicaset::assess),
            [
                "all replicas available",
                "replicas still becoming available",
                "a `ReplicaFailure` condition",
            ],
        ),
    ),
    kind(
        K8S,
        "",
        "Pod",
        Rule::Code(
            |o| typed(o, pod::assess),
            [
                "running and ready, or succeeded",
                "pending, or running but not ready",
                "failed, or a container crash-looping or unable to pull its image",
            ],
        ),
    ),
    kind(
        K8S,
        "batch",
        "Job",
        Rule::Code(
            |o| typed(o, job::assess),
            [
                "`Complete` (Suspended: a `Suspended` condition)",
                "running",
                "failed",
            ],
        ),
    ),
    kind(
        K8S,
        "",
        "PersistentVolumeClaim",
        Rule::Code(|o| typed(o, pvc::assess), ["bound", "pending", "lost"]),
    ),
    kind(
        K8S,
        "",
        "Service",
        Rule::Code(
            |o| typed(o, service::assess),
            [
                "any type but a LoadBalancer, or a LoadBalancer with an address",
                "a LoadBalancer waiting for its address",
                "never",
            ],
        ),
    ),
    kind(
        K8S,
        "networking.k8s.io",
        "Ingress",
        Rule::Code(
            |o| typed(o, ingress::assess),
            [
                "a load balancer address",
                "waiting for a load balancer address",
                "never",
            ],
        ),
    ),
    kind(
        K8S,
        "extensions",
        "Ingress",
        Rule::Code(
            |o| typed(o, ingress::assess),
            [
                "a load balancer address",
                "waiting for a load balancer address",
                "never",
            ],
        ),
    ),
    kind(
        K8S,
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        Rule::Code(
            |o| typed(o, crd::assess),
            [
                "`Established`",
                "not Established yet",
                "`NamesAccepted` `False`",
            ],
        ),
    ),
    kind(
        K8S,
        "",
        "Namespace",
        Rule::Code(
            |o| typed(o, namespace::assess),
            ["active", "terminating", "never"],
        ),
    ),
    kind(
        K8S,
        "apiregistration.k8s.io",
        "APIService",
        Rule::Code(
            |o| typed(o, apiservice::assess),
            [
                "`Available` `True`",
                "`Available` missing or not True",
                "never",
            ],
        ),
    ),
    kind(
        K8S,
        "autoscaling",
        "HorizontalPodAutoscaler",
        Rule::Code(
            |o| typed(o, hpa::assess),
            [
                "conditions reported and none failing",
                "no conditions yet",
                "`AbleToScale` or `ScalingActive` `False` with a `Failed…` reason",
            ],
        ),
    ),
    kind(
        FLOTILLA,
        "flotilla.dev",
        "Application",
        Rule::Code(
            application::assess,
            [
                "its `status.health` is Healthy",
                "no health reported yet, or its `status.health` is Progressing",
                "its `status.health` is Degraded",
            ],
        ),
    ),
    kind(
        FLOTILLA,
        "argoproj.io",
        "Application",
        Rule::Code(
            application::assess,
            [
                "its `status.health` is Healthy",
                "no health reported yet, or its `status.health` is Progressing",
                "its `status.health` is Degraded",
            ],
        ),
    ),
    kind(
        CERT_MANAGER,
        "cert-manager.io",
        "Certificate",
        Rule::Conditions(Conditions {
            busy: &["Issuing"],
            ..Conditions::READY
        }),
    ),
    kind(
        CERT_MANAGER,
        "cert-manager.io",
        "CertificateRequest",
        Rule::Conditions(Conditions {
            blocking: &["Denied", "InvalidRequest"],
            waiting: &["Pending"],
            ..Conditions::READY
        }),
    ),
    kind(CERT_MANAGER, "cert-manager.io", "Issuer", READY),
    kind(CERT_MANAGER, "cert-manager.io", "ClusterIssuer", READY),
    kind(CERT_MANAGER, "acme.cert-manager.io", "Order", ACME_STATE),
    kind(
        CERT_MANAGER,
        "acme.cert-manager.io",
        "Challenge",
        ACME_STATE,
    ),
    BuiltInKind {
        owner: CROSSPLANE,
        selector: Selector::Shape {
            describe: "managed resource (has `spec.forProvider`)",
            test: managed_resource,
        },
        rule: CROSSPLANE_RESOURCE,
    },
    BuiltInKind {
        owner: CROSSPLANE,
        selector: Selector::Shape {
            describe: "composite resource or claim (has `spec.compositionRef`, `compositionSelector`, `compositionRevisionRef`, `resourceRefs` or `crossplane.compositionRef`)",
            test: composite_or_claim,
        },
        rule: CROSSPLANE_RESOURCE,
    },
    kind(
        CROSSPLANE,
        "pkg.crossplane.io",
        "Provider",
        CROSSPLANE_PACKAGE,
    ),
    kind(
        CROSSPLANE,
        "pkg.crossplane.io",
        "Function",
        CROSSPLANE_PACKAGE,
    ),
    kind(
        CROSSPLANE,
        "pkg.crossplane.io",
        "Configuration",
        CROSSPLANE_PACKAGE,
    ),
    kind(
        CROSSPLANE,
        "apiextensions.crossplane.io",
        "CompositeResourceDefinition",
        Rule::Conditions(Conditions {
            ready: &["Established"],
            ..Conditions::READY
        }),
    ),
    kind(
        CNPG,
        "postgresql.cnpg.io",
        "Cluster",
        Rule::Code(
            cnpg_cluster::assess,
            [
                "phase `Cluster in healthy state` and `Ready` not False",
                "any other phase (setting up, creating replicas, switching over, upgrading)",
                "a phase saying the operator cannot go on (`cannot`, `unable`, `failed`, `error`)",
            ],
        ),
    ),
    kind(
        CNPG,
        "postgresql.cnpg.io",
        "Backup",
        Rule::Phases(Phases {
            field: "/status/phase",
            healthy: &["completed"],
            degraded: &["failed"],
            suspended: &[],
            ready: None,
            messages: &["/status/error"],
        }),
    ),
    kind(STRIMZI, "kafka.strimzi.io", "Kafka", STRIMZI_RULE),
    kind(STRIMZI, "kafka.strimzi.io", "KafkaTopic", STRIMZI_RULE),
    kind(STRIMZI, "kafka.strimzi.io", "KafkaUser", STRIMZI_RULE),
    kind(STRIMZI, "kafka.strimzi.io", "KafkaConnect", STRIMZI_RULE),
    kind(STRIMZI, "kafka.strimzi.io", "KafkaConnector", STRIMZI_RULE),
    kind(
        STRIMZI,
        "kafka.strimzi.io",
        "KafkaMirrorMaker2",
        STRIMZI_RULE,
    ),
    kind(STRIMZI, "kafka.strimzi.io", "KafkaBridge", STRIMZI_RULE),
    kind(KEDA, "keda.sh", "ScaledObject", KEDA_RULE),
    kind(KEDA, "keda.sh", "ScaledJob", KEDA_RULE),
    kind(ESO, "external-secrets.io", "ExternalSecret", READY),
    kind(ESO, "external-secrets.io", "ClusterExternalSecret", READY),
    kind(ESO, "external-secrets.io", "SecretStore", READY),
    kind(ESO, "external-secrets.io", "ClusterSecretStore", READY),
    kind(ESO, "external-secrets.io", "PushSecret", READY),
    kind(
        ROLLOUTS,
        "argoproj.io",
        "Rollout",
        Rule::Code(
            argo_rollout::assess,
            [
                "phase `Healthy`",
                "phase `Progressing`, none yet, or the generation not observed yet",
                "phase `Degraded` (Suspended: `spec.paused` or phase `Paused`)",
            ],
        ),
    ),
    kind(ROLLOUTS, "argoproj.io", "AnalysisRun", ROLLOUTS_RUN),
    kind(ROLLOUTS, "argoproj.io", "Experiment", ROLLOUTS_RUN),
    kind(FLUX, "helm.toolkit.fluxcd.io", "HelmRelease", FLUX_RULE),
    kind(
        FLUX,
        "kustomize.toolkit.fluxcd.io",
        "Kustomization",
        FLUX_RULE,
    ),
    kind(FLUX, "source.toolkit.fluxcd.io", "GitRepository", FLUX_RULE),
    kind(
        FLUX,
        "source.toolkit.fluxcd.io",
        "HelmRepository",
        Rule::Code(
            helm_repository,
            [
                "`Ready` `True`, or `spec.type: oci` (not reconciled)",
                "`Ready` missing or `Unknown`, `Reconciling` `True`, or the generation not observed yet",
                "`Ready` `False` or `Stalled` `True` (Suspended: `spec.suspend: true`)",
            ],
        ),
    ),
    kind(FLUX, "source.toolkit.fluxcd.io", "OCIRepository", FLUX_RULE),
    kind(FLUX, "source.toolkit.fluxcd.io", "HelmChart", FLUX_RULE),
    kind(FLUX, "source.toolkit.fluxcd.io", "Bucket", FLUX_RULE),
    kind(
        FLUX,
        "image.toolkit.fluxcd.io",
        "ImageRepository",
        FLUX_RULE,
    ),
    kind(FLUX, "image.toolkit.fluxcd.io", "ImagePolicy", FLUX_RULE),
    kind(
        FLUX,
        "image.toolkit.fluxcd.io",
        "ImageUpdateAutomation",
        FLUX_RULE,
    ),
    kind(
        FLUX,
        "notification.toolkit.fluxcd.io",
        "Receiver",
        FLUX_RULE,
    ),
    kind(KNATIVE, "serving.knative.dev", "Service", READY),
    kind(KNATIVE, "serving.knative.dev", "Route", READY),
    kind(KNATIVE, "serving.knative.dev", "Configuration", READY),
    kind(KNATIVE, "serving.knative.dev", "Revision", READY),
    kind(KNATIVE, "eventing.knative.dev", "Broker", READY),
    kind(KNATIVE, "eventing.knative.dev", "Trigger", READY),
    kind(
        CAPI,
        "cluster.x-k8s.io",
        "Cluster",
        Rule::Phases(Phases {
            field: "/status/phase",
            healthy: &["Provisioned"],
            degraded: &["Failed"],
            suspended: &[],
            ready: Some("Ready"),
            messages: &["/status/failureMessage"],
        }),
    ),
    kind(
        CAPI,
        "cluster.x-k8s.io",
        "Machine",
        capi_running(Some("Ready")),
    ),
    kind(
        CAPI,
        "cluster.x-k8s.io",
        "MachineDeployment",
        capi_running(None),
    ),
    kind(CAPI, "cluster.x-k8s.io", "MachinePool", capi_running(None)),
    kind(CAPI, "cluster.x-k8s.io", "MachineSet", CAPI_READY),
    kind(
        CAPI,
        "controlplane.cluster.x-k8s.io",
        "KubeadmControlPlane",
        CAPI_READY,
    ),
    kind(
        PROMETHEUS,
        "monitoring.coreos.com",
        "Prometheus",
        PROMETHEUS_RULE,
    ),
    kind(
        PROMETHEUS,
        "monitoring.coreos.com",
        "PrometheusAgent",
        PROMETHEUS_RULE,
    ),
    kind(
        PROMETHEUS,
        "monitoring.coreos.com",
        "Alertmanager",
        PROMETHEUS_RULE,
    ),
    kind(
        PROMETHEUS,
        "monitoring.coreos.com",
        "ThanosRuler",
        PROMETHEUS_RULE,
    ),
    kind(
        GATEWAY,
        "gateway.networking.k8s.io",
        "Gateway",
        GATEWAY_RULE,
    ),
    kind(
        GATEWAY,
        "gateway.networking.k8s.io",
        "GatewayClass",
        Rule::Conditions(Conditions {
            ready: &["Accepted"],
            waiting: &["Pending", "Waiting"],
            ..Conditions::READY
        }),
    ),
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::*;
    use crate::health::{HealthStatus, assess, cases::assert_recorded};
    use crate::manifest::group_of;

    /// One kind walked through its operator's statuses (`testdata/operator-walks.yaml`).
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Walk {
        api_version: String,
        kind: String,
        spec: Value,
        steps: Vec<Step>,
    }

    #[derive(Deserialize)]
    struct Step {
        status: Value,
        #[serde(default)]
        spec: Option<Value>,
        health: HealthStatus,
        #[serde(default)]
        message: Option<String>,
    }

    fn walks() -> Vec<Walk> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/health/testdata/operator-walks.yaml"
        );
        let text = std::fs::read_to_string(path).unwrap();
        serde_saphyr::from_str(&text).unwrap()
    }

    #[test]
    fn every_operator_kind_walks_from_progressing_to_healthy_and_degraded() {
        let mut walked: BTreeSet<(String, String)> = BTreeSet::new();
        let mut shapes: BTreeSet<&str> = BTreeSet::new();
        for walk in walks() {
            let group = group_of(&walk.api_version).to_owned();
            let mut seen = Vec::new();
            for step in &walk.steps {
                let object = json!({
                    "apiVersion": walk.api_version, "kind": walk.kind,
                    "metadata": {"name": "x", "namespace": "ops", "generation": 1},
                    "spec": step.spec.as_ref().unwrap_or(&walk.spec), "status": step.status,
                });
                let row = built_in_kind(&group, &walk.kind, &object)
                    .unwrap_or_else(|| panic!("{group}/{} has a built-in rule", walk.kind));
                if let Selector::Shape { describe, .. } = row.selector {
                    shapes.insert(describe);
                }
                let health = assess(&object);
                assert_eq!(
                    health.status, step.health,
                    "{group}/{} {}",
                    walk.kind, step.status
                );
                if let Some(message) = &step.message {
                    assert_eq!(
                        &health.message, message,
                        "{group}/{} {}",
                        walk.kind, step.status
                    );
                }
                seen.push(health.status);
            }
            let first = seen.first().copied();
            assert_eq!(
                first,
                Some(HealthStatus::Progressing),
                "{group}/{} starts Progressing",
                walk.kind
            );
            for status in [HealthStatus::Healthy, HealthStatus::Degraded] {
                assert!(
                    seen.contains(&status),
                    "{group}/{} reaches {status}",
                    walk.kind
                );
            }
            walked.insert((group, walk.kind));
        }
        for row in built_in_kinds()
            .iter()
            .filter(|row| row.owner != K8S && row.owner != FLOTILLA)
        {
            match row.selector {
                Selector::Kind { group, kind } => assert!(
                    walked.contains(&(group.to_owned(), kind.to_owned())),
                    "{group}/{kind} is walked in operator-walks.yaml"
                ),
                Selector::Shape { describe, .. } => {
                    assert!(shapes.contains(describe), "a walk has the shape {describe}");
                }
            }
        }
        assert!(walked.len() >= 40, "{} operator kinds", walked.len());
    }

    #[test]
    fn recorded_statuses() {
        assert_recorded("certificate.yaml");
    }

    #[test]
    fn kinds_are_listed_once() {
        let mut kinds = BTreeSet::new();
        for row in built_in_kinds() {
            if let Selector::Kind { group, kind } = row.selector {
                assert!(kinds.insert((group, kind)), "{group}/{kind} listed twice");
            }
        }
    }

    /// `docs/src/reference/health-rules.md` is what [`reference`] generates; with
    /// `FLOTILLA_WRITE_DOCS=1` the test writes it.
    #[test]
    fn the_reference_page_is_generated_from_the_table() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/src/reference/health-rules.md"
        );
        let generated = reference();
        if std::env::var_os("FLOTILLA_WRITE_DOCS").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let written = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            written == generated,
            "{path} differs from flotilla_core::health::reference(); run with FLOTILLA_WRITE_DOCS=1 to write it"
        );
    }
}
