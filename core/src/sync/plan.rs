//! Building the sync plan from desired resources: every object becomes ordered tasks (hooks one
//! per phase, generated hook names resolved), with all validation errors collected together.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use crate::manifest::{
    ObjectKey, ObjectName, Resource, ScopeTable, ValidationError, ValidationErrors,
    assign_namespaces, find_duplicates,
};

use super::annotations::SyncAnnotations;
use super::hook::HookType;
use super::hook_name::hook_name;
use super::order::order_tasks;
use super::task::{Batch, Hook, SyncTask};
use crate::api::sync_phase::SyncPhase;

/// Everything a sync of one revision will do with the desired objects.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncPlan {
    /// Tasks of PreSync, Sync, PostSync and SyncFail, in execution order.
    pub tasks: Vec<SyncTask>,
    /// PreDelete and PostDelete hooks, run only when the Application is deleted (see
    /// [`Self::deletion_hook_plan`]); never applied, compared or pruned by a sync.
    pub on_delete: Vec<SyncTask>,
    /// Objects never applied: `Skip` hooks and Helm hooks without a sync equivalent.
    pub skipped: Vec<ObjectKey>,
}

impl SyncPlan {
    /// Builds the plan for resources whose namespaces are already assigned. `operation_id` makes
    /// generated hook names unique per operation.
    ///
    /// # Errors
    /// Every unparsable annotation, and `generateName` on an object that is not a hook.
    pub fn build(resources: Vec<Resource>, operation_id: &str) -> Result<Self, ValidationErrors> {
        let tasks = Vec::with_capacity(resources.len());
        let mut plan = Self {
            tasks,
            on_delete: Vec::new(),
            skipped: Vec::new(),
        };
        let mut errors = Vec::new();
        for resource in resources {
            let annotations = match SyncAnnotations::of_resource(&resource) {
                Ok(annotations) => annotations,
                Err(problems) => {
                    errors.extend(problems);
                    continue;
                }
            };
            let Some(hook_types) = &annotations.hook else {
                if matches!(resource.name, ObjectName::GenerateName(_)) {
                    errors.push(resource.error("metadata.generateName is only supported on hooks"));
                    continue;
                }
                plan.tasks.push(task(
                    resource,
                    SyncPhase::Sync,
                    None,
                    &annotations,
                    operation_id,
                ));
                continue;
            };
            let phases: BTreeSet<SyncPhase> = hook_types.iter().filter_map(|t| t.phase()).collect();
            if phases.is_empty() {
                plan.skipped.push(resource.key());
                continue;
            }
            for phase in phases {
                let hook = Hook {
                    hook_type: HookType::of_phase(phase),
                    delete_policies: annotations.delete_policies.clone(),
                };
                let task = task(
                    resource.clone(),
                    phase,
                    Some(hook),
                    &annotations,
                    operation_id,
                );
                if matches!(phase, SyncPhase::PreDelete | SyncPhase::PostDelete) {
                    plan.on_delete.push(task);
                } else {
                    plan.tasks.push(task);
                }
            }
        }
        if !errors.is_empty() {
            return Err(ValidationErrors(errors));
        }
        order_tasks(&mut plan.tasks);
        order_tasks(&mut plan.on_delete);
        Ok(plan)
    }

    /// Builds the plan of a source's generated manifests (its resources and errors, as the
    /// shell's generation step returns them): namespaces defaulted to `destination` (scopes from
    /// the built-in table and the source's CRDs), duplicates rejected.
    ///
    /// # Errors
    /// All validation errors of the source, together.
    pub fn from_loaded(
        (mut resources, mut errors): (Vec<Resource>, Vec<ValidationError>),
        destination: Option<&str>,
        operation_id: &str,
    ) -> Result<Self, ValidationErrors> {
        let mut scopes = ScopeTable::default();
        scopes.learn_from_crds(&resources);
        assign_namespaces(&mut resources, &scopes, destination);
        errors.extend(find_duplicates(&resources));
        match Self::build(resources, operation_id) {
            Ok(plan) if errors.is_empty() => Ok(plan),
            Ok(_) => Err(ValidationErrors(errors)),
            Err(ValidationErrors(more)) => {
                errors.extend(more);
                Err(ValidationErrors(errors))
            }
        }
    }

    /// Whether plans of `resources` differ between operations: only generated hook names
    /// (`metadata.generateName`) depend on the operation id.
    #[must_use]
    pub fn depends_on_operation(resources: &[Resource]) -> bool {
        resources
            .iter()
            .any(|resource| matches!(resource.name, ObjectName::GenerateName(_)))
    }

