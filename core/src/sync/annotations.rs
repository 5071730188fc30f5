//! Reading an object's sync annotations (wave, hook types, delete policies, sync and compare
//! options) once, into typed values; every unparsable value is a validation error naming it.

use std::collections::{BTreeMap, BTreeSet};

use crate::manifest::{Resource, ValidationError};

use super::hook::{
    DELETE_POLICY_ANNOTATION, DeletePolicy, HELM_DELETE_POLICY_ANNOTATION, HELM_HOOK_ANNOTATION,
    HOOK_ANNOTATION, HookType, parse_delete_policies, parse_helm_hooks, parse_hook_types,
};
use super::options::{
    COMPARE_OPTIONS_ANNOTATION, CompareOptions, SYNC_OPTIONS_ANNOTATION, SyncOptions,
};

/// Argo CD's wave annotation.
pub const SYNC_WAVE_ANNOTATION: &str = "argocd.argoproj.io/sync-wave";
/// Helm's hook weight, the wave when no sync-wave is written.
pub const HELM_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
/// Helm's resource policy: `keep` means never pruned nor deleted with the Application
/// (`Prune=false,Delete=false`, over any sync options the object writes), as in Argo CD.
pub const HELM_RESOURCE_POLICY_ANNOTATION: &str = "helm.sh/resource-policy";

/// The typed sync annotations of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncAnnotations {
    /// `sync-wave`, else `helm.sh/hook-weight`, else 0.
    pub wave: i32,
    /// None for an ordinary object; the hook types otherwise (possibly none that run in a sync,
    /// e.g. a Helm test hook).
    pub hook: Option<BTreeSet<HookType>>,
    /// Delete policies; `BeforeHookCreation` when none is written, and `HookSucceeded` too for
    /// a PreDelete or PostDelete hook (Argo CD deletes those once they succeed).
    pub delete_policies: BTreeSet<DeletePolicy>,
    /// Sync options.
    pub options: SyncOptions,
    /// Compare options.
    pub compare: CompareOptions,
}

impl SyncAnnotations {
    /// Reads the annotations of a desired object.
    ///
    /// # Errors
    /// One error per unparsable annotation, naming the file, object and annotation.
    pub fn of_resource(resource: &Resource) -> Result<Self, Vec<ValidationError>> {
        let (annotations, problems) = Self::parse(&resource.annotations);
        match annotations {
            Some(annotations) if problems.is_empty() => Ok(annotations),
            _ => Err(problems.into_iter().map(|p| resource.error(p)).collect()),
        }
    }

    /// Parses annotations; returns the value when all parse, and the problems.
    #[must_use]
    pub fn parse(annotations: &BTreeMap<String, String>) -> (Option<Self>, Vec<String>) {
        let mut problems = Vec::new();
        let read = |key: &str| annotations.get(key).map(String::as_str);
        let wave_annotation = [SYNC_WAVE_ANNOTATION, HELM_WEIGHT_ANNOTATION]
            .into_iter()
            .find_map(|key| read(key).map(|value| (key, value)));
        let wave = match wave_annotation {
            None => Some(0),
            Some((key, value)) => value
                .trim()
                .parse::<i32>()
                .map_err(|_| {
                    problems.push(format!("annotation {key}: {value:?} is not an integer"))
                })
                .ok(),
        };
        let hook = match (read(HOOK_ANNOTATION), read(HELM_HOOK_ANNOTATION)) {
            (Some(value), _) => {
                note(&mut problems, HOOK_ANNOTATION, parse_hook_types(value)).map(Some)
            }
            (None, Some(value)) => {
                note(&mut problems, HELM_HOOK_ANNOTATION, parse_helm_hooks(value)).map(Some)
            }
            (None, None) => Some(None),
        };
        let delete_policies = match (
            read(DELETE_POLICY_ANNOTATION),
            read(HELM_DELETE_POLICY_ANNOTATION),
        ) {
            (Some(value), _) => note(
                &mut problems,
                DELETE_POLICY_ANNOTATION,
                parse_delete_policies(value),
            ),
            (None, Some(value)) => note(
                &mut problems,
                HELM_DELETE_POLICY_ANNOTATION,
                parse_delete_policies(value),
            ),
            (None, None) => Some(default_delete_policies(hook.as_ref())),
        };
        let options = match read(SYNC_OPTIONS_ANNOTATION) {
            Some(value) => note(&mut problems, SYNC_OPTIONS_ANNOTATION, value.parse()),
            None => Some(SyncOptions::default()),
        };
        let keep = read(HELM_RESOURCE_POLICY_ANNOTATION).is_some_and(|p| p.trim() == "keep");
        let options = options.map(|options| {
            if keep {
                SyncOptions::kept().over(&options)
            } else {
                options
            }
        });
        let compare = match read(COMPARE_OPTIONS_ANNOTATION) {
            Some(value) => note(&mut problems, COMPARE_OPTIONS_ANNOTATION, value.parse()),
            None => Some(CompareOptions::default()),
        };
        let parsed = match (wave, hook, delete_policies, options, compare) {
            (Some(wave), Some(hook), Some(delete_policies), Some(options), Some(compare)) => {
                Some(Self {
                    wave,
                    hook,
                    delete_policies,
                    options,
                    compare,
                })
            }
            _ => None,
        };
        (parsed, problems)
    }

