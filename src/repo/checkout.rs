//! Writing the files of one commit (below a path) to a directory, through the `git` CLI: the
//! directory a sync plan is loaded from. No working tree of the repository is touched.

use std::path::{Path, PathBuf};

use super::git_cli::{GitCli, GitError};

/// The files could not be written.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("cannot write the files of commit {commit} to {dir}: {error}")]
    Io {
        commit: String,
        dir: PathBuf,
        error: std::io::Error,
    },
}

/// Writes the files under `path` (relative to the repository root; empty or `.` for all) at
/// `commit` into `dir`, which is created even when no file matches.
///
/// # Errors
/// A failing `git` or an unwritable directory.
pub fn checkout(git: &GitCli, commit: &str, path: &str, dir: &Path) -> Result<(), CheckoutError> {
    let prefix = path.trim_matches('/');
    let prefix = if prefix == "." { "" } else { prefix };
    let io = |error| CheckoutError::Io {
        commit: commit.to_owned(),
        dir: dir.to_owned(),
        error,
    };
    for file in git.list_files(commit)? {
        let relative = if prefix.is_empty() {
            file.as_str()
        } else {
            match file
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('/'))
            {
                Some(rest) => rest,
                None => continue,
            }
        };
        let target = dir.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let content = git.read_file(commit, &file)?;
        std::fs::write(&target, content).map_err(io)?;
    }
    std::fs::create_dir_all(dir).map_err(io)?;
    Ok(())
}
