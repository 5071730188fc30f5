//! Which generated Applications to create, update and delete: desired (rendered and owned)
//! against existing (owned by the ApplicationSet), filtered by `syncPolicy.applicationsSync`.
//! An Application is updated only when something we manage differs — its spec, the labels and
//! annotations we set (or set before and no longer want), its owner reference or finalizers —
//! and never at the fields `ignoreApplicationDifferences` names, which keep their live values,
//! nor at the annotations and labels `preservedFields` names that an existing Application has
//! (their values there win over the template's, as in Argo CD).

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
use kube::ResourceExt;

use super::rollout_input::spec_changed;
use crate::api::application::ResourceIgnoreDifferences;
use crate::api::application_set::{ApplicationSetSpec, ApplicationsSync, PreservedFields};
use crate::api::{APPLICATION_SET_LABEL, Application};
use crate::manifest::ObjectKey;
use crate::sync::{IgnoreDifferences, IgnoreError, JqFilters};

/// The changes a reconcile makes to generated Applications.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// New Applications.
    pub create: Vec<Application>,
    /// Existing Applications whose managed fields differ, as they should be.
    pub update: Vec<Application>,
    /// Names of owned Applications no longer generated.
    pub delete: Vec<String>,
    /// Changes the policy does not allow.
    pub kept: Vec<Kept>,
}

/// A change left out because of `applicationsSync`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub name: String,
    pub change: KeptChange,
}

/// What was not done to a kept Application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeptChange {
    /// It differs from the template but updates are not allowed.
    NotUpdated,
    /// It is no longer generated but deletes are not allowed.
    NotDeleted,
}

impl Plan {
    /// Whether the plan writes nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }

    /// The Applications there will be once the plan is applied: existing ones not deleted (as
    /// they are now, with their status) and the created ones, sorted by name.
    #[must_use]
    pub fn remaining<'a, E: Borrow<Application>>(
        &'a self,
        existing: &'a [E],
    ) -> Vec<&'a Application> {
        let deleted: BTreeSet<&str> = self.delete.iter().map(String::as_str).collect();
        let mut remaining: Vec<&Application> = existing
            .iter()
            .map(Borrow::borrow)
            .filter(|app| !deleted.contains(name(app)))
            .chain(&self.create)
            .collect();
        remaining.sort_by_key(|app| name(app));
        remaining
    }
}

fn name(application: &Application) -> &str {
    application.metadata.name.as_deref().unwrap_or_default()
}

/// The checked rules of `spec.ignoreApplicationDifferences`, their jq expressions compiled in
/// `filters`.
///
/// # Errors
/// An entry that cannot be used, naming it.
pub fn ignored_fields(
    spec: &ApplicationSetSpec,
    filters: &Arc<JqFilters>,
) -> Result<IgnoreDifferences, IgnoreError> {
    let entries: Vec<ResourceIgnoreDifferences> = spec
        .ignore_application_differences
        .iter()
        .map(|entry| ResourceIgnoreDifferences {
            group: "*".to_owned(),
            kind: "*".to_owned(),
            name: entry.name.clone(),
            json_pointers: entry.json_pointers.clone(),
            jq_path_expressions: entry.jq_path_expressions.clone(),
            ..ResourceIgnoreDifferences::default()
        })
        .collect();
    IgnoreDifferences::new("ignoreApplicationDifferences", &entries, filters)
}

/// What an update of an existing generated Application keeps as it is.
#[derive(Clone, Copy, Debug)]
pub struct KeptFields<'a> {
    /// `ignoreApplicationDifferences`, checked.
    pub ignored: &'a IgnoreDifferences,
    /// `preservedFields`.
    pub preserved: &'a PreservedFields,
}

