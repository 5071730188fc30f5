//! A command's temporary directory (its repository clones and commit checkouts): removed when its
//! guard is dropped — the command ended, also with an error — and, through [`remove_all`], by
//! the command line's interrupt handler before the process exits on Ctrl-C.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The temporary directories of this process that exist now.
static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// A new private directory under the system's temporary directory, removed when dropped.
#[derive(Debug)]
pub struct TemporaryDir {
    path: PathBuf,
}

impl TemporaryDir {
    /// Creates a directory named `prefix` and a unique suffix.
    ///
    /// # Errors
    /// The temporary directory is not writable.
    pub fn new(prefix: &str) -> std::io::Result<Self> {
        let path = tempfile::Builder::new().prefix(prefix).tempdir()?.keep();
        live().insert(path.clone());
        Ok(Self { path })
    }

    /// Where it is.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TemporaryDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        live().remove(&self.path);
    }
}

/// Removes every temporary directory of this process that still exists (the guards' drops will
/// find nothing left). For an interrupt handler, just before the process exits.
pub fn remove_all() {
    for path in std::mem::take(&mut *live()) {
        let _ = std::fs::remove_dir_all(path);
    }
}

fn live() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_when_dropped() {
        let dropped = TemporaryDir::new("flotilla-temporary-test-").unwrap();
        let path = dropped.path().to_owned();
        std::fs::create_dir_all(path.join("trees/a")).unwrap();
        std::fs::write(path.join("trees/a/f.yaml"), "a: 1\n").unwrap();
        drop(dropped);
        assert!(!path.exists());
        assert!(!live().contains(&path), "forgotten once removed");
    }
}