    /// The batches of the plan in execution order, each with its tasks.
    #[must_use]
    pub fn batches(&self) -> Vec<(Batch, &[SyncTask])> {
        self.tasks
            .chunk_by(|a, b| a.batch() == b.batch())
            .map(|tasks| (tasks[0].batch(), tasks))
            .collect()
    }

    /// The deletion hooks of `phase` (PreDelete or PostDelete).
    pub fn deletion_hooks(&self, phase: SyncPhase) -> impl Iterator<Item = &SyncTask> {
        self.on_delete
            .iter()
            .filter(move |task| task.phase == phase)
    }

    /// The plan of a deleted Application's hooks of `phase` alone: they run as the tasks of an
    /// operation of their own — PreDelete before its resources are deleted, PostDelete once
    /// they are gone.
    #[must_use]
    pub fn deletion_hook_plan(self, phase: SyncPhase) -> Self {
        Self {
            tasks: self
                .on_delete
                .into_iter()
                .filter(|task| task.phase == phase)
                .collect(),
            on_delete: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Whether any task of the sync is a hook (a hook's run must be recorded before it is
    /// created, so that a resumed operation adopts it instead of running it again).
    #[must_use]
    pub fn has_hooks(&self) -> bool {
        self.tasks.iter().any(|task| task.hook.is_some())
    }

    /// Whether any task runs in this phase.
    #[must_use]
    pub fn has_phase(&self, phase: SyncPhase) -> bool {
        self.tasks.iter().any(|task| task.phase == phase)
    }
}

fn task(
    mut resource: Resource,
    phase: SyncPhase,
    hook: Option<Hook>,
    annotations: &SyncAnnotations,
    operation_id: &str,
) -> SyncTask {
    if let ObjectName::GenerateName(prefix) = &resource.name {
        let name = hook_name(prefix, operation_id, phase, &resource.key());
        if let Some(metadata) = resource
            .body
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        {
            metadata.remove("generateName");
            metadata.insert("name".to_owned(), Value::String(name.clone()));
        }
        resource.name = ObjectName::Name(name);
    }
    SyncTask {
        key: resource.key(),
        phase,
        wave: annotations.wave,
        hook,
        promotion: None,
        options: annotations.options.clone(),
        compare: annotations.compare,
        resource,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::manifest::memory_tree::MemoryTree;
    use crate::manifest::{DirectoryOptions, load_directory, parse_documents};

    /// `phase wave kind name` per task, with `^` for promoted ones.
    fn order(yaml: &str) -> Vec<String> {
        let plan = plan_of(yaml);
        plan.tasks
            .iter()
            .map(|t| {
                let promoted = if t.promotion.is_some() { "^" } else { "" };
                format!(
                    "{} {} {} {}{promoted}",
                    t.phase, t.wave, t.key.kind, t.key.name
                )
            })
            .collect()
    }

    fn plan_of(yaml: &str) -> SyncPlan {
        let (mut resources, errors) = parse_documents(Path::new("t.yaml"), yaml);
        assert_eq!(errors, vec![]);
        assign_namespaces(&mut resources, &ScopeTable::default(), Some("dest"));
        SyncPlan::build(resources, "op").unwrap()
    }

    fn object(kind: &str, name: &str, annotations: &[(&str, &str)]) -> String {
        let api_version = match kind {
            "Deployment" | "StatefulSet" | "DaemonSet" => "apps/v1",
            "Job" | "CronJob" => "batch/v1",
            "CustomResourceDefinition" => "apiextensions.k8s.io/v1",
            "Widget" => "example.com/v1",
            "Ingress" => "networking.k8s.io/v1",
            _ => "v1",
        };
        let annotations: String = annotations
            .iter()
            .map(|(k, v)| format!("\n    {k}: \"{v}\""))
            .collect();
        format!("---\napiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n  annotations: {{}}{annotations}\n")
            .replace("annotations: {}\n    ", "annotations:\n    ")
    }

    #[test]
    fn shop_example_runs_in_argo_cd_order() {
        let plan = plan_of(include_str!("testdata/shop.yaml"));
        let order: Vec<String> = plan
            .batches()
            .iter()
            .map(|(batch, tasks)| {
                let names: Vec<String> = tasks.iter().map(|t| t.key.to_string()).collect();
                format!("{batch}: {}", names.join(", "))
            })
            .collect();
        assert_eq!(
            order,
            [
                "PreSync wave 0: Namespace shop",
                "PreSync wave 0: Job shop/db-migrate",
                "wave -1: ConfigMap shop/shop-config",
                "wave 0: Service shop/shop-api, Deployment shop/shop-api",
                "PostSync wave 0: Job shop/smoke-test",
            ]
        );
        let namespace = &plan.tasks[0];
        let promotion = namespace.promotion.as_ref().unwrap();
        assert_eq!(promotion.ahead_of.to_string(), "Job shop/db-migrate");
        assert_eq!(
            (promotion.declared_phase, promotion.declared_wave),
            (SyncPhase::Sync, -2)
        );
        let migrate = plan.tasks[1].hook.as_ref().unwrap();
        assert!(migrate.deleted_after(true) && !migrate.deleted_after(false));
        let smoke = plan.tasks[5].hook.as_ref().unwrap();
        assert!(!smoke.deleted_after(true) && smoke.replaces_previous(&plan.tasks[5].key));
    }

    #[test]
    fn phases_then_waves_then_kinds_then_names() {
        let yaml = [
            object("Deployment", "b", &[]),
            object("Deployment", "a", &[]),
            object("ConfigMap", "z", &[]),
            object("Service", "s", &[("argocd.argoproj.io/sync-wave", "-1")]),
            object("Job", "post", &[("argocd.argoproj.io/hook", "PostSync")]),
            object(
                "Job",
                "pre",
                &[
                    ("argocd.argoproj.io/hook", "PreSync"),
                    ("argocd.argoproj.io/sync-wave", "5"),
                ],
            ),
            object("Pod", "pre0", &[("argocd.argoproj.io/hook", "PreSync")]),
            object("Job", "fail", &[("argocd.argoproj.io/hook", "SyncFail")]),
            object("Widget", "w", &[]),
            object("Ingress", "i", &[]),
            object("Secret", "sec", &[("helm.sh/hook-weight", "-3")]),
            object(
                "Job",
                "helm",
                &[
                    ("helm.sh/hook", "post-install,post-upgrade"),
                    ("helm.sh/hook-weight", "-1"),
                ],
            ),
        ]
        .concat();
        assert_eq!(
            order(&yaml),
            [
                "PreSync 0 Pod pre0",
                "PreSync 5 Job pre",
                "Sync -3 Secret sec",
                "Sync -1 Service s",
                "Sync 0 ConfigMap z",
                "Sync 0 Deployment a",
                "Sync 0 Deployment b",
                "Sync 0 Ingress i",
                "Sync 0 Widget w",
                "PostSync -1 Job helm",
                "PostSync 0 Job post",
                "SyncFail 0 Job fail",
            ]
        );
    }

    #[test]
    fn namespaces_and_crds_move_ahead_of_their_first_user() {
        let crd = "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                   metadata:\n  name: widgets.example.com\n  annotations:\n    argocd.argoproj.io/sync-wave: \"3\"\n\
                   spec:\n  group: example.com\n  names: {kind: Widget}\n";
        let namespace = "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: dest\n";
        let late_namespace = "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: unused\n  \
                              annotations:\n    argocd.argoproj.io/sync-wave: \"9\"\n";
        let yaml = [
            crd.to_owned(),
            namespace.to_owned(),
            late_namespace.to_owned(),
            object("Widget", "w", &[("argocd.argoproj.io/sync-wave", "1")]),
            object(
                "ConfigMap",
                "c",
                &[
                    ("argocd.argoproj.io/hook", "PreSync"),
                    ("argocd.argoproj.io/sync-wave", "-4"),
                ],
            ),
            object(
                "ConfigMap",
                "f",
                &[
                    ("argocd.argoproj.io/hook", "SyncFail"),
                    ("argocd.argoproj.io/sync-wave", "-9"),
                ],
            ),
        ]
        .concat();
        assert_eq!(
            order(&yaml),
            [
                "PreSync -4 Namespace dest^",
                "PreSync -4 ConfigMap c",
                "Sync 1 CustomResourceDefinition widgets.example.com^",
                "Sync 1 Widget w",
                "Sync 9 Namespace unused",
                "SyncFail -9 ConfigMap f",
            ]
        );
        let plan = plan_of(&yaml);
        let batches: Vec<String> = plan
            .batches()
            .iter()
            .map(|(b, t)| format!("{b}/{}/{}", b.prerequisites, t.len()))
            .collect();
        assert_eq!(
            batches,
            [
                "PreSync wave -4/true/1",
                "PreSync wave -4/false/1",
                "wave 1/true/1",
                "wave 1/false/1",
                "wave 9/true/1",
                "SyncFail wave -9/false/1"
            ]
        );
    }

    #[test]
    fn hooks_split_per_phase_skip_and_deletion_hooks() {
        let generated = "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: check-\n  \
                         annotations:\n    argocd.argoproj.io/hook: PreSync,PostSync\n";
        let yaml = [
            generated.to_owned(),
            object("Job", "skipped", &[("argocd.argoproj.io/hook", "Skip")]),
            object("Job", "helm-test", &[("helm.sh/hook", "test")]),
            object(
                "Job",
                "cleanup",
                &[("argocd.argoproj.io/hook", "PostDelete")],
            ),
            object("Job", "backup", &[("argocd.argoproj.io/hook", "PreDelete")]),
        ]
        .concat();
        let plan = plan_of(&yaml);
        let names: Vec<_> = plan
            .tasks
            .iter()
            .map(|t| (t.phase, t.key.name.clone()))
            .collect();
        assert_eq!(names.len(), 2);
        assert_eq!(names[0].0, SyncPhase::PreSync);
        assert_eq!(names[1].0, SyncPhase::PostSync);
        assert!(names[0].1.starts_with("check-") && names[0].1 != names[1].1);
        assert_eq!(
            plan.tasks[0].resource.body["metadata"]["name"],
            names[0].1.as_str()
        );
        assert!(
            plan.tasks[0].resource.body["metadata"]
                .get("generateName")
                .is_none()
        );
        assert_eq!(plan_of(&yaml).tasks, plan.tasks, "names are deterministic");
        let skipped: Vec<_> = plan.skipped.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(skipped, ["skipped", "helm-test"]);
        assert_eq!(plan.on_delete.len(), 2, "never in a sync's tasks");
        for (phase, name) in [
            (SyncPhase::PreDelete, "backup"),
            (SyncPhase::PostDelete, "cleanup"),
        ] {
            let hooks: Vec<_> = plan
                .deletion_hooks(phase)
                .map(|t| t.key.name.as_str())
                .collect();
            assert_eq!(hooks, [name]);
            let alone = plan.clone().deletion_hook_plan(phase);
            assert_eq!(alone.tasks.len(), 1);
            assert!(alone.on_delete.is_empty() && alone.has_phase(phase));
        }
    }

    #[test]
    fn only_generated_hook_names_make_plans_differ_between_operations() {
        let generated = "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: check-\n  \
                         annotations:\n    argocd.argoproj.io/hook: PreSync\n";
        let named = object("Job", "migrate", &[("argocd.argoproj.io/hook", "PreSync")]);
        let config = object("ConfigMap", "settings", &[]);
        for (yaml, depends) in [
            (config.clone(), false),
            ([config.clone(), named].concat(), false),
            ([config, generated.to_owned()].concat(), true),
        ] {
            let (resources, errors) = parse_documents(Path::new("t.yaml"), &yaml);
            assert_eq!(errors, vec![]);
            assert_eq!(
                SyncPlan::depends_on_operation(&resources),
                depends,
                "{yaml}"
            );
            let build = |id| SyncPlan::from_loaded((resources.clone(), vec![]), Some("d"), id);
            assert_eq!(build("a") != build("b"), depends, "{yaml}");
        }
    }

    #[test]
    fn loading_reports_every_error_together() {
        let mut tree = MemoryTree::default();
        let mut write = |name: &str, text: &str| tree.write(&format!("/src/{name}"), text);
        write(
            "a.yaml",
            &object(
                "ConfigMap",
                "dup",
                &[("argocd.argoproj.io/sync-wave", "abc")],
            ),
        );
        write(
            "b.yaml",
            &[
                object("ConfigMap", "dup", &[]),
                object("Job", "j", &[("argocd.argoproj.io/hook", "Later")]),
            ]
            .concat(),
        );
        write("c.yaml", "kind: [");
        write(
            "d.yaml",
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: x-\n",
        );
        let loaded = load_directory(&tree, Path::new("/src"), &DirectoryOptions::default());
        let errors = SyncPlan::from_loaded(loaded, Some("ns"), "op").unwrap_err();
        let messages: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 5, "{messages:#?}");
        assert!(
            messages[0].starts_with("c.yaml: invalid YAML"),
            "{messages:#?}"
        );
        assert_eq!(
            messages[1],
            "b.yaml (document 0) ConfigMap ns/dup: duplicate object, first defined in a.yaml (document 0)"
        );
        assert_eq!(
            messages[2],
            "a.yaml (document 0) ConfigMap ns/dup: annotation argocd.argoproj.io/sync-wave: \"abc\" is not an integer"
        );
        assert!(messages[3].starts_with("b.yaml (document 1) Job ns/j: annotation argocd.argoproj.io/hook: unknown hook type \"Later\""));
        assert_eq!(
            messages[4],
            "d.yaml (document 0) ConfigMap ns/x-: metadata.generateName is only supported on hooks"
        );
    }
}
