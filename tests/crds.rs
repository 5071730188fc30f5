//! The CRDs committed under `deploy/crds/` are exactly what `flotilla crd` prints. Regenerate with
//! `UPDATE_GOLDEN=1 cargo test --test crds`.

use std::path::PathBuf;

use flotilla_core::api::crd;

#[test]
fn committed_crds_match_the_types() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/crds");
    for (file, definition) in crd::all() {
        let actual = crd::to_yaml(&definition).expect("serializes");
        let path = dir.join(file);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, &actual).expect("writes");
        }
        let committed =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            actual, committed,
            "{file} drifted from the Rust types; regenerate with UPDATE_GOLDEN=1"
        );
    }
}
