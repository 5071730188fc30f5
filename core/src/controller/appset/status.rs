//! The ApplicationSet status a reconcile leads to: conditions from its outcome (keeping
//! `lastTransitionTime` when a condition's status is unchanged, and conditions other steps own,
//! such as `RolloutProgressing`, as they are) and `resources` from the generated Applications,
//! cut short so the status stays within etcd's request limit. Also the merge patch that writes
//! it. Pure: the clock is an argument.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Resource;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::api::application_set_status::{
    ApplicationSetCondition, ApplicationSetResource, ApplicationSetStatus, ConditionStatus,
    ConditionType,
};
use crate::api::{Application, ApplicationSet};

/// Reason of the conditions of a successful reconcile (Argo CD's word).
pub const REASON_UP_TO_DATE: &str = "ApplicationSetUpToDate";
/// Reason of `ParametersGenerated=True`.
pub const REASON_PARAMETERS_GENERATED: &str = "ParametersGenerated";

/// How many Applications `status.resources` lists at most unless the controller is told otherwise
/// (`--max-resources-status-count`; Argo CD's default).
pub const DEFAULT_MAX_RESOURCES_STATUS_COUNT: usize = 5000;

/// How many bytes of JSON an ApplicationSet's status takes at most, `resources` cut short to fit:
/// two thirds of etcd's default request limit (1.5 MiB), which the whole ApplicationSet must fit
/// in with its spec and metadata.
pub const MAX_STATUS_BYTES: usize = 1024 * 1024;

/// How many bytes of JSON a whole ApplicationSet (metadata, spec and status) takes at most:
/// etcd's default request limit (1.5 MiB) less 256 KiB for the rest of the request.
pub const MAX_OBJECT_BYTES: usize = 1280 * 1024;

/// The bytes of JSON `appset`'s status may take: [`MAX_STATUS_BYTES`], or what its metadata and
/// spec leave of [`MAX_OBJECT_BYTES`] when that is less (a list generator of 20,000 elements
/// takes 700 KiB of the spec).
#[must_use]
pub fn status_budget(appset: &ApplicationSet) -> usize {
    // The keys and brackets around metadata and spec, with apiVersion and kind.
    const ENVELOPE: usize = 128;
    let rest = json_len(&appset.metadata)
        .saturating_add(json_len(&appset.spec))
        .saturating_add(ENVELOPE);
    MAX_STATUS_BYTES.min(MAX_OBJECT_BYTES.saturating_sub(rest))
}

/// Whether `status` says the rollout has work left that can proceed (`RolloutProgressing=True`).
#[must_use]
pub fn in_progress(status: &ApplicationSetStatus) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == ConditionType::RolloutProgressing && c.status == ConditionStatus::True)
}

/// How a reconcile ended, as far as status is concerned (see [`super::outcome`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every generated Application is as the template says (within `applicationsSync`).
    UpToDate,
    /// The generators failed: no parameters, nothing changed.
    GenerateFailed { reason: String, message: String },
    /// Parameters were generated but the Applications are invalid: nothing changed.
    Invalid { reason: String, message: String },
    /// Writing the Applications failed part-way.
    ApplyFailed { reason: String, message: String },
}

