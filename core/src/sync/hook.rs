//! Hook vocabulary: hook types from `argocd.argoproj.io/hook` (or Helm's `helm.sh/hook`) and
//! delete policies from `argocd.argoproj.io/hook-delete-policy` (or `helm.sh/hook-delete-policy`).

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use crate::api::hook_type::HookType;

/// Argo CD's hook annotation.
pub const HOOK_ANNOTATION: &str = "argocd.argoproj.io/hook";
/// Helm's hook annotation.
pub const HELM_HOOK_ANNOTATION: &str = "helm.sh/hook";
/// Argo CD's delete-policy annotation.
pub const DELETE_POLICY_ANNOTATION: &str = "argocd.argoproj.io/hook-delete-policy";
/// Helm's delete-policy annotation.
pub const HELM_DELETE_POLICY_ANNOTATION: &str = "helm.sh/hook-delete-policy";

/// A hook or delete-policy value that is not part of the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// Not a hook type.
    #[error(
        "unknown hook type {0:?} (expected PreSync, Sync, PostSync, SyncFail, PreDelete, PostDelete or Skip)"
    )]
    UnknownHookType(String),
    /// Not a Helm hook.
    #[error("unknown Helm hook {0:?}")]
    UnknownHelmHook(String),
    /// Not a delete policy.
    #[error(
        "unknown hook delete policy {0:?} (expected HookSucceeded, HookFailed or BeforeHookCreation)"
    )]
    UnknownDeletePolicy(String),
    /// An empty list.
    #[error("empty hook annotation")]
    Empty,
}

/// One hook type by its name (`PreSync`, …, `Skip`).
///
/// # Errors
/// A name outside the vocabulary.
pub fn hook_type(text: &str) -> Result<HookType, HookError> {
    Ok(match text {
        "PreSync" => HookType::PreSync,
        "Sync" => HookType::Sync,
        "PostSync" => HookType::PostSync,
        "SyncFail" => HookType::SyncFail,
        "PreDelete" => HookType::PreDelete,
        "PostDelete" => HookType::PostDelete,
        "Skip" => HookType::Skip,
        other => return Err(HookError::UnknownHookType(other.to_owned())),
    })
}

/// The hook types of an object: parses a comma list such as `PreSync,PostSync`.
///
/// # Errors
/// An unknown or empty value.
pub fn parse_hook_types(list: &str) -> Result<BTreeSet<HookType>, HookError> {
    parse_list(list, hook_type)
}

/// Translates Helm hooks: `pre-install`/`pre-upgrade`/`crd-install` → PreSync,
/// `post-install`/`post-upgrade` → PostSync, `post-delete` → PostDelete. Helm's delete, rollback
/// and test hooks have no sync equivalent and yield no type (the object is a hook that never runs).
///
/// # Errors
/// A value that is not a Helm hook.
pub fn parse_helm_hooks(list: &str) -> Result<BTreeSet<HookType>, HookError> {
    let mut types = BTreeSet::new();
    for value in split(list)? {
        match value {
            "pre-install" | "pre-upgrade" | "crd-install" => {
                types.insert(HookType::PreSync);
            }
            "post-install" | "post-upgrade" => {
                types.insert(HookType::PostSync);
            }
            "post-delete" => {
                types.insert(HookType::PostDelete);
            }
            "pre-delete" | "pre-rollback" | "post-rollback" | "test" | "test-success"
            | "test-failure" => {}
            other => return Err(HookError::UnknownHelmHook(other.to_owned())),
        }
    }
    Ok(types)
}

/// When a hook object is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DeletePolicy {
    /// After it succeeded.
    HookSucceeded,
    /// After it failed.
    HookFailed,
    /// The previous instance, just before the hook is created again (the default).
    BeforeHookCreation,
}

impl fmt::Display for DeletePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl FromStr for DeletePolicy {
    type Err = HookError;

    /// Accepts Argo CD's and Helm's spellings.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "HookSucceeded" | "hook-succeeded" => Self::HookSucceeded,
            "HookFailed" | "hook-failed" => Self::HookFailed,
            "BeforeHookCreation" | "before-hook-creation" => Self::BeforeHookCreation,
            other => return Err(HookError::UnknownDeletePolicy(other.to_owned())),
        })
    }
}

/// Parses a comma list of delete policies.
///
/// # Errors
/// An unknown or empty value.
pub fn parse_delete_policies(list: &str) -> Result<BTreeSet<DeletePolicy>, HookError> {
    parse_list(list, str::parse)
}

fn split(list: &str) -> Result<impl Iterator<Item = &str>, HookError> {
    if list.split(',').all(|v| v.trim().is_empty()) {
        return Err(HookError::Empty);
    }
    Ok(list.split(',').map(str::trim).filter(|v| !v.is_empty()))
}

fn parse_list<T: Ord>(
    list: &str,
    parse: impl Fn(&str) -> Result<T, HookError>,
) -> Result<BTreeSet<T>, HookError> {
    split(list)?.map(parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::sync_phase::SyncPhase;
    use HookType::*;

    #[test]
    fn hook_types() {
        let cases: [(&str, Result<Vec<HookType>, HookError>); 6] = [
            ("PreSync", Ok(vec![PreSync])),
            ("PreSync, PostSync", Ok(vec![PreSync, PostSync])),
            ("Skip", Ok(vec![Skip])),
            (
                "SyncFail,PostDelete,Sync",
                Ok(vec![Sync, SyncFail, PostDelete]),
            ),
            (
                "PreSync,Later",
                Err(HookError::UnknownHookType("Later".into())),
            ),
            (" , ", Err(HookError::Empty)),
        ];
        for (text, expected) in cases {
            assert_eq!(
                parse_hook_types(text),
                expected.map(BTreeSet::from_iter),
                "{text}"
            );
        }
    }

    #[test]
    fn helm_hooks() {
        let cases: [(&str, Result<Vec<HookType>, HookError>); 6] = [
            ("pre-install,pre-upgrade", Ok(vec![PreSync])),
            ("post-install,post-upgrade", Ok(vec![PostSync])),
            ("pre-install,post-install", Ok(vec![PreSync, PostSync])),
            ("post-delete", Ok(vec![PostDelete])),
            ("test", Ok(vec![])),
            (
                "pre-instal",
                Err(HookError::UnknownHelmHook("pre-instal".into())),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(
                parse_helm_hooks(text),
                expected.map(BTreeSet::from_iter),
                "{text}"
            );
        }
    }

    #[test]
    fn delete_policies() {
        use DeletePolicy::*;
        let cases: [(&str, Result<Vec<DeletePolicy>, HookError>); 5] = [
            ("HookSucceeded", Ok(vec![HookSucceeded])),
            (
                "HookSucceeded,BeforeHookCreation",
                Ok(vec![HookSucceeded, BeforeHookCreation]),
            ),
            (
                "hook-failed, before-hook-creation",
                Ok(vec![HookFailed, BeforeHookCreation]),
            ),
            (
                "HookSucceded",
                Err(HookError::UnknownDeletePolicy("HookSucceded".into())),
            ),
            ("", Err(HookError::Empty)),
        ];
        for (text, expected) in cases {
            assert_eq!(
                parse_delete_policies(text),
                expected.map(BTreeSet::from_iter),
                "{text}"
            );
        }
    }

    #[test]
    fn phases_of_hook_types() {
        for phase in SyncPhase::ALL {
            assert_eq!(HookType::of_phase(phase).phase(), Some(phase));
        }
        assert_eq!(Skip.phase(), None);
    }
}
