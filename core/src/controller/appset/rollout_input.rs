//! The rollout step function's input as the ApplicationSet reconcile observes it: each generated
//! Application with its labels, whether this reconcile changes its spec, its observed status
//! (health, sync, revision, last operation) and the revision being rolled out, resolved in the
//! same reconcile, and the sync window that holds it back now, if any; plus the rollout status the
//! previous pass wrote. Pure: the clock, the resolved revisions and the projects are arguments.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::jiff::Timestamp;

use crate::api::application::ResourceStatus;
use crate::api::application_set::{PROMOTE_ANNOTATION, RolloutStrategy, StrategyType};
use crate::api::application_set_status::SyncStatusCode;
use crate::api::{Application, ApplicationSet, ApplicationSpec};
use crate::project::Projects;
use crate::project::windows::{Judge, SyncKind};
use crate::rollout::{ApplicationState, ObservedStatus, OperationState, RolloutInput};

/// The strategy of `appset` when it is a RollingSync, else `None`.
#[must_use]
pub fn rolling_sync(appset: &ApplicationSet) -> Option<&RolloutStrategy> {
    appset
        .spec
        .strategy
        .as_ref()
        .filter(|s| s.type_ == StrategyType::RollingSync)
}

/// A source of a generated Application: where one of its revisions is resolved — a commit of a
/// git repository, or, when it names a `chart`, the version of that chart in a chart repository
/// or OCI registry that `target_revision` (a version or range) selects — and the Application's
/// project, whose repository Secrets it is read with (as the Application controller reads it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceRevision {
    pub repo_url: String,
    /// The chart's name (empty for a git source).
    pub chart: String,
    pub target_revision: String,
    /// `helm.passCredentials` of a chart source (how its repository is read).
    pub pass_credentials: bool,
    /// The Application's `spec.project`: project-scoped repository Secrets serve only it.
    pub project: String,
}

impl SourceRevision {
    /// The sources of `application`, in order (its `sources`, or its one `source`).
    #[must_use]
    pub fn of(application: &Application) -> Vec<Self> {
        application
            .spec
            .all_sources()
            .iter()
            .map(|source| Self {
                repo_url: source.repo_url.clone(),
                chart: source.chart.clone(),
                target_revision: source.target_revision.clone(),
                pass_credentials: !source.chart.is_empty()
                    && source.helm.as_ref().is_some_and(|h| h.pass_credentials),
                project: application.spec.project.clone(),
            })
            .collect()
    }
}

/// The distinct sources of `desired`, each resolved once per reconcile.
#[must_use]
pub fn sources(desired: &[Application]) -> BTreeSet<SourceRevision> {
    desired.iter().flat_map(SourceRevision::of).collect()
}

/// The revisions being rolled out for `application`: one per source, in order, as `resolved`
/// has them; none while a source is not resolved.
#[must_use]
pub fn target_revisions(
    application: &Application,
    resolved: &BTreeMap<SourceRevision, String>,
) -> Vec<String> {
    SourceRevision::of(application)
        .iter()
        .map(|source| resolved.get(source).cloned())
        .collect::<Option<Vec<String>>>()
        .unwrap_or_default()
}

/// Everything one pass of the rollout reads. `desired` are the generated Applications,
/// `existing` the live ones, `updated` the names this reconcile updates, `resolved` the commit
/// of each source. `existing` may be borrowed from a store (`E = Arc<Application>`).
pub struct Observation<'a, E: Borrow<Application> = Application> {
    pub now: Timestamp,
    pub strategy: &'a RolloutStrategy,
    pub desired: &'a [Application],
    pub existing: &'a [E],
    pub updated: &'a BTreeSet<String>,
    pub resolved: &'a BTreeMap<SourceRevision, String>,
    pub prior: &'a ApplicationSet,
    /// The projects whose sync windows may hold an Application back.
    pub projects: &'a Projects,
}

