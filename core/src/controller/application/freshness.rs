//! Whether an Application must be compared again: a compare reads the Application, its source
//! at the resolved commit and the live objects it tracks, so when none of them changed since a
//! compare that found it Synced, comparing again would find the same. What a compare read is
//! summed up as [`CompareInputs`]; [`compare_needed`] decides. Pure: the reconciler keeps the
//! last compare of each Application in memory (after a restart, the first compare runs anyway).

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::api::Application;

/// What one compare of an Application depended on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompareInputs {
    /// The Application's `metadata.resourceVersion`: it changes with its spec (source,
    /// destination, sync policy, operation), its annotations and its status. After the compare's
    /// own status write, the written version (see [`version_after_write`]).
    pub application_version: Option<String>,
    /// The commit the source resolved to (None for a plain local directory, which is read again
    /// every time).
    pub revision: Option<String>,
    /// [`tracked_fingerprint`] of the live objects tracked by the Application.
    pub tracked: u64,
}

/// The last compare of an Application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastCompare {
    pub inputs: CompareInputs,
    /// Whether it found the Application Synced. Only then are all its desired objects tracked
    /// (they carry its tracking annotation), so that the fingerprint sees every change to them.
    pub synced: bool,
    /// The kinds (group, kind) its plan deploys, for reading the tracked objects again.
    pub kinds: Vec<(String, String)>,
}

/// Whether the Application must be compared: there was no compare (or it did not find it
/// Synced), the source is a plain directory, or something the compare read changed.
#[must_use]
pub fn compare_needed(last: Option<&LastCompare>, now: &CompareInputs) -> bool {
    last.is_none_or(|last| !last.synced || now.revision.is_none() || last.inputs != *now)
}

/// The `resourceVersion` to remember for a compare of `read` whose status write answered
/// `written`: the written one when nothing but status changed in between (same generation, same
/// annotations), so the next resync does not compare again only because of the compare's own
/// write; otherwise the version read, so whatever else changed is compared.
#[must_use]
pub fn version_after_write(read: &Application, written: Option<&Application>) -> Option<String> {
    let only_status = |written: &&Application| {
        written.metadata.generation == read.metadata.generation
            && written.metadata.annotations == read.metadata.annotations
    };
    written
        .filter(only_status)
        .map_or(&read.metadata, |written| &written.metadata)
        .resource_version
        .clone()
}

/// A fingerprint of the tracked objects (`apiVersion`, `kind`, `metadata`) by identity and
/// `resourceVersion`, independent of their order: any write to one of them, or one appearing or
/// going, changes it.
#[must_use]
pub fn tracked_fingerprint(objects: &[Value]) -> u64 {
    let field = |object: &Value, pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut versions: Vec<[String; 5]> = objects
        .iter()
        .map(|object| {
            [
                field(object, "/apiVersion"),
                field(object, "/kind"),
                field(object, "/metadata/namespace"),
                field(object, "/metadata/name"),
                field(object, "/metadata/resourceVersion"),
            ]
        })
        .collect();
    versions.sort_unstable();
    let mut hasher = DefaultHasher::new();
    versions.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(name: &str, resource_version: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": name, "namespace": "ns", "resourceVersion": resource_version },
        })
    }

    fn inputs(version: &str, revision: Option<&str>, tracked: u64) -> CompareInputs {
        CompareInputs {
            application_version: Some(version.to_owned()),
            revision: revision.map(str::to_owned),
            tracked,
        }
    }

    fn last(synced: bool) -> LastCompare {
        LastCompare {
            inputs: inputs("7", Some("abc"), 1),
            synced,
            kinds: vec![(String::new(), "ConfigMap".to_owned())],
        }
    }

    #[test]
    fn remembers_the_written_version_only_when_nothing_but_status_changed() {
        let app = |version: &str, generation: i64, annotations: &[(&str, &str)]| -> Application {
            let annotations: serde_json::Map<String, Value> = annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), json!(v)))
                .collect();
            serde_json::from_value(json!({
                "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
                "metadata": {"name": "a", "resourceVersion": version, "generation": generation,
                             "annotations": annotations},
                "spec": {"project": "default", "source": {"repoURL": "file:///r"}, "destination": {}},
            }))
            .unwrap()
        };
        let read = app("7", 1, &[]);
        let version = |written: Option<&Application>| version_after_write(&read, written);
        assert_eq!(version(None).as_deref(), Some("7"), "nothing written");
        assert_eq!(version(Some(&app("9", 1, &[]))).as_deref(), Some("9"));
        assert_eq!(
            version(Some(&app("9", 2, &[]))).as_deref(),
            Some("7"),
            "the spec changed meanwhile: compare again"
        );
        assert_eq!(
            version(Some(&app("9", 1, &[("flotilla.dev/refresh", "normal")]))).as_deref(),
            Some("7"),
            "an annotation changed meanwhile: compare again"
        );
    }

    #[test]
    fn compares_unless_a_synced_compare_read_the_same() {
        let cases = [
            ("no compare yet", None, inputs("7", Some("abc"), 1), true),
            (
                "unchanged",
                Some(last(true)),
                inputs("7", Some("abc"), 1),
                false,
            ),
            (
                "last was OutOfSync",
                Some(last(false)),
                inputs("7", Some("abc"), 1),
                true,
            ),
            (
                "Application written",
                Some(last(true)),
                inputs("8", Some("abc"), 1),
                true,
            ),
            (
                "new commit",
                Some(last(true)),
                inputs("7", Some("def"), 1),
                true,
            ),
            (
                "live object written",
                Some(last(true)),
                inputs("7", Some("abc"), 2),
                true,
            ),
        ];
        for (case, last, now, needed) in cases {
            assert_eq!(compare_needed(last.as_ref(), &now), needed, "{case}");
        }
    }

    #[test]
    fn a_plain_directory_is_always_compared() {
        let mut last = last(true);
        last.inputs.revision = None;
        let now = last.inputs.clone();
        assert!(compare_needed(Some(&last), &now));
    }

    #[test]
    fn fingerprint_ignores_order_and_sees_every_write() {
        let a = object("a", "10");
        let b = object("b", "11");
        let both = tracked_fingerprint(&[a.clone(), b.clone()]);
        assert_eq!(tracked_fingerprint(&[b.clone(), a.clone()]), both);
        assert_ne!(tracked_fingerprint(&[a.clone(), object("b", "12")]), both);
        assert_ne!(tracked_fingerprint(std::slice::from_ref(&a)), both);
        assert_ne!(tracked_fingerprint(&[a, b, object("c", "1")]), both);
        assert_ne!(tracked_fingerprint(&[]), both);
    }
}