/// Compares `desired` with `existing` (both owned by one ApplicationSet) under `policy`, the
/// `kept` fields of an existing Application taken as they are; `manager` is the field manager
/// the controller applies with, whose recorded labels and annotations tell which ones it set
/// before.
#[must_use]
pub fn plan<E: Borrow<Application>>(
    desired: &[Application],
    existing: &[E],
    policy: ApplicationsSync,
    manager: &str,
    kept: KeptFields<'_>,
) -> Plan {
    let may_update = matches!(
        policy,
        ApplicationsSync::CreateUpdate | ApplicationsSync::Sync
    );
    let may_delete = matches!(
        policy,
        ApplicationsSync::CreateDelete | ApplicationsSync::Sync
    );
    let existing_by_name: BTreeMap<&str, &Application> = existing
        .iter()
        .map(|app| (name(app.borrow()), app.borrow()))
        .collect();
    let desired_names: BTreeSet<String> = desired.iter().map(|a| name(a).to_string()).collect();
    let mut plan = Plan::default();
    // Each Application is copied only for the one comparison (a fleet's are not all copied at
    // once); only those written stay in the plan.
    for application in desired {
        let current = existing_by_name.get(name(application));
        let application = match current {
            Some(current) => keep_ignored(
                keep_preserved(application.clone(), current, kept.preserved),
                current,
                kept.ignored,
            ),
            None => application.clone(),
        };
        match current {
            None => plan.create.push(application),
            Some(current) if !differs(&application, current, manager) => {}
            Some(_) if may_update => plan.update.push(application),
            Some(_) => plan.kept.push(Kept {
                name: name(&application).to_string(),
                change: KeptChange::NotUpdated,
            }),
        }
    }
    for gone in existing_by_name
        .keys()
        .filter(|n| !desired_names.contains(**n))
    {
        if may_delete {
            plan.delete.push((*gone).to_string());
        } else {
            plan.kept.push(Kept {
                name: (*gone).to_string(),
                change: KeptChange::NotDeleted,
            });
        }
    }
    plan.kept.sort_by(|a, b| a.name.cmp(&b.name));
    plan
}

/// `desired` with the values `current` has for the annotations and labels `preserved` names.
fn keep_preserved(
    mut desired: Application,
    current: &Application,
    preserved: &PreservedFields,
) -> Application {
    let keep = |want: &mut Option<BTreeMap<String, String>>,
                have: Option<&BTreeMap<String, String>>,
                keys: &[String]| {
        for key in keys {
            if let Some(value) = have.and_then(|have| have.get(key)) {
                want.get_or_insert_default()
                    .insert(key.clone(), value.clone());
            }
        }
    };
    let (want, have) = (&mut desired.metadata, &current.metadata);
    keep(
        &mut want.annotations,
        have.annotations.as_ref(),
        &preserved.annotations,
    );
    keep(&mut want.labels, have.labels.as_ref(), &preserved.labels);
    desired
}

/// `desired` with the values of `current` at the ignored fields (unchanged if that would not
/// be an Application).
fn keep_ignored(
    desired: Application,
    current: &Application,
    ignored: &IgnoreDifferences,
) -> Application {
    let key = ObjectKey {
        group: String::new(),
        kind: "Application".to_owned(),
        namespace: current.namespace(),
        name: current.name_any(),
    };
    if !ignored.applies_to(&key) {
        return desired;
    }
    let (Ok(want), Ok(have)) = (
        serde_json::to_value(&desired),
        serde_json::to_value(current),
    ) else {
        return desired;
    };
    serde_json::from_value(ignored.overlay(&key, &want, &have)).unwrap_or(desired)
}

/// Whether applying `desired` would change `current`.
fn differs(desired: &Application, current: &Application, manager: &str) -> bool {
    let (want, have) = (&desired.metadata, &current.metadata);
    spec_changed(&desired.spec, &current.spec)
        || map_differs(
            want.labels.as_ref(),
            have.labels.as_ref(),
            &applied_keys(current, manager, "f:labels"),
        )
        || map_differs(
            want.annotations.as_ref(),
            have.annotations.as_ref(),
            &applied_keys(current, manager, "f:annotations"),
        )
        || !is_subset(
            want.owner_references.as_deref(),
            have.owner_references.as_deref(),
        )
        || !is_subset(want.finalizers.as_deref(), have.finalizers.as_deref())
}

/// A wanted entry is missing or different, or a key we applied before is no longer wanted.
fn map_differs(
    want: Option<&BTreeMap<String, String>>,
    have: Option<&BTreeMap<String, String>>,
    applied_before: &BTreeSet<String>,
) -> bool {
    let empty = BTreeMap::new();
    let (want, have) = (want.unwrap_or(&empty), have.unwrap_or(&empty));
    want.iter().any(|(k, v)| have.get(k) != Some(v))
        || applied_before
            .iter()
            .any(|k| !want.contains_key(k) && have.contains_key(k))
}

fn is_subset<T: PartialEq>(want: Option<&[T]>, have: Option<&[T]>) -> bool {
    let have = have.unwrap_or_default();
    want.unwrap_or_default().iter().all(|w| have.contains(w))
}

