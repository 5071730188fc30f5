//! Reading repositories offline: `--repo URL=PATH` mappings, `file://` URLs and local paths, each
//! served by the `git` CLI (a repository) or read as a plain directory (a quick preview).

pub mod cache;
pub mod checkout;
pub mod directory;
pub mod git_cli;
pub mod local;

pub use local::{LocalRepos, RepoError};
