//! The source resolver of one command (`sync`, `diff`, `plan`, `render`, `simulate`): the
//! controller's [`RepoCache`] in a temporary directory removed when the command ends, reading git
//! repositories only from this machine (`--repo URL=PATH` mappings, `file://` URLs, paths).

use std::sync::Arc;

use anyhow::Context;

use crate::repo::LocalRepos;
use crate::repo::cache::RepoCache;
use crate::source::Toolchain;

/// The resolver of a command given `--repo` `mappings`, generating with `toolchain`.
///
/// # Errors
/// A malformed mapping, or no temporary directory.
pub fn command_repos<S: AsRef<str>>(
    mappings: &[S],
    toolchain: &Arc<Toolchain>,
) -> anyhow::Result<RepoCache> {
    let repos = LocalRepos::from_mappings(mappings)?;
    Ok(RepoCache::temporary(repos, Arc::clone(toolchain))
        .context("cannot create a temporary directory for the repositories")?
        .local_only())
}
