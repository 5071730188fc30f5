//! A plain directory read as if it were a repository at one fixed revision: lets a user preview an
//! ApplicationSet against files on disk before committing them. Its links must stay inside it
//! and the files read are bounded (see [`super::bounds`]).

use std::path::{Path, PathBuf};

use super::bounds::{BoundsError, check_links, read_file};

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
    /// A link leading outside the root, too many files, an unreadable directory.
    pub fn list_files(&self) -> Result<Vec<String>, BoundsError> {
        check_links(&self.root)?;
        let mut files = Vec::new();
        collect(&self.root, "", &mut files).map_err(|error| BoundsError::Io {
            path: self.root.clone(),
            error,
        })?;
        files.sort();
        Ok(files)
    }

    /// The content of `path` relative to the root.
    ///
    /// # Errors
    /// A missing, unreadable or too large file, or a path leading outside the root.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, BoundsError> {
        read_file(&self.root, path)
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