/// The status after a reconcile with `outcome`: `old` with its three reconcile conditions,
/// `resources` (the first `max_resources` of `applications`, sorted by name; 0: all) and
/// `resourcesCount` replaced, every other field and condition kept. [`within_size`] cuts
/// `resources` shorter once the rollout's part is in.
#[must_use]
pub fn next_status(
    old: Option<&ApplicationSetStatus>,
    outcome: &Outcome,
    applications: &[&Application],
    max_resources: usize,
    now: &Time,
) -> ApplicationSetStatus {
    let mut status = old.cloned().unwrap_or_default();
    let error = match outcome {
        Outcome::UpToDate => None,
        Outcome::GenerateFailed { reason, message }
        | Outcome::Invalid { reason, message }
        | Outcome::ApplyFailed { reason, message } => Some((reason.as_str(), message.as_str())),
    };
    let parameters_generated = !matches!(outcome, Outcome::GenerateFailed { .. });
    let wanted = [
        match error {
            Some((reason, message)) => (ConditionType::ErrorOccurred, true, reason, message),
            None => (ConditionType::ErrorOccurred, false, REASON_UP_TO_DATE, ""),
        },
        match error {
            Some((reason, message)) if !parameters_generated => {
                (ConditionType::ParametersGenerated, false, reason, message)
            }
            _ => (
                ConditionType::ParametersGenerated,
                true,
                REASON_PARAMETERS_GENERATED,
                "Successfully generated parameters for all Applications",
            ),
        },
        match error {
            Some((reason, message)) => (ConditionType::ResourcesUpToDate, false, reason, message),
            None => (
                ConditionType::ResourcesUpToDate,
                true,
                REASON_UP_TO_DATE,
                "All Applications have been generated successfully",
            ),
        },
    ];
    for (type_, value, reason, message) in wanted {
        set_condition(
            &mut status.conditions,
            type_,
            value.into(),
            reason,
            message,
            now,
        );
    }
    status.conditions.sort_by_key(|c| c.type_);
    status.resources = listed_resources(applications, max_resources);
    // Left out when 0, as Argo CD leaves it out.
    status.resources_count = i64::try_from(applications.len()).ok().filter(|&n| n > 0);
    status
}

/// The entries of `status.resources` for `applications`: the first `max_count` of them (0: all).
fn listed_resources(
    applications: &[&Application],
    max_count: usize,
) -> Vec<ApplicationSetResource> {
    let count = match max_count {
        0 => applications.len(),
        max => max.min(applications.len()),
    };
    applications[..count]
        .iter()
        .map(|app| resource(app))
        .collect()
}

/// `status` with `resources` cut to its first entries that fit, with everything else in it, in
/// `budget` bytes of JSON ([`status_budget`]; none when the rest alone does not fit;
/// `resourcesCount` still counts them all).
#[must_use]
pub fn within_size(mut status: ApplicationSetStatus, budget: usize) -> ApplicationSetStatus {
    if json_len(&status) <= budget {
        return status;
    }
    let resources = std::mem::take(&mut status.resources);
    // The rest of the status, the brackets of the list and a comma after each entry.
    let mut bytes = json_len(&status) + "\"resources\":[],".len();
    status.resources = resources
        .into_iter()
        .take_while(|entry| {
            bytes = bytes.saturating_add(json_len(entry)).saturating_add(1);
            bytes <= budget
        })
        .collect();
    status
}

/// The length of `value` in JSON.
fn json_len(value: &impl Serialize) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |json| json.len())
}

/// Sets one condition, keeping its `lastTransitionTime` when its status does not change.
fn set_condition(
    conditions: &mut Vec<ApplicationSetCondition>,
    type_: ConditionType,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    now: &Time,
) {
    let previous = conditions.iter().position(|c| c.type_ == type_);
    let last_transition_time = match previous.map(|i| &conditions[i]) {
        Some(old) if old.status == status => old.last_transition_time.clone(),
        _ => Some(now.clone()),
    };
    let condition = ApplicationSetCondition {
        type_,
        status,
        reason: reason.to_string(),
        message: message.to_string(),
        last_transition_time,
    };
    match previous {
        Some(index) => conditions[index] = condition,
        None => conditions.push(condition),
    }
}

fn resource(application: &Application) -> ApplicationSetResource {
    let status = application.status.as_ref();
    ApplicationSetResource {
        group: Application::group(&()).into_owned(),
        version: Application::version(&()).into_owned(),
        kind: Application::kind(&()).into_owned(),
        namespace: application.metadata.namespace.clone().unwrap_or_default(),
        name: application.metadata.name.clone().unwrap_or_default(),
        status: status.and_then(|s| s.sync.as_ref()).map(|s| s.status),
        health: status.and_then(|s| s.health.clone()),
    }
}

