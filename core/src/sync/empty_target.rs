//! Refusing to empty an Application: when its manifests hold no object (hooks aside) and pruning
//! would delete live objects it manages, the sync would delete everything it deployed — most
//! often because its `path` was emptied or renamed by mistake. Such a sync is refused before
//! anything is written unless it is allowed (`syncPolicy.automated.allowEmpty: true`, or
//! `--allow-empty` on `flotilla sync` and `flotilla app sync`), as Argo CD refuses an automated
//! sync that would wipe out all of an Application's resources. Pure.

use super::plan::SyncPlan;
use super::prune::PruneTask;

/// Why syncing `plan` while pruning `prune` is refused, if it is.
#[must_use]
pub fn refuse_empty_target(
    plan: &SyncPlan,
    prune: &[PruneTask],
    allow_empty: bool,
) -> Option<String> {
    let empty = plan.tasks.iter().all(|task| task.hook.is_some());
    (empty && !prune.is_empty() && !allow_empty).then(|| {
        format!(
            "refused to delete all {} live object(s) of the Application: its manifests are empty \
             (allow it with syncPolicy.automated.allowEmpty: true or --allow-empty); nothing was written",
            prune.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::manifest::{ObjectKey, parse_documents};

    fn plan(yaml: &str) -> SyncPlan {
        let (resources, errors) = parse_documents(Path::new("t.yaml"), yaml);
        assert_eq!(errors, vec![]);
        SyncPlan::build(resources, "op").unwrap()
    }

    fn prune(names: &[&str]) -> Vec<PruneTask> {
        names
            .iter()
            .map(|name| PruneTask {
                key: ObjectKey {
                    group: String::new(),
                    kind: "ConfigMap".into(),
                    namespace: Some("n".into()),
                    name: (*name).into(),
                },
                wave: 0,
                last: false,
                confirm: false,
            })
            .collect()
    }

    #[test]
    fn only_an_empty_target_that_would_prune_is_refused_unless_allowed() {
        let empty = plan("");
        let hook_only = plan(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    \
             argocd.argoproj.io/hook: PreSync\nspec: {template: {spec: {containers: []}}}\n",
        );
        let one = plan("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n");
        let two = prune(&["a", "b"]);
        let cases = [
            (&empty, two.as_slice(), false, true),
            (&hook_only, two.as_slice(), false, true),
            (&empty, two.as_slice(), true, false),
            (&empty, &[][..], false, false),
            (&one, two.as_slice(), false, false),
        ];
        for (plan, prune, allow_empty, refused) in cases {
            let refusal = refuse_empty_target(plan, prune, allow_empty);
            assert_eq!(refusal.is_some(), refused, "{prune:?} {allow_empty}");
        }
        assert_eq!(
            refuse_empty_target(&empty, &two, false).unwrap(),
            "refused to delete all 2 live object(s) of the Application: its manifests are empty \
             (allow it with syncPolicy.automated.allowEmpty: true or --allow-empty); nothing was written"
        );
    }
}
