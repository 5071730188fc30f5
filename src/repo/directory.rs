//! A plain directory read as if it were a repository at one fixed revision: lets a user preview an
//! ApplicationSet against files on disk before committing them.

use std::path::{Path, PathBuf};

/// The pseudo-revision a directory resolves to.
pub const WORKING_TREE: &str = "working-tree";

/// A directory of files standing in for a repository.
#[derive(Clone, Debug)]
pub struct DirectoryTree {
    root: PathBuf,
}

impl DirectoryTree {
    /// A reader for `root`.
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Every file below the root, as `/`-separated relative paths, sorted; `.git` is skipped.
    ///
    /// # Errors
    /// An unreadable directory.
    pub fn list_files(&self) -> std::io::Result<Vec<String>> {
        let mut files = Vec::new();
        collect(&self.root, "", &mut files)?;
        files.sort();
        Ok(files)
    }

    /// The content of `path` relative to the root.
    ///
    /// # Errors
    /// A missing or unreadable file.
    pub fn read_file(&self, path: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.root.join(path))
    }
}

fn collect(dir: &Path, prefix: &str, files: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == ".git" {
            continue;
        }
        let relative = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if entry.file_type()?.is_dir() {
            collect(&entry.path(), &relative, files)?;
        } else {
            files.push(relative);
        }
    }
    Ok(())
}