/// Whether writing `new` would change the stored status.
#[must_use]
pub fn changed(old: Option<&ApplicationSetStatus>, new: &ApplicationSetStatus) -> bool {
    old.cloned().unwrap_or_default() != *new
}

/// A JSON merge patch turning `old` into `new`: `{"status": new}` with `null` for every field
/// `old` has and `new` leaves out, in nested objects too (`status.deletion.remaining` once the
/// last step is deleted; a merge patch would otherwise keep it). With the `resource_version`
/// `old` was read at, the API server refuses the patch (409 Conflict) if the ApplicationSet
/// changed since: a status, and the rollout decision in it, is only written over the spec and
/// the status it was computed from.
#[must_use]
pub fn status_patch(
    old: Option<&ApplicationSetStatus>,
    new: &ApplicationSetStatus,
    resource_version: Option<&str>,
) -> Value {
    let as_object = |status: Option<&ApplicationSetStatus>| match status.map(serde_json::to_value) {
        Some(Ok(Value::Object(map))) => map,
        _ => Map::new(),
    };
    let mut patch = as_object(Some(new));
    null_left_out(&mut patch, &as_object(old));
    match resource_version {
        Some(version) => serde_json::json!({
            "metadata": {"resourceVersion": version},
            "status": patch,
        }),
        None => serde_json::json!({ "status": patch }),
    }
}

/// Whether `now` (the ApplicationSet as it is after a status write of a pass that read `read`
/// was refused) differs from `read` only where no pass decision comes from: its
/// `resourceVersion`, managed fields, finalizers and the annotations in `requests` (the refresh
/// requests a webhook sets on every push, which the pass carries out after its write anyway).
/// Then the pass's status may be written over `now`; any other change (the spec, labels,
/// another annotation, the status) supersedes the pass.
#[must_use]
pub fn changed_only_where_no_decision_comes_from(
    read: &ApplicationSet,
    now: &ApplicationSet,
    requests: &[&str],
) -> bool {
    let annotations = |appset: &ApplicationSet| {
        let mut annotations = appset.metadata.annotations.clone().unwrap_or_default();
        annotations.retain(|key, _| !requests.contains(&key.as_str()));
        annotations
    };
    read.metadata.generation == now.metadata.generation
        && read.metadata.labels == now.metadata.labels
        && annotations(read) == annotations(now)
        && read.metadata.deletion_timestamp == now.metadata.deletion_timestamp
        && read.spec == now.spec
        && read.status == now.status
}