/// The step function's input for `observation`.
#[must_use]
pub fn rollout_input<E: Borrow<Application>>(observation: &Observation<'_, E>) -> RolloutInput {
    let live: BTreeMap<&str, &Application> = observation
        .existing
        .iter()
        .map(Borrow::borrow)
        .map(|app| (name(app), app))
        .collect();
    let mut windows = Judge::new(observation.projects, SyncKind::Automated, observation.now);
    let applications = observation
        .desired
        .iter()
        .map(|desired| {
            let current = live.get(name(desired)).copied();
            ApplicationState {
                name: name(desired).to_string(),
                labels: desired.metadata.labels.clone().unwrap_or_default(),
                exists: current.is_some(),
                spec_changed: current.is_some_and(|current| {
                    observation.updated.contains(name(desired))
                        && spec_changed(&desired.spec, &current.spec)
                }),
                target_revisions: target_revisions(desired, observation.resolved),
                previous_revisions: current
                    .map(|current| {
                        previous_revisions(
                            current,
                            &target_revisions(desired, observation.resolved),
                        )
                    })
                    .unwrap_or_default(),
                status: current.map(observed_status).unwrap_or_default(),
                sync_blocked_by: windows.block_or_invalid(desired),
                destination: desired.spec.destination.clone(),
            }
        })
        .collect();
    RolloutInput {
        now: observation.now,
        application_set: observation.prior.metadata.name.clone().unwrap_or_default(),
        strategy: observation.strategy.clone(),
        applications,
        prior_application_status: observation
            .prior
            .status
            .as_ref()
            .map(|s| s.application_status.clone())
            .unwrap_or_default(),
        prior_step_status: observation
            .prior
            .status
            .as_ref()
            .map(|s| s.rollout_steps.clone())
            .unwrap_or_default(),
        promote: observation
            .prior
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(PROMOTE_ANNOTATION))
            .cloned(),
        prior_rollback: observation
            .prior
            .status
            .as_ref()
            .and_then(|s| s.rollout_rollback.clone()),
        analysis: Vec::new(),
        namespace: observation
            .prior
            .metadata
            .namespace
            .clone()
            .unwrap_or_default(),
        external: Vec::new(),
    }
}

/// The revisions (one per source) of the newest entry of `application`'s `status.history` at
/// other revisions than `target` (empty: the ones in its status): the last it was Healthy on
/// before, where a rollback takes it.
#[must_use]
pub fn previous_revisions(application: &Application, target: &[String]) -> Vec<String> {
    let Some(status) = application.status.as_ref() else {
        return Vec::new();
    };
    let compared = observed_status(application).revisions;
    let target = if target.is_empty() { &compared } else { target };
    status
        .history
        .iter()
        .rev()
        .map(|entry| revisions_of(&entry.revision, &entry.revisions))
        .find(|revisions| !revisions.is_empty() && revisions.as_slice() != target)
        .unwrap_or_default()
}

/// `revisions`, or `[revision]` for a single source (none when empty).
fn revisions_of(revision: &str, revisions: &[String]) -> Vec<String> {
    if revisions.is_empty() {
        Some(revision.to_owned())
            .filter(|r| !r.is_empty())
            .into_iter()
            .collect()
    } else {
        revisions.to_vec()
    }
}

fn name(application: &Application) -> &str {
    application.metadata.name.as_deref().unwrap_or_default()
}

/// Whether the generated spec differs from the live one, ignoring a requested operation (which
/// the rollout or a person writes, not the template).
#[must_use]
pub fn spec_changed(desired: &ApplicationSpec, live: &ApplicationSpec) -> bool {
    let without_operation = |spec: &ApplicationSpec| ApplicationSpec {
        operation: None,
        ..spec.clone()
    };
    without_operation(desired) != without_operation(live)
}

/// The status fields of `application` the rollout reads; words outside the vocabulary read as
/// `Unknown`, and an operation without a start time is not counted as started. Sync and health
/// computed for an older generation of the spec (`status.observedGeneration`) read as `Unknown`:
/// they describe a spec the Application no longer has, so they can open no gate.
#[must_use]
pub fn observed_status(application: &Application) -> ObservedStatus {
    let Some(status) = application.status.as_ref() else {
        return ObservedStatus::default();
    };
    let current = status.observed_generation == application.metadata.generation;
    let health = status.health.as_ref().filter(|_| current);
    let sync = status.sync.as_ref().filter(|_| current);
    ObservedStatus {
        health: health.map(|h| h.status).unwrap_or_default(),
        health_message: health.map(|h| h.message.clone()).unwrap_or_default(),
        sync: sync.map(|s| s.status).unwrap_or_default(),
        differences: status
            .resources
            .iter()
            .filter(|r| current && r.status == SyncStatusCode::OutOfSync)
            .map(difference)
            .collect(),
        revisions: sync
            .map(|s| revisions_of(&s.revision, &s.revisions))
            .unwrap_or_default(),
        reconciled_at: status.reconciled_at.as_ref().map(|t| t.0),
        operation_state: status.operation_state.as_ref().and_then(|op| {
            Some(OperationState {
                phase: op.phase,
                started_at: op.started_at.as_ref()?.0,
                message: op.failure.clone().unwrap_or_else(|| op.message.clone()),
                revisions: revisions_of(op.revision.as_deref().unwrap_or_default(), &op.revisions),
            })
        }),
    }
}

