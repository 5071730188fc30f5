//! The `git` command line as a tree reader: resolve a revision to a commit, list the blobs of a
//! commit, read one blob. No working tree is touched.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A git invocation that failed.
#[derive(Debug, thiserror::Error)]
#[error("git {args} in {repo}: {message}")]
pub struct GitError {
    pub repo: PathBuf,
    pub args: String,
    pub message: String,
}

/// A local git repository (bare or with a work tree), read through `git`.
#[derive(Clone, Debug)]
pub struct GitCli {
    repo: PathBuf,
}

impl GitCli {
    /// A reader for the repository at `repo`.
    #[must_use]
    pub fn new(repo: impl Into<PathBuf>) -> Self {
        Self { repo: repo.into() }
    }

    /// Whether `path` is a git repository: a bare repository, the `.git` directory of one, or
    /// the top of a work tree (a directory inside a work tree is a plain directory: its files
    /// are read as they are on disk).
    #[must_use]
    pub fn is_repository(path: &Path) -> bool {
        let Ok(path) = path.canonicalize() else {
            return false;
        };
        let ask = |question: &str| {
            Command::new("git")
                .arg("-C")
                .arg(&path)
                .args(["rev-parse", question])
                .output()
                .ok()
                .filter(|out| out.status.success())
                .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        };
        let is = |answer: Option<PathBuf>| {
            answer.and_then(|dir| dir.canonicalize().ok()).as_ref() == Some(&path)
        };
        is(ask("--absolute-git-dir")) || is(ask("--show-toplevel"))
    }

    /// Clones `source` (a URL or local path) as a bare mirror into `into`.
    ///
    /// # Errors
    /// A failing `git clone`.
    pub fn clone_mirror(source: &str, into: &Path) -> Result<Self, GitError> {
        let into_text = into.to_string_lossy();
        let args = ["clone", "--mirror", "--quiet", source, into_text.as_ref()];
        run_git(None, &args)?;
        Ok(Self::new(into))
    }

    /// Updates every ref of a mirror from its origin, dropping refs that are gone.
    ///
    /// # Errors
    /// A failing `git fetch`.
    pub fn fetch(&self) -> Result<(), GitError> {
        self.run(&["fetch", "--prune", "--quiet", "origin"])
            .map(drop)
    }

    /// The commit SHA a branch, tag, commit or `HEAD` (empty revision) names.
    ///
    /// # Errors
    /// An unknown revision or a failing `git`.
    pub fn resolve(&self, revision: &str) -> Result<String, GitError> {
        let revision = if revision.is_empty() {
            "HEAD"
        } else {
            revision
        };
        let spec = format!("{revision}^{{commit}}");
        let out = self.run(&["rev-parse", "--verify", "--quiet", &spec])?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }

    /// Every blob path of `commit`, relative to the repository root.
    ///
    /// # Errors
    /// A failing `git`.
    pub fn list_files(&self, commit: &str) -> Result<Vec<String>, GitError> {
        let out = self.run(&["ls-tree", "-r", "-z", "--name-only", commit])?;
        Ok(out
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect())
    }

    /// The content of `path` at `commit`.
    ///
    /// # Errors
    /// A missing path or a failing `git`.
    pub fn read_file(&self, commit: &str, path: &str) -> Result<Vec<u8>, GitError> {
        self.run(&["cat-file", "blob", &format!("{commit}:{path}")])
    }

    fn run(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        run_git(Some(&self.repo), args)
    }
}

/// Runs `git` (in `repo`, if given) and returns its standard output.
fn run_git(repo: Option<&Path>, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let error = |message: String| GitError {
        repo: repo.map(Path::to_path_buf).unwrap_or_default(),
        args: args.join(" "),
        message,
    };
    let mut command = Command::new("git");
    if let Some(repo) = repo {
        command.arg("-C").arg(repo);
    }
    let out = command
        .args(args)
        .output()
        .map_err(|e| error(format!("cannot run git: {e}")))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(error(if stderr.is_empty() {
            format!("exited with {}", out.status)
        } else {
            stderr
        }))
    }
}