/// Leaves of `application`'s `managedFields` only what the plan reads of them: the labels and
/// annotations `manager` applied (so a key removed from the template is noticed) but the
/// ApplicationSet's own label (always applied), not the other managers' entries nor the rest of
/// its own (an Application's status entries alone are kilobytes, a fleet's tens of megabytes);
/// none at all when that leaves nothing.
pub fn keep_applied_metadata(application: &mut Application, manager: &str) {
    let Some(entries) = application.metadata.managed_fields.as_mut() else {
        return;
    };
    let always = format!("f:{APPLICATION_SET_LABEL}");
    entries.retain_mut(|entry| {
        if entry.manager.as_deref() != Some(manager) || entry.operation.as_deref() != Some("Apply")
        {
            return false;
        }
        let metadata = entry
            .fields_v1
            .as_ref()
            .and_then(|fields| fields.0.get("f:metadata"));
        let kept: serde_json::Map<String, serde_json::Value> = ["f:labels", "f:annotations"]
            .into_iter()
            .filter_map(|field| {
                let mut keys = metadata?.get(field)?.as_object()?.clone();
                keys.remove(&always);
                (!keys.is_empty()).then(|| (field.to_string(), keys.into()))
            })
            .collect();
        if kept.is_empty() {
            return false;
        }
        entry.fields_v1 = Some(FieldsV1(serde_json::json!({ "f:metadata": kept })));
        true
    });
    if entries.is_empty() {
        application.metadata.managed_fields = None;
    }
}

