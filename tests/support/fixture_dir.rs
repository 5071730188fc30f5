//! Copying a fixture directory (a repository's files) into a test's scratch directory.

use std::path::Path;

/// Copies every file under `from` to the same place under `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("readable") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
