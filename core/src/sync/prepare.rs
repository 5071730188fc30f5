//! What a fresh operation decides before its first write, in Argo CD's order: refuse to empty the
//! Application (see [`super::refuse_empty_target`]); refuse objects whose kind the server does not
//! serve (see [`super::preflight_failures`]); refuse what the project does not permit (see
//! [`super::refused_by_project`]); with `FailOnSharedResource=true`, refuse objects another
//! Application tracks (see [`super::tracked_elsewhere`]); else send every object but SyncFail hooks to the server's dry
//! run — none when the sync writes one object and nothing else, as its apply is its own check —
//! and then create the destination namespace (`CreateNamespace=true`). A refusal records the
//! objects it names and writes nothing. Pure: the executor asks the server which kinds it serves
//! and carries out the dry run and the namespace creation.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::operation_state::ResourceResult;
use crate::api::sync_phase::SyncPhase;
use crate::manifest::ObjectKey;
use crate::project::Admission;

use super::create_namespace::namespace_to_create;
use super::empty_target::refuse_empty_target;
use super::options::SyncOptions;
use super::plan::SyncPlan;
use super::preflight::preflight_failures;
use super::project_check::refused_by_project;
use super::prune::PruneTask;
use super::result::refused_record;
use super::shared_resource::{SharedObject, shared_message};
use super::task::SyncTask;

/// How the message of an operation its project refused starts (the ApplicationSet controller
/// reports such Applications).
pub const PROJECT_REFUSAL: &str = "nothing was written: project ";

/// What the decision reads besides the plan.
#[derive(Debug, Clone, Copy)]
pub struct PrepareInput<'a> {
    /// The objects the operation would prune.
    pub prune: &'a [PruneTask],
    /// Whether emptying the Application is allowed.
    pub allow_empty: bool,
    /// The (apiVersion, kind) pairs of the plan the server does not serve.
    pub unserved: &'a BTreeSet<(String, String)>,
    /// The Application-wide sync options.
    pub sync_options: &'a SyncOptions,
    /// The destination namespace.
    pub destination_namespace: Option<&'a str>,
    /// What the Application's project permits.
    pub admission: &'a Admission,
    /// The objects of the plan another Application tracks, read only with
    /// `FailOnSharedResource=true` (empty otherwise).
    pub shared: &'a [SharedObject],
    /// The time a refusal's records finish at.
    pub now: &'a Time,
}

/// What the decision says.
#[derive(Debug, Clone, PartialEq)]
pub enum Prepared<'a> {
    /// Nothing is written: the operation fails with `message`, these records naming why.
    Refused {
        /// A record for each object refused.
        records: Vec<ResourceResult>,
        /// The operation's failure.
        message: String,
    },
    /// Send these tasks to the server's dry run, then create this namespace when it is missing.
    Checked {
        /// The tasks to dry-run.
        dry_run: Vec<&'a SyncTask>,
        /// The destination namespace `CreateNamespace=true` asks for, unless the plan has it.
        create_namespace: Option<ObjectKey>,
    },
}