/// Sets to `null` in `patch` every field of `old` it leaves out, in the objects both have.
fn null_left_out(patch: &mut Map<String, Value>, old: &Map<String, Value>) {
    for (key, was) in old {
        match (patch.get_mut(key), was) {
            (None, _) => {
                patch.insert(key.clone(), Value::Null);
            }
            (Some(Value::Object(now)), Value::Object(was)) => null_left_out(now, was),
            (Some(_), _) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::api::ApplicationSpec;
    use crate::api::application::{ApplicationStatus, HealthReport, SyncStatus};
    use crate::api::application_set_status::{
        ApplicationSetApplicationStatus, DeletionGroupStatus, DeletionProgress,
        RolloutApplicationState, SyncStatusCode,
    };
    use crate::health::HealthStatus;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    fn condition(
        type_: ConditionType,
        status: ConditionStatus,
        reason: &str,
        message: &str,
        since: i64,
    ) -> ApplicationSetCondition {
        ApplicationSetCondition {
            type_,
            status,
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Some(at(since)),
        }
    }

    fn failure(reason: &str) -> (String, String) {
        (reason.to_string(), format!("{reason} happened"))
    }

    #[test]
    fn conditions_follow_the_outcome_and_keep_their_transition_time() {
        use ConditionStatus::{False, True};
        use ConditionType::{ErrorOccurred, ParametersGenerated, ResourcesUpToDate};
        let up_to_date = |since: [i64; 3]| {
            vec![
                condition(ErrorOccurred, False, REASON_UP_TO_DATE, "", since[0]),
                condition(
                    ParametersGenerated,
                    True,
                    REASON_PARAMETERS_GENERATED,
                    "Successfully generated parameters for all Applications",
                    since[1],
                ),
                condition(
                    ResourcesUpToDate,
                    True,
                    REASON_UP_TO_DATE,
                    "All Applications have been generated successfully",
                    since[2],
                ),
            ]
        };
        let (reason, message) = failure("RenderError");
        let invalid = Outcome::Invalid {
            reason: reason.clone(),
            message: message.clone(),
        };
        let (generate_reason, generate_message) = failure("GenerateError");
        let generate_failed = Outcome::GenerateFailed {
            reason: generate_reason.clone(),
            message: generate_message.clone(),
        };
        let cases = [
            // (old conditions at t=1, outcome at t=2, expected)
            (vec![], Outcome::UpToDate, up_to_date([2, 2, 2])),
            (
                up_to_date([1, 1, 1]),
                Outcome::UpToDate,
                up_to_date([1, 1, 1]),
            ),
            (
                up_to_date([1, 1, 1]),
                invalid,
                vec![
                    condition(ErrorOccurred, True, &reason, &message, 2),
                    condition(
                        ParametersGenerated,
                        True,
                        REASON_PARAMETERS_GENERATED,
                        "Successfully generated parameters for all Applications",
                        1,
                    ),
                    condition(ResourcesUpToDate, False, &reason, &message, 2),
                ],
            ),
            (
                up_to_date([1, 1, 1]),
                generate_failed,
                vec![
                    condition(ErrorOccurred, True, &generate_reason, &generate_message, 2),
                    condition(
                        ParametersGenerated,
                        False,
                        &generate_reason,
                        &generate_message,
                        2,
                    ),
                    condition(
                        ResourcesUpToDate,
                        False,
                        &generate_reason,
                        &generate_message,
                        2,
                    ),
                ],
            ),
        ];
        for (index, (old, outcome, expected)) in cases.into_iter().enumerate() {
            let old = ApplicationSetStatus {
                conditions: old,
                ..ApplicationSetStatus::default()
            };
            let new = next_status(Some(&old), &outcome, &[], 0, &at(2));
            assert_eq!(new.conditions, expected, "case {index}");
            assert_eq!(
                changed(Some(&old), &new),
                old.conditions != expected,
                "case {index}"
            );
        }
    }

    #[test]
    fn conditions_owned_by_others_are_kept() {
        let rollout = condition(
            ConditionType::RolloutProgressing,
            ConditionStatus::True,
            "ApplicationSetModified",
            "",
            1,
        );
        let old = ApplicationSetStatus {
            conditions: vec![rollout.clone()],
            ..ApplicationSetStatus::default()
        };
        let new = next_status(Some(&old), &Outcome::UpToDate, &[], 0, &at(2));
        assert_eq!(new.conditions.len(), 4);
        assert_eq!(new.conditions[3], rollout);
    }

    #[test]
    fn resources_list_each_application_with_its_sync_and_health() {
        let mut synced = Application::new("a", ApplicationSpec::default());
        synced.metadata.namespace = Some("ns".into());
        synced.status = Some(ApplicationStatus {
            sync: Some(SyncStatus {
                status: SyncStatusCode::Synced,
                revision: "abc".into(),
                revisions: Vec::new(),
            }),
            health: Some(HealthReport {
                status: HealthStatus::Healthy,
                message: String::new(),
            }),
            ..ApplicationStatus::default()
        });
        let fresh = Application::new("b", ApplicationSpec::default());
        let new = next_status(None, &Outcome::UpToDate, &[&synced, &fresh], 0, &at(1));
        let summary: Vec<_> = new
            .resources
            .iter()
            .map(|r| {
                (
                    r.kind.as_str(),
                    r.name.as_str(),
                    r.status.map(SyncStatusCode::as_str),
                    r.health.as_ref().map(|h| h.status.as_str()),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("Application", "a", Some("Synced"), Some("Healthy")),
                ("Application", "b", None, None)
            ]
        );
    }

    fn named(names: impl IntoIterator<Item = String>) -> Vec<Application> {
        names
            .into_iter()
            .map(|name| {
                let mut app = Application::new(&name, ApplicationSpec::default());
                app.metadata.namespace = Some("ns".into());
                app
            })
            .collect()
    }

    #[test]
    fn resources_list_the_first_applications_up_to_the_maximum_and_count_them_all() {
        let apps = named(["a", "b", "c", "d", "e"].map(String::from));
        let refs: Vec<&Application> = apps.iter().collect();
        for (max, listed) in [(3, vec!["a", "b", "c"]), (0, vec!["a", "b", "c", "d", "e"])] {
            let new = next_status(None, &Outcome::UpToDate, &refs, max, &at(1));
            let names: Vec<_> = new.resources.iter().map(|r| r.name.as_str()).collect();
            assert_eq!(names, listed, "max {max}");
            assert_eq!(new.resources_count, Some(5), "max {max}");
        }
        let none = next_status(None, &Outcome::UpToDate, &[], 3, &at(1));
        assert_eq!(none.resources_count, None);
    }

    #[test]
    fn resources_are_cut_short_to_keep_the_status_within_its_size() {
        // Names as long as Kubernetes allows, every Application with a health message.
        let mut apps = named((0..20_000).map(|i| format!("{i:0>253}")));
        for app in &mut apps {
            app.status = Some(ApplicationStatus {
                health: Some(HealthReport {
                    status: HealthStatus::Progressing,
                    message: "Waiting for rollout to finish: 0 of 1 updated replicas are available"
                        .into(),
                }),
                ..ApplicationStatus::default()
            });
        }
        let refs: Vec<&Application> = apps.iter().collect();
        let rollout_entry = |i: usize| ApplicationSetApplicationStatus {
            application: format!("{i:0>253}"),
            status: RolloutApplicationState::Healthy,
            step: "1".into(),
            target_revisions: vec!["0123456789abcdef0123456789abcdef01234567".into()],
            last_transition_time: Some(at(1)),
            message: "sync finished: Healthy and Synced".into(),
        };
        // (how many resources the count allows, rollout entries)
        for (max, rollout) in [(0, 0), (DEFAULT_MAX_RESOURCES_STATUS_COUNT, 0), (0, 1_500)] {
            let mut new = next_status(None, &Outcome::UpToDate, &refs, max, &at(1));
            new.application_status = (0..rollout).map(rollout_entry).collect();
            let before = new.resources.clone();
            let new = within_size(new, MAX_STATUS_BYTES);
            let bytes = serde_json::to_vec(&new).unwrap().len();
            assert!(bytes <= MAX_STATUS_BYTES, "{bytes} bytes");
            assert!(
                MAX_STATUS_BYTES - bytes < 1000,
                "cut short by one entry at most"
            );
            assert!(!new.resources.is_empty() && before.starts_with(&new.resources));
            assert_eq!(
                new.application_status.len(),
                rollout,
                "rollout state kept whole"
            );
            assert_eq!(new.resources_count, Some(20_000));
        }
        let small = next_status(None, &Outcome::UpToDate, &refs[..3], 0, &at(1));
        assert_eq!(within_size(small.clone(), MAX_STATUS_BYTES), small);
    }

    #[test]
    fn a_large_spec_leaves_less_room_for_resources_so_the_whole_object_fits() {
        let small = crate::controller::appset::test_fixtures::appset(Value::Null, Value::Null);
        assert_eq!(status_budget(&small), MAX_STATUS_BYTES);
        // A list generator of 20,000 elements, about 700 KiB as the benchmarks' fleet has.
        let mut large = small.clone();
        let elements: Vec<Value> = (0..20_000)
            .map(|i| serde_json::json!({"name": format!("app-{i}"), "path": format!("apps/app-{i}"), "step": "1"}))
            .collect();
        large.spec.generators =
            serde_json::from_value(serde_json::json!([{"list": {"elements": elements}}])).unwrap();
        let budget = status_budget(&large);
        assert!(budget < MAX_STATUS_BYTES, "{budget}");
        let apps: Vec<Application> = (0..20_000)
            .map(|i| Application::new(&format!("app-{i:0>40}"), ApplicationSpec::default()))
            .collect();
        let refs: Vec<&Application> = apps.iter().collect();
        let status = next_status(None, &Outcome::UpToDate, &refs, 0, &at(1));
        large.status = Some(within_size(status, budget));
        let whole = serde_json::to_vec(&large).unwrap().len();
        assert!(whole <= MAX_OBJECT_BYTES, "{whole} bytes");
        assert!(
            MAX_OBJECT_BYTES - whole < 2000,
            "cut short by about one entry: {whole}"
        );
        let status = large.status.unwrap();
        assert!(!status.resources.is_empty());
        assert_eq!(status.resources_count, Some(20_000));
    }

    #[test]
    fn the_patch_clears_fields_that_became_empty() {
        let mut old = next_status(
            None,
            &Outcome::UpToDate,
            &[&Application::new("a", ApplicationSpec::default())],
            0,
            &at(1),
        );
        let new = next_status(Some(&old), &Outcome::UpToDate, &[], 0, &at(2));
        let patch = status_patch(Some(&old), &new, Some("41"));
        assert_eq!(patch["metadata"]["resourceVersion"], "41");
        assert_eq!(patch["status"]["resources"], Value::Null);
        assert_eq!(patch["status"]["resourcesCount"], Value::Null);
        assert!(patch["status"]["conditions"].is_array());
        old.resources.clear();
        old.resources_count = None;
        assert!(!changed(Some(&old), &new));
        // In nested objects too: the last step of a removal has nothing left after it.
        let group = |step: u64| DeletionGroupStatus {
            step,
            applications: vec![format!("app-{step}")],
        };
        let mut removing = new.clone();
        removing.deletion = Some(DeletionProgress {
            steps: 2,
            current: group(2),
            remaining: vec![group(1)],
        });
        let mut last = removing.clone();
        last.deletion = Some(DeletionProgress {
            steps: 2,
            current: group(1),
            remaining: Vec::new(),
        });
        let patch = status_patch(Some(&removing), &last, None);
        assert!(patch.get("metadata").is_none());
        assert_eq!(patch["status"]["deletion"]["remaining"], Value::Null);
        assert_eq!(patch["status"]["deletion"]["current"]["step"], 1);
    }

    #[test]
    fn only_a_refresh_request_or_bookkeeping_lets_a_refused_status_be_written_again() {
        const REFRESH: &str = "argocd.argoproj.io/application-set-refresh";
        let read = crate::controller::appset::test_fixtures::appset(Value::Null, Value::Null);
        let same = |now: &ApplicationSet| {
            changed_only_where_no_decision_comes_from(&read, now, &[REFRESH])
        };
        let mut now = read.clone();
        now.metadata.resource_version = Some("99".into());
        now.metadata.finalizers = Some(vec!["flotilla.dev/ordered-deletion".into()]);
        now.metadata
            .annotations
            .get_or_insert_default()
            .insert(REFRESH.into(), "true".into());
        assert!(same(&now), "a webhook's refresh request and bookkeeping");

        let mut spec = read.clone();
        spec.metadata.generation = Some(read.metadata.generation.unwrap_or(0) + 1);
        spec.spec.generators =
            serde_json::from_value(serde_json::json!([{"list": {"elements": [{"name": "db-b"}]}}]))
                .unwrap();
        assert!(!same(&spec), "the list changed");
        let mut approved = read.clone();
        approved
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(
                crate::api::application_set::PROMOTE_ANNOTATION.into(),
                "2".into(),
            );
        assert!(!same(&approved), "a person's approval");
        let mut status = read.clone();
        status.status = Some(next_status(None, &Outcome::UpToDate, &[], 0, &at(1)));
        assert!(!same(&status), "a status written meanwhile");
        let mut labelled = read.clone();
        labelled
            .metadata
            .labels
            .get_or_insert_default()
            .insert("team".into(), "a".into());
        assert!(!same(&labelled), "a label");
    }
}
