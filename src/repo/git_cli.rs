//! The `git` command line as a tree reader: resolve a revision to a commit, list the blobs of a
//! commit, read one blob, measure a commit's tree, write a commit's files to a directory. No
//! working tree of the repository is touched.

use std::ffi::OsStr;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::git_auth::GitAuth;

/// The file name whose entries hold a tree's attributes.
const ATTRIBUTES: &str = ".gitattributes";

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

    /// Clones `source` (a URL or local path) as a bare mirror into `into`, reaching it with
    /// `auth`, within `timeout`.
    ///
    /// # Errors
    /// A failing `git clone` (its message without any secret of `auth`).
    pub fn clone_mirror(
        source: &str,
        into: &Path,
        auth: &GitAuth,
        timeout: Duration,
    ) -> Result<Self, GitError> {
        let into_text = into.to_string_lossy();
        let args = ["clone", "--mirror", "--quiet", source, into_text.as_ref()];
        run_remote(None, &args, auth, timeout)?;
        Ok(Self::new(into))
    }

    /// Updates every ref of a mirror from its origin, dropping refs that are gone, reaching it
    /// with `auth`, within `timeout`.
    ///
    /// # Errors
    /// A failing `git fetch` (its message without any secret of `auth`).
    pub fn fetch(&self, auth: &GitAuth, timeout: Duration) -> Result<(), GitError> {
        let args = ["fetch", "--prune", "--quiet", "origin"];
        run_remote(Some(&self.repo), &args, auth, timeout).map(drop)
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

    /// The files (blobs and symbolic links) of `commit` and their total size, from its tree
    /// listing, read as it streams: counting stops after `max_files` + 1 files, so a huge tree
    /// costs no more than that.
    ///
    /// # Errors
    /// A failing `git`.
    pub fn measure(&self, commit: &str, max_files: usize) -> Result<TreeSize, GitError> {
        let args = ["ls-tree", "-r", "-l", "-z", "--full-tree", commit];
        let error = |message: String| self.error(&args, message);
        let mut child = Command::new("git")
            .arg("-C")
            .arg(&self.repo)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| error(format!("cannot run git: {e}")))?;
        let mut size = TreeSize::default();
        if let Some(stdout) = child.stdout.take() {
            let mut entries = std::io::BufReader::new(stdout).split(0);
            while size.files <= max_files {
                let Some(entry) = entries.next() else { break };
                let entry = entry.map_err(|e| error(format!("cannot read its output: {e}")))?;
                if let Some(bytes) = blob_size(&entry) {
                    size.files += 1;
                    size.bytes += bytes;
                }
            }
        }
        if size.files > max_files {
            // Enough is known; the rest of the listing is not wanted.
            let _ = child.kill();
            let _ = child.wait();
            return Ok(size);
        }
        let out = child
            .wait_with_output()
            .map_err(|e| error(format!("cannot run git: {e}")))?;
        if out.status.success() {
            Ok(size)
        } else {
            Err(error(failure(&out)))
        }
    }

    /// Writes every file of `commit` into `dir` exactly as committed (symbolic links as links;
    /// no `.gitattributes` filter or line-ending conversion applies), through a private index
    /// file next to `dir` that is removed afterwards, so the repository's own index, work tree
    /// and hooks are never involved.
    ///
    /// `checkout-index` applies the attributes it finds in the index, so the commit's
    /// `.gitattributes` files are taken out of the private index before it runs and written
    /// from their blobs afterwards (git 2.40's `GIT_ATTR_SOURCE` would do the same, but Debian 12
    /// ships git 2.39).
    ///
    /// # Errors
    /// A failing `git`.
    pub fn write_tree(&self, commit: &str, dir: &Path) -> Result<(), GitError> {
        let dir = std::path::absolute(dir)
            .map_err(|e| self.error(&["checkout-index"], format!("{}: {e}", dir.display())))?;
        let mut index = dir.clone().into_os_string();
        index.push(".index");
        let env = [("GIT_INDEX_FILE", index.as_os_str())];
        let mut work_tree = std::ffi::OsString::from("--work-tree=");
        work_tree.push(&dir);
        let written = run_git(Some(&self.repo), &[], &["read-tree", commit], &env)
            .and_then(|_| self.take_attributes(&env))
            .and_then(|attributes| {
                run_git(
                    Some(&self.repo),
                    &[work_tree.as_os_str()],
                    &[
                        "-c",
                        "core.symlinks=true",
                        "checkout-index",
                        "--all",
                        "--force",
                    ],
                    &env,
                )?;
                attributes
                    .iter()
                    .try_for_each(|entry| self.write_blob(entry, &dir))
            });
        let _ = std::fs::remove_file(&index);
        written
    }

    /// Removes the `.gitattributes` entries from the index `env` names; returns them.
    fn take_attributes(&self, env: &[(&str, &OsStr)]) -> Result<Vec<IndexEntry>, GitError> {
        let listed = run_git(Some(&self.repo), &[], &["ls-files", "--stage", "-z"], env)?;
        let entries: Vec<IndexEntry> = listed
            .split(|byte| *byte == 0)
            .filter_map(IndexEntry::parse)
            .filter(|entry| entry.path.rsplit('/').next() == Some(ATTRIBUTES))
            .collect();
        if !entries.is_empty() {
            let mut args = vec!["update-index", "--force-remove", "--"];
            args.extend(entries.iter().map(|entry| entry.path.as_str()));
            run_git(Some(&self.repo), &[], &args, env)?;
        }
        Ok(entries)
    }

    /// Writes the blob of `entry` to its path under `dir`, as a link when its mode is one.
    fn write_blob(&self, entry: &IndexEntry, dir: &Path) -> Result<(), GitError> {
        let content = self.run(&["cat-file", "blob", &entry.blob])?;
        let target = dir.join(&entry.path);
        let io =
            |e: std::io::Error| self.error(&["cat-file"], format!("{}: {e}", target.display()));
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        if entry.mode == "120000" {
            let link = String::from_utf8_lossy(&content).into_owned();
            std::os::unix::fs::symlink(link, &target).map_err(io)
        } else {
            std::fs::write(&target, content).map_err(io)
        }
    }

    fn run(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        run_git(Some(&self.repo), &[], args, &[])
    }

    fn error(&self, args: &[&str], message: String) -> GitError {
        GitError {
            repo: self.repo.clone(),
            args: args.join(" "),
            message,
        }
    }
}