/// Leaves of `application`'s status what the ApplicationSet controller reads of it
/// ([`observed_status`], [`previous_revisions`] and its own status's `resources`): of
/// `status.resources` only the OutOfSync objects, and none of the last operation's per-object
/// results. The controller's store of a fleet's Applications keeps them so.
pub fn keep_observed(application: &mut Application) {
    if let Some(status) = application.status.as_mut() {
        status
            .resources
            .retain(|r| r.status == SyncStatusCode::OutOfSync);
        status.resources.shrink_to_fit();
        if let Some(operation) = status.operation_state.as_mut() {
            operation.resources = Vec::new();
        }
    }
}

/// An OutOfSync object and why: `Kind namespace/name: /first/differing/field`, `missing` or
/// `to prune`.
fn difference(resource: &ResourceStatus) -> String {
    let namespace = if resource.namespace.is_empty() {
        String::new()
    } else {
        format!("{}/", resource.namespace)
    };
    let why = if resource.requires_pruning {
        "to prune"
    } else if resource.first_difference.is_empty() {
        "missing"
    } else {
        &resource.first_difference
    };
    format!("{} {namespace}{}: {why}", resource.kind, resource.name)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::operation_state::OperationPhase;
    use crate::controller::appset::test_fixtures::appset;
    use crate::health::HealthStatus;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    fn app(value: serde_json::Value) -> Application {
        let mut base = json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "Application",
            "metadata": {"name": "db", "labels": {"tier": "db"}},
            "spec": {
                "project": "p",
                "source": {"repoURL": "file:///repo", "targetRevision": "main", "path": "db"},
                "destination": {"namespace": "ns"}
            }
        });
        merge(&mut base, value);
        serde_json::from_value(base).unwrap()
    }

    fn merge(base: &mut serde_json::Value, patch: serde_json::Value) {
        match (base, patch) {
            (serde_json::Value::Object(base), serde_json::Value::Object(patch)) => {
                for (key, value) in patch {
                    merge(base.entry(key).or_insert(serde_json::Value::Null), value);
                }
            }
            (base, patch) => *base = patch,
        }
    }

    #[test]
    fn a_multi_source_application_is_rolled_out_on_every_revision() {
        let multi = app(json!({
            "spec": {"sources": [
                {"repoURL": "https://charts.example", "chart": "db", "targetRevision": "~1.2"},
                {"repoURL": "file:///values", "targetRevision": "main", "ref": "values"}
            ]},
            "status": {"sync": {"status": "Synced", "revisions": ["1.2.3", "abc"]}}
        }));
        let sources = SourceRevision::of(&multi);
        assert_eq!(sources.len(), 2, "the ignored source is not resolved");
        let both = BTreeMap::from([
            (sources[0].clone(), "1.2.3".to_owned()),
            (sources[1].clone(), "def".to_owned()),
        ]);
        assert_eq!(target_revisions(&multi, &both), ["1.2.3", "def"]);
        let one = BTreeMap::from([(sources[0].clone(), "1.2.3".to_owned())]);
        assert!(
            target_revisions(&multi, &one).is_empty(),
            "unknown while a source is unresolved"
        );
        assert_eq!(observed_status(&multi).revisions, ["1.2.3", "abc"]);
    }

    #[test]
    fn a_chart_is_a_source_of_its_own() {
        let source = |source: serde_json::Value| app(json!({"spec": {"source": source}}));
        let in_project = |project: &str, source: serde_json::Value| {
            app(json!({"spec": {"project": project, "source": source}}))
        };
        let desired = [
            source(
                json!({"repoURL": "https://charts.example", "chart": "db", "targetRevision": "1.x"}),
            ),
            source(
                json!({"repoURL": "https://charts.example", "chart": "web", "targetRevision": "1.x"}),
            ),
            source(
                json!({"repoURL": "https://charts.example", "targetRevision": "1.x", "path": "db"}),
            ),
            source(
                json!({"repoURL": "https://charts.example", "chart": "db", "targetRevision": "1.x",
                "helm": {"passCredentials": true}}),
            ),
            source(
                json!({"repoURL": "https://charts.example", "chart": "db", "targetRevision": "1.x"}),
            ),
            in_project(
                "q",
                json!({"repoURL": "https://charts.example", "chart": "db", "targetRevision": "1.x"}),
            ),
        ];
        let charts: Vec<(String, bool, String)> = sources(&desired)
            .into_iter()
            .map(|s| (s.chart, s.pass_credentials, s.project))
            .collect();
        let named = |chart: &str, pass, project: &str| (chart.to_owned(), pass, project.to_owned());
        assert_eq!(
            charts,
            [
                named("", false, "p"),
                named("db", false, "p"),
                named("db", false, "q"),
                named("db", true, "p"),
                named("web", false, "p"),
            ],
            "one resolve per chart of a repository and project (each read with its project's \
             Secrets), none shared with its git tree"
        );
    }

    #[test]
    fn observed_status_reads_health_sync_revision_and_operation() {
        let live = app(json!({"status": {
            "health": {"status": "Progressing", "message": "1/3 pods ready"},
            "sync": {"status": "OutOfSync", "revision": "abc"},
            "reconciledAt": "2025-01-01T00:00:10Z",
            "operationState": {"phase": "Terminated", "message": "terminated", "operationId": "1",
                                "startedAt": "2025-01-01T00:00:05Z"}
        }}));
        let observed = observed_status(&live);
        assert_eq!(observed.health, HealthStatus::Progressing);
        assert_eq!(observed.health_message, "1/3 pods ready");
        assert_eq!(observed.sync, SyncStatusCode::OutOfSync);
        assert_eq!(observed.revisions, ["abc"]);
        assert_eq!(
            observed.reconciled_at,
            Some("2025-01-01T00:00:10Z".parse().unwrap())
        );
        let op = observed.operation_state.unwrap();
        assert_eq!(op.phase, OperationPhase::Terminated);
        assert!(op.phase.failed(), "terminated counts as failed");
        assert_eq!(op.started_at.to_string(), "2025-01-01T00:00:05Z");
    }

    #[test]
    fn observed_status_names_what_keeps_it_out_of_sync() {
        let live = app(json!({"status": {
            "sync": {"status": "OutOfSync", "revision": "abc"},
            "resources": [
                {"group": "apps", "kind": "Deployment", "namespace": "shop", "name": "web",
                 "status": "OutOfSync", "firstDifference": "/spec/replicas"},
                {"kind": "ConfigMap", "namespace": "shop", "name": "same", "status": "Synced"},
                {"kind": "ConfigMap", "namespace": "shop", "name": "new", "status": "OutOfSync"},
                {"kind": "Namespace", "name": "old", "status": "OutOfSync", "requiresPruning": true}
            ]
        }}));
        assert_eq!(
            observed_status(&live).differences,
            [
                "Deployment shop/web: /spec/replicas",
                "ConfigMap shop/new: missing",
                "Namespace old: to prune"
            ]
        );
    }

    #[test]
    fn what_is_kept_of_a_status_reads_as_the_whole() {
        let mut live = app(json!({"status": {
            "health": {"status": "Degraded", "message": "web crashed"},
            "sync": {"status": "OutOfSync", "revision": "abc"},
            "reconciledAt": "2025-01-01T00:00:10Z",
            "resources": [
                {"group": "apps", "kind": "Deployment", "namespace": "shop", "name": "web",
                 "status": "OutOfSync", "firstDifference": "/spec/replicas"},
                {"kind": "ConfigMap", "namespace": "shop", "name": "same", "status": "Synced"},
            ],
            "history": [
                {"id": 0, "revision": "old", "deployedAt": "2025-01-01T00:00:01Z"},
                {"id": 1, "revision": "abc", "deployedAt": "2025-01-01T00:00:02Z"},
            ],
            "operationState": {"phase": "Failed", "message": "one failed", "operationId": "1",
                               "failure": "web: crashed", "revision": "abc",
                               "startedAt": "2025-01-01T00:00:05Z",
                               "resources": [{"group": "", "kind": "ConfigMap", "namespace": "shop", "name": "same",
                                              "syncPhase": "Sync", "wave": 0, "status": "Synced"}]}
        }}));
        let (observed, previous) = (observed_status(&live), previous_revisions(&live, &[]));
        keep_observed(&mut live);
        assert_eq!(observed_status(&live), observed);
        assert_eq!(previous_revisions(&live, &[]), previous);
        assert_eq!(previous, ["old"]);
        let status = live.status.as_ref().unwrap();
        assert_eq!(status.resources.len(), 1);
        assert!(
            status
                .operation_state
                .as_ref()
                .unwrap()
                .resources
                .is_empty()
        );
    }

    #[test]
    fn status_of_an_older_spec_opens_no_gate() {
        let status = json!({"status": {
            "health": {"status": "Healthy"},
            "sync": {"status": "Synced", "revision": "abc"},
            "observedGeneration": 1,
        }});
        let mut stale = app(status.clone());
        stale.metadata.generation = Some(2);
        let observed = observed_status(&stale);
        assert_eq!(
            (observed.health, observed.sync, observed.revisions.len()),
            (HealthStatus::Unknown, SyncStatusCode::Unknown, 0)
        );
        let mut current = app(status);
        current.metadata.generation = Some(1);
        assert_eq!(observed_status(&current).health, HealthStatus::Healthy);
    }

    #[test]
    fn unknown_words_and_missing_start_times_read_as_unknown() {
        let cases = [
            (json!({}), ObservedStatus::default()),
            (
                json!({"status": {"health": {"status": "Sick"}, "sync": {"status": "Maybe"},
                       "operationState": {"phase": "Running", "operationId": "1"}}}),
                ObservedStatus::default(),
            ),
        ];
        for (patch, expected) in cases {
            assert_eq!(observed_status(&app(patch.clone())), expected, "{patch}");
        }
    }

    #[test]
    fn spec_changes_ignore_a_requested_operation() {
        let plain = app(json!({}));
        let requested = app(
            json!({"spec": {"operation": {"sync": {"revision": "abc"}, "initiatedBy": {"automated": true}}}}),
        );
        let moved = app(json!({"spec": {"source": {"path": "db2"}}}));
        assert!(!spec_changed(&plain.spec, &requested.spec));
        assert!(spec_changed(&moved.spec, &requested.spec));
    }

    #[test]
    fn input_marks_missing_updated_and_resolved_applications() {
        let strategy = json!({"type": "RollingSync", "rollingSync": {"steps": []}});
        let prior = appset(
            strategy.clone(),
            json!({"applicationStatus": [{"application": "db", "status": "Healthy", "step": "1"}]}),
        );
        let desired = vec![
            app(json!({"spec": {"source": {"path": "db2"}}})),
            app(
                json!({"metadata": {"name": "web", "labels": {"tier": "web"}},
                       "spec": {"source": {"repoURL": "file:///other"}}}),
            ),
        ];
        let existing = vec![app(
            json!({"status": {"sync": {"status": "Synced", "revision": "old"},
                                                   "reconciledAt": "2025-01-01T00:00:00Z"}}),
        )];
        let updated = BTreeSet::from(["db".to_string()]);
        let resolved = BTreeMap::from([(
            SourceRevision::of(&desired[0])[0].clone(),
            "new".to_string(),
        )]);
        let input = rollout_input(&Observation {
            now: at(100),
            strategy: rolling_sync(&prior).unwrap(),
            desired: &desired,
            existing: &existing,
            updated: &updated,
            resolved: &resolved,
            prior: &prior,
            projects: &Projects::default(),
        });
        assert_eq!(input.now, at(100));
        assert_eq!(input.prior_application_status.len(), 1);
        let [db, web] = input.applications.as_slice() else {
            panic!("two applications")
        };
        assert!(db.exists && db.spec_changed);
        assert_eq!(db.labels["tier"], "db");
        assert_eq!(db.target(), ["new"]);
        assert_eq!(db.status.revisions, ["old"]);
        assert_eq!(db.status.reconciled_at, Some(at(1_735_689_600)));
        assert!(!web.exists && !web.spec_changed);
        assert!(
            web.target_revisions.is_empty(),
            "its source was not resolved"
        );
        assert_eq!(web.status, ObservedStatus::default());
    }

    #[test]
    fn only_rolling_sync_strategies_roll_out() {
        let rolling = appset(json!({"type": "RollingSync"}), json!({}));
        let all_at_once = appset(json!({"type": "AllAtOnce"}), json!({}));
        assert!(rolling_sync(&rolling).is_some());
        assert!(rolling_sync(&all_at_once).is_none());
        let sources = sources(&[app(json!({})), app(json!({"metadata": {"name": "b"}}))]);
        assert_eq!(sources.len(), 1, "one source resolved once");
    }
}