    /// Whether the object is a hook (any hook annotation, even one that never runs in a sync).
    #[must_use]
    pub fn is_hook(&self) -> bool {
        self.hook.is_some()
    }
}

/// The delete policies of a hook that writes none (see [`SyncAnnotations::delete_policies`]).
fn default_delete_policies(hook: Option<&Option<BTreeSet<HookType>>>) -> BTreeSet<DeletePolicy> {
    let on_delete = hook.and_then(Option::as_ref).is_some_and(|types| {
        types.contains(&HookType::PreDelete) || types.contains(&HookType::PostDelete)
    });
    let mut policies = BTreeSet::from([DeletePolicy::BeforeHookCreation]);
    if on_delete {
        policies.insert(DeletePolicy::HookSucceeded);
    }
    policies
}

fn note<T, E: std::fmt::Display>(
    problems: &mut Vec<String>,
    key: &str,
    result: Result<T, E>,
) -> Option<T> {
    result
        .map_err(|error| problems.push(format!("annotation {key}: {error}")))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::options::{OptionValue, SyncOptionKey};

    fn parse(pairs: &[(&str, &str)]) -> (Option<SyncAnnotations>, Vec<String>) {
        let map = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        SyncAnnotations::parse(&map)
    }

    #[test]
    fn defaults() {
        let (parsed, problems) = parse(&[]);
        let parsed = parsed.unwrap();
        assert!(problems.is_empty());
        assert_eq!(parsed.wave, 0);
        assert!(!parsed.is_hook());
        assert_eq!(
            parsed.delete_policies,
            BTreeSet::from([DeletePolicy::BeforeHookCreation])
        );
    }

    #[test]
    fn waves() {
        let cases: [(&[(&str, &str)], i32); 4] = [
            (&[(SYNC_WAVE_ANNOTATION, "-2")], -2),
            (&[(HELM_WEIGHT_ANNOTATION, "5")], 5),
            (
                &[(SYNC_WAVE_ANNOTATION, " 3 "), (HELM_WEIGHT_ANNOTATION, "5")],
                3,
            ),
            (&[], 0),
        ];
        for (pairs, wave) in cases {
            assert_eq!(parse(pairs).0.unwrap().wave, wave, "{pairs:?}");
        }
    }

    #[test]
    fn hooks_and_policies_from_either_family() {
        let (parsed, _) = parse(&[
            (HELM_HOOK_ANNOTATION, "pre-install,pre-upgrade"),
            (HELM_DELETE_POLICY_ANNOTATION, "hook-succeeded"),
        ]);
        let parsed = parsed.unwrap();
        assert_eq!(parsed.hook, Some(BTreeSet::from([HookType::PreSync])));
        assert_eq!(
            parsed.delete_policies,
            BTreeSet::from([DeletePolicy::HookSucceeded])
        );
        let (parsed, _) = parse(&[
            (HOOK_ANNOTATION, "PostSync"),
            (HELM_HOOK_ANNOTATION, "pre-install"),
            (DELETE_POLICY_ANNOTATION, "HookFailed"),
            (HELM_DELETE_POLICY_ANNOTATION, "hook-succeeded"),
        ]);
        let parsed = parsed.unwrap();
        assert_eq!(parsed.hook, Some(BTreeSet::from([HookType::PostSync])));
        assert_eq!(
            parsed.delete_policies,
            BTreeSet::from([DeletePolicy::HookFailed])
        );
        assert!(
            parse(&[(SYNC_OPTIONS_ANNOTATION, "Prune=false")])
                .0
                .unwrap()
                .options
                .written()
                .eq([(SyncOptionKey::Prune, OptionValue::False)])
        );
    }

    #[test]
    fn deletion_hooks_are_deleted_after_success_unless_told_otherwise() {
        use DeletePolicy::{BeforeHookCreation, HookFailed, HookSucceeded};
        let post_delete = (HOOK_ANNOTATION, "PostDelete");
        let cases = [
            (vec![], vec![BeforeHookCreation]),
            (vec![(HOOK_ANNOTATION, "PreSync")], vec![BeforeHookCreation]),
            (vec![post_delete], vec![HookSucceeded, BeforeHookCreation]),
            (
                vec![(HOOK_ANNOTATION, "PreDelete")],
                vec![HookSucceeded, BeforeHookCreation],
            ),
            (
                vec![post_delete, (DELETE_POLICY_ANNOTATION, "HookFailed")],
                vec![HookFailed],
            ),
        ];
        for (pairs, expected) in cases {
            assert_eq!(
                parse(&pairs).0.unwrap().delete_policies,
                expected.into_iter().collect::<BTreeSet<_>>(),
                "{pairs:?}"
            );
        }
    }

    #[test]
    fn helm_keep_policy_is_never_pruned_nor_deleted() {
        let (annotations, _) = parse(&[
            (HELM_RESOURCE_POLICY_ANNOTATION, "keep"),
            (SYNC_OPTIONS_ANNOTATION, "Prune=true,ServerSideApply=true"),
        ]);
        let options = annotations.unwrap().options;
        assert!(!options.get(SyncOptionKey::Prune));
        assert!(!options.get(SyncOptionKey::Delete));
        assert!(options.get(SyncOptionKey::ServerSideApply));
        let (annotations, _) = parse(&[(HELM_RESOURCE_POLICY_ANNOTATION, "delete")]);
        assert!(annotations.unwrap().options.get(SyncOptionKey::Prune));
    }

    #[test]
    fn every_bad_value_is_reported() {
        let (parsed, problems) = parse(&[
            (SYNC_WAVE_ANNOTATION, "abc"),
            (HOOK_ANNOTATION, "PreSink"),
            (DELETE_POLICY_ANNOTATION, "Never"),
            (SYNC_OPTIONS_ANNOTATION, "Prune=maybe"),
            (COMPARE_OPTIONS_ANNOTATION, "IgnoreAll"),
        ]);
        assert_eq!(parsed, None);
        assert_eq!(
            problems,
            [
                "annotation argocd.argoproj.io/sync-wave: \"abc\" is not an integer",
                "annotation argocd.argoproj.io/hook: unknown hook type \"PreSink\" (expected PreSync, Sync, PostSync, SyncFail, PreDelete, PostDelete or Skip)",
                "annotation argocd.argoproj.io/hook-delete-policy: unknown hook delete policy \"Never\" (expected HookSucceeded, HookFailed or BeforeHookCreation)",
                "annotation argocd.argoproj.io/sync-options: sync option Prune=\"maybe\": expected true, false or confirm",
                "annotation argocd.argoproj.io/compare-options: unknown compare option \"IgnoreAll\"",
            ]
        );
    }
}