/// How many files a tree holds and their total size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeSize {
    pub files: usize,
    pub bytes: u64,
}

/// The size of a blob entry of `git ls-tree -l` (`MODE TYPE OBJECT SIZE\tPATH`); None for
/// other entries (submodule commits).
fn blob_size(entry: &[u8]) -> Option<u64> {
    let header = entry.split(|b| *b == b'\t').next()?;
    let header = std::str::from_utf8(header).ok()?;
    let mut fields = header.split_whitespace();
    let kind = fields.nth(1)?;
    let size = fields.nth(1)?;
    (kind == "blob").then(|| size.parse().ok())?
}

/// Git's standard error, or its exit status when it printed nothing.
fn failure(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if stderr.is_empty() {
        format!("exited with {}", out.status)
    } else {
        stderr
    }
}

/// Runs `git` reaching a remote with `auth`, within `timeout`: the exec timeout every tool run
/// has (`--exec-timeout`; Argo CD's bounds its git commands the same way): a
/// server that accepts the connection and never answers must not hold the mirror, and every
/// reconcile waiting for it, forever. Its message is scrubbed of `auth`'s secrets.
fn run_remote(
    repo: Option<&Path>,
    args: &[&str],
    auth: &GitAuth,
    timeout: Duration,
) -> Result<Vec<u8>, GitError> {
    let env: Vec<(&str, &OsStr)> = auth
        .env()
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_os_str()))
        .collect();
    run_git_within(repo, &[], args, &env, Some(timeout)).map_err(|error| GitError {
        message: auth.scrub(&error.message),
        ..error
    })
}

/// One entry of `git ls-files --stage -z`: `MODE BLOB STAGE\tPATH`.
struct IndexEntry {
    mode: String,
    blob: String,
    path: String,
}

impl IndexEntry {
    fn parse(line: &[u8]) -> Option<Self> {
        let line = std::str::from_utf8(line).ok()?;
        let (fields, path) = line.split_once('\t')?;
        let mut fields = fields.split(' ');
        Some(Self {
            mode: fields.next()?.to_owned(),
            blob: fields.next()?.to_owned(),
            path: path.to_owned(),
        })
    }
}

/// [`run_git`], killed and failing after `timeout`, if given.
fn run_git_within(
    repo: Option<&Path>,
    options: &[&OsStr],
    args: &[&str],
    env: &[(&str, &OsStr)],
    timeout: Option<Duration>,
) -> Result<Vec<u8>, GitError> {
    let error = |message: String| GitError {
        repo: repo.map(Path::to_path_buf).unwrap_or_default(),
        args: args.join(" "),
        message,
    };
    let mut command = Command::new("git");
    if let Some(repo) = repo {
        command.arg("-C").arg(repo);
    }
    command.args(options).args(args).envs(env.iter().copied());
    let out = match timeout {
        None => command
            .output()
            .map_err(|e| error(format!("cannot run git: {e}")))?,
        Some(timeout) => output_within(command, timeout).map_err(error)?,
    };
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(error(failure(&out)))
    }
}

/// `command`'s output, as `Command::output` gives it, or why there is none: it could not run,
/// or it ran longer than `timeout` and was killed.
fn output_within(mut command: Command, timeout: Duration) -> Result<Output, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git: {e}"))?;
    // Read while it runs, so a full pipe never stops it.
    let stdout = child.stdout.take().map(read_all);
    let stderr = child.stderr.take().map(read_all);
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(WAIT_POLL),
            waited => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(match waited {
                    Err(e) => format!("cannot wait for git: {e}"),
                    Ok(_) => format!("no answer within {}s; killed", timeout.as_secs()),
                });
            }
        }
    };
    let joined = |reader: Option<std::thread::JoinHandle<Vec<u8>>>| {
        reader.and_then(|r| r.join().ok()).unwrap_or_default()
    };
    Ok(Output {
        status,
        stdout: joined(stdout),
        stderr: joined(stderr),
    })
}

/// Everything `pipe` gives until it closes, read on a thread of its own.
fn read_all(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// How often a running `git` is asked whether it has ended.
const WAIT_POLL: Duration = Duration::from_millis(10);

/// Runs `git` (in `repo`, if given; with `options` before the command and `env` set) and
/// returns its standard output.
fn run_git(
    repo: Option<&Path>,
    options: &[&OsStr],
    args: &[&str],
    env: &[(&str, &OsStr)],
) -> Result<Vec<u8>, GitError> {
    run_git_within(repo, options, args, env, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_that_never_answers_is_given_up_after_the_timeout() {
        // Accepts the connection (the kernel does, from the backlog) and never says a word.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("git://{}/fleet", silent.local_addr().unwrap());
        let into = tempfile::tempdir().unwrap();
        let target = into.path().join("mirror");
        let args = [
            "clone",
            "--mirror",
            "--quiet",
            &url,
            target.to_str().unwrap(),
        ];
        let started = Instant::now();
        let error = run_git_within(None, &[], &args, &[], Some(Duration::from_secs(1)))
            .expect_err("no answer");
        assert!(error.message.contains("no answer within 1s"), "{error:?}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}
