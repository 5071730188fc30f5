//! Deterministic names for hooks with `generateName`: unique per operation, stable on resume.

use crate::manifest::ObjectKey;

use crate::api::sync_phase::SyncPhase;

/// The same alphabet and length Kubernetes uses for generated suffixes.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const SUFFIX_LEN: usize = 5;
const MAX_PREFIX: usize = 58;

/// `prefix` + a 5-character suffix hashed from the operation id, the phase and the object
/// identity (FNV-1a), so a resumed operation finds its own hook and a new operation gets a new one.
#[must_use]
pub fn hook_name(prefix: &str, operation_id: &str, phase: SyncPhase, key: &ObjectKey) -> String {
    let identity = format!(
        "{operation_id}\0{phase}\0{}\0{}\0{}\0{}",
        key.group,
        key.kind,
        key.namespace.as_deref().unwrap_or(""),
        key.name
    );
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in identity.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let mut name: String = prefix.chars().take(MAX_PREFIX).collect();
    for _ in 0..SUFFIX_LEN {
        let index = usize::try_from(hash % ALPHABET.len() as u64).unwrap_or(0);
        name.push(char::from(ALPHABET[index]));
        hash /= ALPHABET.len() as u64;
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            group: "batch".into(),
            kind: "Job".into(),
            namespace: Some("n".into()),
            name: name.into(),
        }
    }

    #[test]
    fn deterministic_and_unique() {
        let a = hook_name("migrate-", "op-1", SyncPhase::PreSync, &key("migrate-"));
        assert_eq!(
            a,
            hook_name("migrate-", "op-1", SyncPhase::PreSync, &key("migrate-"))
        );
        assert!(a.starts_with("migrate-") && a.len() == "migrate-".len() + 5);
        let others = [
            hook_name("migrate-", "op-2", SyncPhase::PreSync, &key("migrate-")),
            hook_name("migrate-", "op-1", SyncPhase::PostSync, &key("migrate-")),
            hook_name("migrate-", "op-1", SyncPhase::PreSync, &key("other-")),
        ];
        assert!(others.iter().all(|other| *other != a), "{a} {others:?}");
    }

    #[test]
    fn long_prefixes_are_cut_to_fit() {
        let name = hook_name(&"x".repeat(80), "op", SyncPhase::Sync, &key("x"));
        assert_eq!(name.len(), 63);
    }
}