/// The keys of `metadata.<field>` (`f:labels` or `f:annotations`) that `manager` owns through
/// server-side apply, read from `managedFields`.
fn applied_keys(application: &Application, manager: &str, field: &str) -> BTreeSet<String> {
    application
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| {
            entry.manager.as_deref() == Some(manager) && entry.operation.as_deref() == Some("Apply")
        })
        .filter_map(|entry| entry.fields_v1.as_ref())
        .filter_map(|fields| fields.0.get("f:metadata")?.get(field)?.as_object())
        .flat_map(|keys| keys.keys().filter_map(|k| k.strip_prefix("f:")))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    use super::*;
    use crate::api::ApplicationSpec;

    const MANAGER: &str = "flotilla-applicationset";

    fn app(name: &str, project: &str, labels: &[(&str, &str)]) -> Application {
        let mut app = Application::new(
            name,
            ApplicationSpec {
                project: project.into(),
                ..ApplicationSpec::default()
            },
        );
        app.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
        );
        app
    }

    fn names(apps: &[Application]) -> Vec<&str> {
        apps.iter().map(name).collect()
    }

    fn kept(plan: &Plan) -> Vec<(&str, KeptChange)> {
        plan.kept
            .iter()
            .map(|k| (k.name.as_str(), k.change))
            .collect()
    }

    #[test]
    fn each_policy_creates_updates_and_deletes_what_it_allows() {
        // new: to create; changed: spec differs; same: unchanged; gone: no longer generated.
        let desired = || {
            vec![
                app("changed", "two", &[]),
                app("new", "one", &[]),
                app("same", "one", &[]),
            ]
        };
        let existing = [
            app("changed", "one", &[]),
            app("gone", "one", &[]),
            app("same", "one", &[]),
        ];
        use KeptChange::{NotDeleted, NotUpdated};
        let cases = [
            (
                ApplicationsSync::Sync,
                vec!["changed"],
                vec!["gone"],
                vec![],
            ),
            (
                ApplicationsSync::CreateOnly,
                vec![],
                vec![],
                vec![("changed", NotUpdated), ("gone", NotDeleted)],
            ),
            (
                ApplicationsSync::CreateUpdate,
                vec!["changed"],
                vec![],
                vec![("gone", NotDeleted)],
            ),
            (
                ApplicationsSync::CreateDelete,
                vec![],
                vec!["gone"],
                vec![("changed", NotUpdated)],
            ),
        ];
        for (policy, update, delete, expected_kept) in cases {
            let plan = plan(
                &desired(),
                &existing,
                policy,
                MANAGER,
                KeptFields {
                    ignored: &IgnoreDifferences::default(),
                    preserved: &PreservedFields::default(),
                },
            );
            assert_eq!(names(&plan.create), ["new"], "{policy:?}");
            assert_eq!(names(&plan.update), update, "{policy:?}");
            assert_eq!(plan.delete, delete, "{policy:?}");
            assert_eq!(kept(&plan), expected_kept, "{policy:?}");
        }
    }

    #[test]
    fn kept_managed_fields_are_our_applied_labels_and_annotations_only() {
        let entry =
            |manager: &str, operation: &str, fields: serde_json::Value| ManagedFieldsEntry {
                manager: Some(manager.into()),
                operation: Some(operation.into()),
                fields_v1: Some(FieldsV1(fields)),
                ..ManagedFieldsEntry::default()
            };
        let ours = serde_json::json!({
            "f:metadata": {
                "f:labels": {"f:t": {}, "f:flotilla.dev/application-set": {}},
                "f:annotations": {"f:note": {}},
                "f:ownerReferences": {"k:{\"uid\":\"1\"}": {}},
            },
            "f:spec": {"f:project": {}},
        });
        // The Application controller's status entry.
        let controllers = || {
            entry(
                "flotilla-controller",
                "Update",
                serde_json::json!({"f:status": {}}),
            )
        };
        let mut application = app("a", "p", &[("t", "1")]);
        application.metadata.managed_fields = Some(vec![
            entry(MANAGER, "Apply", ours),
            controllers(),
            entry(
                MANAGER,
                "Update",
                serde_json::json!({"f:metadata": {"f:labels": {}}}),
            ),
            entry(
                "kubectl",
                "Apply",
                serde_json::json!({"f:metadata": {"f:labels": {"f:x": {}}}}),
            ),
        ]);
        let before = ["f:labels", "f:annotations"].map(|f| {
            let mut keys = applied_keys(&application, MANAGER, f);
            keys.remove(APPLICATION_SET_LABEL);
            keys
        });
        keep_applied_metadata(&mut application, MANAGER);
        let kept = application.metadata.managed_fields.as_ref().unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(
            kept[0].fields_v1.as_ref().unwrap().0,
            serde_json::json!({"f:metadata": {"f:labels": {"f:t": {}}, "f:annotations": {"f:note": {}}}})
        );
        let after = ["f:labels", "f:annotations"].map(|f| applied_keys(&application, MANAGER, f));
        assert_eq!(before, after);

        // Ours with only the ApplicationSet's label, and others': nothing kept.
        let mut others_only = app("b", "p", &[]);
        others_only.metadata.managed_fields = Some(vec![
            controllers(),
            entry(
                MANAGER,
                "Apply",
                serde_json::json!({"f:metadata": {"f:labels": {"f:flotilla.dev/application-set": {}}}}),
            ),
        ]);
        keep_applied_metadata(&mut others_only, MANAGER);
        assert_eq!(others_only.metadata.managed_fields, None);
    }

    #[test]
    fn only_managed_metadata_counts_as_a_difference() {
        let applied_label = |key: &str| ManagedFieldsEntry {
            manager: Some(MANAGER.into()),
            operation: Some("Apply".into()),
            fields_v1: Some(FieldsV1(serde_json::json!({
                "f:metadata": {"f:labels": {format!("f:{key}"): {}}}
            }))),
            ..ManagedFieldsEntry::default()
        };
        let with_managed = |mut app: Application, key: &str| {
            app.metadata.managed_fields = Some(vec![applied_label(key)]);
            app
        };
        let cases = [
            // (desired, existing, updated?)
            (
                app("a", "p", &[("t", "1")]),
                app("a", "p", &[("t", "1")]),
                false,
            ),
            (
                app("a", "p", &[("t", "1")]),
                app("a", "p", &[("t", "1"), ("other", "x")]),
                false,
            ),
            (
                app("a", "p", &[("t", "2")]),
                app("a", "p", &[("t", "1")]),
                true,
            ),
            (
                app("a", "p", &[]),
                with_managed(app("a", "p", &[("t", "1")]), "t"),
                true,
            ),
            (
                app("a", "p", &[]),
                with_managed(app("a", "p", &[("other", "1")]), "t"),
                false,
            ),
        ];
        for (index, (desired, existing, updated)) in cases.into_iter().enumerate() {
            let plan = plan(
                std::slice::from_ref(&desired),
                &[existing],
                ApplicationsSync::Sync,
                MANAGER,
                KeptFields {
                    ignored: &IgnoreDifferences::default(),
                    preserved: &PreservedFields::default(),
                },
            );
            assert_eq!(!plan.update.is_empty(), updated, "case {index}");
            assert!(
                plan.create.is_empty() && plan.delete.is_empty(),
                "case {index}"
            );
        }
    }

    #[test]
    fn ignored_fields_keep_their_live_values() {
        let spec = |rules: &str| -> ApplicationSetSpec {
            serde_json::from_value(serde_json::json!({
                "generators": [], "template": {"metadata": {"name": "x"}, "spec": {
                    "project": "p", "source": {"repoURL": "r"}, "destination": {}}},
                "ignoreApplicationDifferences": serde_json::from_str::<serde_json::Value>(rules).unwrap(),
            }))
            .unwrap()
        };
        // The template says project p; people changed it to q.
        let changed = app("a", "q", &[("t", "1")]);
        let cases = [
            // (rules, desired, updated to project)
            (
                r#"[{"jsonPointers": ["/spec/project"]}]"#,
                app("a", "p", &[("t", "1")]),
                None,
            ),
            (
                r#"[{"jqPathExpressions": [".spec.project"]}]"#,
                app("a", "p", &[("t", "1")]),
                None,
            ),
            (
                r#"[{"name": "other", "jsonPointers": ["/spec/project"]}]"#,
                app("a", "p", &[("t", "1")]),
                Some("p"),
            ),
            (
                r#"[{"jsonPointers": ["/spec/project"]}]"#,
                app("a", "p", &[("t", "2")]),
                Some("q"),
            ),
        ];
        for (rules, desired, updated) in cases {
            let ignored = ignored_fields(&spec(rules), &Arc::default()).unwrap();
            let plan = plan(
                std::slice::from_ref(&desired),
                std::slice::from_ref(&changed),
                ApplicationsSync::Sync,
                MANAGER,
                KeptFields {
                    ignored: &ignored,
                    preserved: &PreservedFields::default(),
                },
            );
            let project = plan.update.first().map(|a| a.spec.project.as_str());
            assert_eq!(project, updated, "{rules}");
        }
        let bad =
            ignored_fields(&spec(r#"[{"jsonPointers": ["spec"]}]"#), &Arc::default()).unwrap_err();
        assert_eq!(
            bad.to_string(),
            "ignoreApplicationDifferences[0].jsonPointers: \"spec\" is not a JSON pointer (it must start with /)"
        );
    }

    #[test]
    fn remaining_applications_are_the_kept_and_the_created() {
        let existing = [app("b", "p", &[]), app("gone", "p", &[])];
        let plan = plan(
            &[app("a", "p", &[]), app("b", "p", &[])],
            &existing,
            ApplicationsSync::Sync,
            MANAGER,
            KeptFields {
                ignored: &IgnoreDifferences::default(),
                preserved: &PreservedFields::default(),
            },
        );
        let remaining: Vec<&str> = plan.remaining(&existing).into_iter().map(name).collect();
        assert_eq!(remaining, ["a", "b"]);
        assert!(!plan.is_empty());
    }

    #[test]
    fn preserved_annotations_and_labels_keep_their_existing_values() {
        let mut desired = app("a", "p", &[("env", "prod"), ("tier", "web")]);
        desired.metadata.annotations = Some([("note".to_owned(), "template".to_owned())].into());
        let mut existing = app("a", "p", &[("env", "staging"), ("team", "x")]);
        existing.metadata.annotations = Some(
            [
                ("note".to_owned(), "by hand".to_owned()),
                ("other".to_owned(), "kept by apply".to_owned()),
            ]
            .into(),
        );
        let preserved = PreservedFields {
            annotations: vec!["note".to_owned(), "absent".to_owned()],
            labels: vec!["env".to_owned()],
        };
        let ignored = IgnoreDifferences::default();
        let kept = |preserved| KeptFields {
            ignored: &ignored,
            preserved,
        };
        let planned = |preserved| {
            plan(
                std::slice::from_ref(&desired),
                std::slice::from_ref(&existing),
                ApplicationsSync::Sync,
                MANAGER,
                kept(preserved),
            )
        };
        let update = planned(&preserved).update;
        let metadata = &update[0].metadata;
        assert_eq!(
            metadata.labels.as_ref().unwrap(),
            &[("env", "staging"), ("tier", "web")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into()
        );
        assert_eq!(
            metadata.annotations.as_ref().unwrap(),
            &[("note".to_owned(), "by hand".to_owned())].into()
        );
        let update = planned(&PreservedFields::default()).update;
        assert_eq!(
            update[0].metadata.labels.as_ref().unwrap().get("env"),
            Some(&"prod".to_owned()),
            "without preservedFields the template wins"
        );
    }
}
