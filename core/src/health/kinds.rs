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

/// Every kind with a built-in rule, in the order of the reference docs: the families' kinds,
/// then the shapes.
pub fn built_in_kinds() -> impl Iterator<Item = BuiltInKind> {
    FAMILIES
        .iter()
        .flat_map(|family| {
            family.kinds.iter().map(|kind| BuiltInKind {
                owner: family.owner,
                selector: Selector::Kind {
                    group: family.group,
                    kind,
                },
                rule: family.rule,
            })
        })
        .chain(SHAPES)
}

/// The row judging `object` of `group` and `kind`: a row for the kind, else a shape row.
#[must_use]
pub fn built_in_kind(group: &str, kind: &str, object: &Value) -> Option<BuiltInKind> {
    built_in_kinds()
        .find(|row| {
            matches!(row.selector, Selector::Kind { .. }) && row.selects(group, kind, object)
        })
        .or_else(|| {
            SHAPES
                .into_iter()
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
    let mut owners: Vec<&str> = Vec::new();
    for row in built_in_kinds() {
        if !owners.contains(&row.owner) {
            owners.push(row.owner);
        }
    }
    let rows = owners.iter().flat_map(|owner| {
        built_in_kinds()
            .filter(move |row| row.owner == *owner)
            .enumerate()
    });
    for (index, row) in rows {
        if index == 0 {
            let owner = row.owner;
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

/// Kinds of one group judged by one rule.
struct Family {
    owner: &'static str,
    group: &'static str,
    kinds: &'static [&'static str],
    rule: Rule,
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

/// Ingress, in either group.
const INGRESS: Rule = Rule::Code(
    |o| typed(o, ingress::assess),
    [
        "a load balancer address",
        "waiting for a load balancer address",
        "never",
    ],
);

/// A nested Application, Flotilla's or Argo CD's.
const APPLICATION: Rule = Rule::Code(
    application::assess,
    [
        "its `status.health` is Healthy",
        "no health reported yet, or its `status.health` is Progressing",
        "its `status.health` is Degraded",
    ],
);

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

static FAMILIES: &[Family] = &[
    Family {
        owner: K8S,
        group: "apps",
        kinds: &["Deployment"],
        rule: Rule::Code(
            |o| typed(o, deployment::assess),
            [
                "all replicas updated and available for the current generation (Suspended: `spec.paused`)",
                "a rollout in progress, or the generation not observed yet",
                "the progress deadline exceeded",
            ],
        ),
    },
    Family {
        owner: K8S,
        group: "apps",
        kinds: &["StatefulSet"],
        rule: Rule::Code(
            |o| typed(o, statefulset::assess),
            [
                "all replicas ready and updated to the current revision",
                "a rollout in progress, or the generation not observed yet",
                "never (its Pods are judged on their own)",
            ],
        ),
    },
    Family {
        owner: K8S,
        group: "apps",
        kinds: &["DaemonSet"],
        rule: Rule::Code(
            |o| typed(o, daemonset::assess),
            [
                "every scheduled Pod updated and available",
                "a rollout in progress, or the generation not observed yet",
                "never (its Pods are judged on their own)",
            ],
        ),
    },
    Family {
        owner: K8S,
        group: "apps",
        kinds: &["ReplicaSet"],
        rule: Rule::Code(
            |o| typed(o, replicaset::assess),
            [
                "all replicas available",
                "replicas still becoming available",
                "a `ReplicaFailure` condition",
            ],
        ),
    },
    Family {
        owner: K8S,
        group: "",
        kinds: &["Pod"],
        rule: Rule::Code(
            |o| typed(o, pod::assess),
            [
                "running and ready, or succeeded",
                "pending, or running but not ready",
                "failed, or a container crash-looping or unable to pull its image",
            ],
        ),
    },
    Family {
        owner: K8S,
        group: "batch",
        kinds: &["Job"],
        rule: Rule::Code(
            |o| typed(o, job::assess),
            [
                "`Complete` (Suspended: a `Suspended` condition)",
                "running",
                "failed",
            ],
        ),
    },
    Family {
        owner: K8S,
        group: "",
        kinds: &["PersistentVolumeClaim"],
        rule: Rule::Code(|o| typed(o, pvc::assess), ["bound", "pending", "lost"]),
    },
    Family {
        owner: K8S,
        group: "",
        kinds: &["Service"],
        rule: Rule::Code(
            |o| typed(o, service::assess),
            [
                "any type but a LoadBalancer, or a LoadBalancer with an address",
                "a LoadBalancer waiting for its address",
                "never",
            ],
        ),
    },
    Family {
        owner: K8S,
        group: "networking.k8s.io",
        kinds: &["Ingress"],
        rule: INGRESS,
    },
    Family {
        owner: K8S,
        group: "extensions",
        kinds: &["Ingress"],
        rule: INGRESS,
    },
    Family {
        owner: K8S,
        group: "apiextensions.k8s.io",
        kinds: &["CustomResourceDefinition"],
        rule: Rule::Code(
            |o| typed(o, crd::assess),
            [
                "`Established`",
                "not Established yet",
                "`NamesAccepted` `False`",
            ],
        ),
    },
    Family {
        owner: K8S,
        group: "",
        kinds: &["Namespace"],
        rule: Rule::Code(
            |o| typed(o, namespace::assess),
            ["active", "terminating", "never"],
        ),
    },
    Family {
        owner: K8S,
        group: "apiregistration.k8s.io",
        kinds: &["APIService"],
        rule: Rule::Code(
            |o| typed(o, apiservice::assess),
            [
                "`Available` `True`",
                "`Available` missing or not True",
                "never",
            ],
        ),
    },
    Family {
        owner: K8S,
        group: "autoscaling",
        kinds: &["HorizontalPodAutoscaler"],
        rule: Rule::Code(
            |o| typed(o, hpa::assess),
            [
                "conditions reported and none failing",
                "no conditions yet",
                "`AbleToScale` or `ScalingActive` `False` with a `Failed…` reason",
            ],
        ),
    },
    Family {
        owner: FLOTILLA,
        group: "flotilla.dev",
        kinds: &["Application"],
        rule: APPLICATION,
    },
    Family {
        owner: FLOTILLA,
        group: "argoproj.io",
        kinds: &["Application"],
        rule: APPLICATION,
    },
    Family {
        owner: CERT_MANAGER,
        group: "cert-manager.io",
        kinds: &["Certificate"],
        rule: Rule::Conditions(Conditions {
            busy: &["Issuing"],
            ..Conditions::READY
        }),
    },
    Family {
        owner: CERT_MANAGER,
        group: "cert-manager.io",
        kinds: &["CertificateRequest"],
        rule: Rule::Conditions(Conditions {
            blocking: &["Denied", "InvalidRequest"],
            waiting: &["Pending"],
            ..Conditions::READY
        }),
    },
    Family {
        owner: CERT_MANAGER,
        group: "cert-manager.io",
        kinds: &["Issuer", "ClusterIssuer"],
        rule: READY,
    },
    Family {
        owner: CERT_MANAGER,
        group: "acme.cert-manager.io",
        kinds: &["Order", "Challenge"],
        rule: ACME_STATE,
    },
    Family {
        owner: CROSSPLANE,
        group: "pkg.crossplane.io",
        kinds: &["Provider", "Function", "Configuration"],
        rule: CROSSPLANE_PACKAGE,
    },
    Family {
        owner: CROSSPLANE,
        group: "apiextensions.crossplane.io",
        kinds: &["CompositeResourceDefinition"],
        rule: Rule::Conditions(Conditions {
            ready: &["Established"],
            ..Conditions::READY
        }),
    },
    Family {
        owner: CNPG,
        group: "postgresql.cnpg.io",
        kinds: &["Cluster"],
        rule: Rule::Code(
            cnpg_cluster::assess,
            [
                "phase `Cluster in healthy state` and `Ready` not False",
                "any other phase (setting up, creating replicas, switching over, upgrading)",
                "a phase saying the operator cannot go on (`cannot`, `unable`, `failed`, `error`)",
            ],
        ),
    },
    Family {
        owner: CNPG,
        group: "postgresql.cnpg.io",
        kinds: &["Backup"],
        rule: Rule::Phases(Phases {
            field: "/status/phase",
            healthy: &["completed"],
            degraded: &["failed"],
            suspended: &[],
            ready: None,
            messages: &["/status/error"],
        }),
    },
    Family {
        owner: STRIMZI,
        group: "kafka.strimzi.io",
        kinds: &[
            "Kafka",
            "KafkaTopic",
            "KafkaUser",
            "KafkaConnect",
            "KafkaConnector",
            "KafkaMirrorMaker2",
            "KafkaBridge",
        ],
        rule: STRIMZI_RULE,
    },
    Family {
        owner: KEDA,
        group: "keda.sh",
        kinds: &["ScaledObject", "ScaledJob"],
        rule: KEDA_RULE,
    },
    Family {
        owner: ESO,
        group: "external-secrets.io",
        kinds: &[
            "ExternalSecret",
            "ClusterExternalSecret",
            "SecretStore",
            "ClusterSecretStore",
            "PushSecret",
        ],
        rule: READY,
    },
    Family {
        owner: ROLLOUTS,
        group: "argoproj.io",
        kinds: &["Rollout"],
        rule: Rule::Code(
            argo_rollout::assess,
            [
                "phase `Healthy`",
                "phase `Progressing`, none yet, or the generation not observed yet",
                "phase `Degraded` (Suspended: `spec.paused` or phase `Paused`)",
            ],
        ),
    },
    Family {
        owner: ROLLOUTS,
        group: "argoproj.io",
        kinds: &["AnalysisRun", "Experiment"],
        rule: ROLLOUTS_RUN,
    },
    Family {
        owner: FLUX,
        group: "helm.toolkit.fluxcd.io",
        kinds: &["HelmRelease"],
        rule: FLUX_RULE,
    },
    Family {
        owner: FLUX,
        group: "kustomize.toolkit.fluxcd.io",
        kinds: &["Kustomization"],
        rule: FLUX_RULE,
    },
    Family {
        owner: FLUX,
        group: "source.toolkit.fluxcd.io",
        kinds: &["GitRepository"],
        rule: FLUX_RULE,
    },
    Family {
        owner: FLUX,
        group: "source.toolkit.fluxcd.io",
        kinds: &["HelmRepository"],
        rule: Rule::Code(
            helm_repository,
            [
                "`Ready` `True`, or `spec.type: oci` (not reconciled)",
                "`Ready` missing or `Unknown`, `Reconciling` `True`, or the generation not observed yet",
                "`Ready` `False` or `Stalled` `True` (Suspended: `spec.suspend: true`)",
            ],
        ),
    },
    Family {
        owner: FLUX,
        group: "source.toolkit.fluxcd.io",
        kinds: &["OCIRepository", "HelmChart", "Bucket"],
        rule: FLUX_RULE,
    },
    Family {
        owner: FLUX,
        group: "image.toolkit.fluxcd.io",
        kinds: &["ImageRepository", "ImagePolicy", "ImageUpdateAutomation"],
        rule: FLUX_RULE,
    },
    Family {
        owner: FLUX,
        group: "notification.toolkit.fluxcd.io",
        kinds: &["Receiver"],
        rule: FLUX_RULE,
    },
    Family {
        owner: KNATIVE,
        group: "serving.knative.dev",
        kinds: &["Service", "Route", "Configuration", "Revision"],
        rule: READY,
    },
    Family {
        owner: KNATIVE,
        group: "eventing.knative.dev",
        kinds: &["Broker", "Trigger"],
        rule: READY,
    },
    Family {
        owner: CAPI,
        group: "cluster.x-k8s.io",
        kinds: &["Cluster"],
        rule: Rule::Phases(Phases {
            field: "/status/phase",
            healthy: &["Provisioned"],
            degraded: &["Failed"],
            suspended: &[],
            ready: Some("Ready"),
            messages: &["/status/failureMessage"],
        }),
    },
    Family {
        owner: CAPI,
        group: "cluster.x-k8s.io",
        kinds: &["Machine"],
        rule: capi_running(Some("Ready")),
    },
    Family {
        owner: CAPI,
        group: "cluster.x-k8s.io",
        kinds: &["MachineDeployment", "MachinePool"],
        rule: capi_running(None),
    },
    Family {
        owner: CAPI,
        group: "cluster.x-k8s.io",
        kinds: &["MachineSet"],
        rule: CAPI_READY,
    },
    Family {
        owner: CAPI,
        group: "controlplane.cluster.x-k8s.io",
        kinds: &["KubeadmControlPlane"],
        rule: CAPI_READY,
    },
    Family {
        owner: PROMETHEUS,
        group: "monitoring.coreos.com",
        kinds: &[
            "Prometheus",
            "PrometheusAgent",
            "Alertmanager",
            "ThanosRuler",
        ],
        rule: PROMETHEUS_RULE,
    },
    Family {
        owner: GATEWAY,
        group: "gateway.networking.k8s.io",
        kinds: &["Gateway"],
        rule: GATEWAY_RULE,
    },
    Family {
        owner: GATEWAY,
        group: "gateway.networking.k8s.io",
        kinds: &["GatewayClass"],
        rule: Rule::Conditions(Conditions {
            ready: &["Accepted"],
            waiting: &["Pending", "Waiting"],
            ..Conditions::READY
        }),
    },
];

/// Crossplane's kinds, whose groups their providers and users choose.
const SHAPES: [BuiltInKind; 2] = [
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
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;
    use crate::health::walks::operator_walks;
    use crate::health::{HealthStatus, assess, cases::assert_recorded};
    use crate::manifest::group_of;

    #[test]
    fn every_operator_kind_walks_from_progressing_to_healthy_and_degraded() {
        let mut walked: BTreeSet<(String, String)> = BTreeSet::new();
        let mut shapes: BTreeSet<&str> = BTreeSet::new();
        for walk in operator_walks() {
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
        for row in built_in_kinds().filter(|row| row.owner != K8S && row.owner != FLOTILLA) {
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