/// The decision for `plan` with `input`.
#[must_use]
pub fn prepare<'p>(plan: &'p SyncPlan, input: &PrepareInput<'_>) -> Prepared<'p> {
    if let Some(message) = refuse_empty_target(plan, input.prune, input.allow_empty) {
        return Prepared::Refused {
            records: Vec::new(),
            message,
        };
    }
    let failures = preflight_failures(plan, input.unserved, input.sync_options);
    if !failures.is_empty() {
        let names: Vec<String> = failures.iter().map(|(t, _)| t.key.to_string()).collect();
        return Prepared::Refused {
            records: failures
                .into_iter()
                .map(|(task, message)| refused_record(plan, &task.key, message, input.now))
                .collect(),
            message: format!(
                "nothing was written: the server does not serve the kind of {}",
                names.join(", ")
            ),
        };
    }
    let create_namespace =
        namespace_to_create(plan, input.sync_options, input.destination_namespace);
    let refused = refused_by_project(plan, create_namespace.as_ref(), input.admission);
    if !refused.is_empty() {
        let names: Vec<String> = refused.iter().map(|(key, _)| key.to_string()).collect();
        return Prepared::Refused {
            records: refused
                .into_iter()
                .map(|(key, message)| refused_record(plan, &key, message, input.now))
                .collect(),
            message: format!(
                "{PROJECT_REFUSAL}{:?} does not permit {}",
                input.admission.project,
                names.join(", ")
            ),
        };
    }
    if !input.shared.is_empty() {
        return Prepared::Refused {
            records: input
                .shared
                .iter()
                .map(|shared| refused_record(plan, &shared.key, shared.to_string(), input.now))
                .collect(),
            message: shared_message(input.shared),
        };
    }
    let tasks: Vec<&SyncTask> = plan
        .tasks
        .iter()
        .filter(|task| task.phase != SyncPhase::SyncFail)
        .collect();
    // One object and nothing else to write: a rejected apply writes nothing, so it is not sent
    // twice.
    let checked_by_its_write = matches!(tasks.as_slice(), [task] if task.hook.is_none())
        && plan.tasks.len() == 1
        && input.prune.is_empty()
        && create_namespace.is_none();
    Prepared::Checked {
        dry_run: if checked_by_its_write {
            Vec::new()
        } else {
            tasks
        },
        create_namespace,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::api::operation_state::ResultStatus;
    use crate::manifest::{ScopeTable, assign_namespaces, parse_documents};

    const TWO: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\
                       apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---\n\
                       apiVersion: v1\nkind: ConfigMap\nmetadata: {name: alert, annotations: \
                       {argocd.argoproj.io/hook: SyncFail}}\n";
    const ONE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
    const WIDGET: &str = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n";

    fn plan(yaml: &str) -> SyncPlan {
        let (mut resources, errors) = parse_documents(Path::new("t.yaml"), yaml);
        assert_eq!(errors, vec![]);
        assign_namespaces(&mut resources, &ScopeTable::default(), Some("dest"));
        SyncPlan::build(resources, "op").unwrap()
    }

    fn decide<'a>(
        plan: &'a SyncPlan,
        unserved: &[(&str, &str)],
        options: &str,
        admission: &Admission,
    ) -> Prepared<'a> {
        let unserved: BTreeSet<(String, String)> = unserved
            .iter()
            .map(|(v, k)| ((*v).to_owned(), (*k).to_owned()))
            .collect();
        let sync_options: SyncOptions = options.parse().unwrap();
        prepare(
            plan,
            &PrepareInput {
                prune: &[],
                allow_empty: false,
                unserved: &unserved,
                sync_options: &sync_options,
                destination_namespace: Some("dest"),
                admission,
                shared: &[],
                now: &Time(Timestamp::UNIX_EPOCH),
            },
        )
    }

    fn names(tasks: &[&SyncTask]) -> Vec<String> {
        tasks.iter().map(|task| task.key.to_string()).collect()
    }

    #[test]
    fn every_object_but_sync_fail_hooks_is_dry_run_and_the_namespace_created_after() {
        let two = plan(TWO);
        let Prepared::Checked {
            dry_run,
            create_namespace,
        } = decide(&two, &[], "", &Admission::default())
        else {
            panic!("refused");
        };
        assert_eq!(names(&dry_run), ["ConfigMap dest/a", "ConfigMap dest/b"]);
        assert_eq!(create_namespace, None);
        let Prepared::Checked {
            create_namespace, ..
        } = decide(&two, &[], "CreateNamespace=true", &Admission::default())
        else {
            panic!("refused");
        };
        assert_eq!(
            create_namespace.map(|key| key.to_string()),
            Some("Namespace dest".to_owned())
        );
    }

    #[test]
    fn a_lone_object_is_checked_by_its_apply_unless_a_namespace_is_created_first() {
        let one = plan(ONE);
        let checked = |options| match decide(&one, &[], options, &Admission::default()) {
            Prepared::Checked { dry_run, .. } => names(&dry_run),
            refused @ Prepared::Refused { .. } => panic!("{refused:?}"),
        };
        assert_eq!(checked(""), Vec::<String>::new());
        assert_eq!(checked("CreateNamespace=true"), ["ConfigMap dest/a"]);
    }

    #[test]
    fn an_unserved_kind_is_refused_by_name_with_a_record() {
        let plan = plan(&format!("{ONE}---\n{WIDGET}"));
        let Prepared::Refused { records, message } = decide(
            &plan,
            &[("example.com/v1", "Widget")],
            "",
            &Admission::default(),
        ) else {
            panic!("not refused");
        };
        assert_eq!(
            message,
            "nothing was written: the server does not serve the kind of Widget dest/w"
        );
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].name, "w");
        assert_eq!(records[0].status, ResultStatus::SyncFailed);
        assert_eq!(records[0].finished_at, Some(Time(Timestamp::UNIX_EPOCH)));
    }

    #[test]
    fn what_the_project_refuses_is_named_the_namespace_to_create_too() {
        use crate::api::app_project::{AppProjectSpec, ProjectDestination};
        let admission = Admission {
            project: "team".to_owned(),
            spec: AppProjectSpec {
                destinations: vec![ProjectDestination {
                    server: "*".to_owned(),
                    name: String::new(),
                    namespace: "dest".to_owned(),
                }],
                ..AppProjectSpec::default()
            },
            ..Admission::default()
        };
        let one = plan(ONE);
        let Prepared::Refused { records, message } =
            decide(&one, &[], "CreateNamespace=true", &admission)
        else {
            panic!("not refused");
        };
        assert!(message.starts_with(PROJECT_REFUSAL), "{message}");
        assert!(
            message.ends_with("does not permit Namespace dest"),
            "{message}"
        );
        assert_eq!(records.len(), 1);
        assert_eq!(
            (records[0].kind.as_str(), records[0].sync_phase),
            ("Namespace", SyncPhase::PreSync)
        );
    }

    #[test]
    fn objects_another_application_tracks_are_refused_by_name() {
        let one = plan(ONE);
        let shared = [SharedObject {
            key: one.tasks[0].key.clone(),
            application: "team_other".to_owned(),
            annotation: crate::sync::TRACKING_ANNOTATION,
        }];
        let options = SyncOptions::default();
        let decided = prepare(
            &one,
            &PrepareInput {
                prune: &[],
                allow_empty: false,
                unserved: &BTreeSet::new(),
                sync_options: &options,
                destination_namespace: Some("dest"),
                admission: &Admission::default(),
                shared: &shared,
                now: &Time(Timestamp::UNIX_EPOCH),
            },
        );
        let Prepared::Refused { records, message } = decided else {
            panic!("not refused");
        };
        assert_eq!(
            message,
            "nothing was written: FailOnSharedResource=true and ConfigMap dest/a is tracked by \
             Application team/other (flotilla.dev/tracking-id)"
        );
        assert_eq!(
            (records.len(), records[0].status),
            (1, ResultStatus::SyncFailed)
        );
    }

    #[test]
    fn emptying_the_application_is_refused_first() {
        let empty = plan("");
        let prune = [PruneTask {
            key: ObjectKey {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: Some("dest".into()),
                name: "old".into(),
            },
            wave: 0,
            last: false,
            confirm: false,
        }];
        let unserved = BTreeSet::new();
        let options = SyncOptions::default();
        let admission = Admission::default();
        let decided = prepare(
            &empty,
            &PrepareInput {
                prune: &prune,
                allow_empty: false,
                unserved: &unserved,
                sync_options: &options,
                destination_namespace: Some("dest"),
                admission: &admission,
                shared: &[],
                now: &Time(Timestamp::UNIX_EPOCH),
            },
        );
        assert!(
            matches!(&decided, Prepared::Refused { records, message } if records.is_empty() && message.contains("manifests are empty")),
            "{decided:?}"
        );
    }
}
