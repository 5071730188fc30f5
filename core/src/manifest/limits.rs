//! Limits against hostile or broken sources, all in one place (their values are listed in the
//! book's Sources page, docs/src/concepts/sources.md): how much of a repository is checked out,
//! how many manifest files, bytes and objects one Application may have, and how far YAML
//! aliases may expand. Each is checked before the work it bounds, so exceeding one is an error
//! naming the file or directory, never an out-of-memory or a hang.

/// One mebibyte.
const MIB: u64 = 1024 * 1024;

/// The largest manifest file read (checked from its size before it is read).
pub const MAX_MANIFEST_FILE_BYTES: u64 = 8 * MIB;

/// The most manifest bytes one Application reads, all files together.
pub const MAX_APPLICATION_BYTES: u64 = 32 * MIB;

/// The most manifest files one Application reads (counted before any is read).
pub const MAX_APPLICATION_FILES: usize = 10_000;

/// The most objects the manifests of one Application hold.
pub const MAX_APPLICATION_OBJECTS: usize = 10_000;

/// Nested calls of one Jsonnet evaluation (go-jsonnet's default, which Argo CD keeps).
pub const MAX_JSONNET_STACK: usize = 500;

/// The most files (and symbolic links) a checked-out commit or a plain source directory may
/// hold; a commit is measured from its tree listing before anything is written. (A commit is
/// checked out whole, so this bounds the disk and time one commit costs: writing 100,000 files
/// takes several seconds even on an idle machine.)
pub const MAX_REPOSITORY_FILES: usize = 50_000;

/// The most bytes a checked-out commit may hold (from its tree listing, before anything is
/// written).
pub const MAX_REPOSITORY_BYTES: u64 = 512 * MIB;

/// The most symbolic links followed while resolving one path (Linux's own limit).
pub const MAX_LINK_HOPS: usize = 40;

/// The most YAML events one manifest file may replay through aliases (`*name`): bounds the
/// expansion of alias bombs ("billion laughs").
pub const MAX_YAML_ALIAS_EVENTS: usize = 100_000;

/// The most YAML nodes (scalars, sequences, mappings) one manifest file may hold.
pub const MAX_YAML_NODES: usize = 1_000_000;

/// How manifest files are parsed: serde-saphyr's budget with the limits above (one file may
/// hold at most [`MAX_APPLICATION_OBJECTS`] documents), errors without source snippets.
#[must_use]
pub fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_nodes: MAX_YAML_NODES,
            max_documents: MAX_APPLICATION_OBJECTS,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_YAML_ALIAS_EVENTS,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alias_bomb_is_refused_and_ordinary_aliases_work() {
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..10 {
            let previous = format!("*a{}", level - 1);
            let items = [previous.as_str(); 10].join(", ");
            bomb.push_str(&format!("a{level}: &a{level} [{items}]\n"));
        }
        let parsed =
            serde_saphyr::from_multiple_with_options::<serde_json::Value>(&bomb, yaml_options());
        assert!(parsed.is_err(), "10^10 nodes must not be expanded");
        let ordinary = "base: &base {a: 1}\nderived: *base\n";
        let parsed =
            serde_saphyr::from_multiple_with_options::<serde_json::Value>(ordinary, yaml_options())
                .unwrap();
        assert_eq!(parsed[0]["derived"]["a"], 1);
    }
}
