//! `--recurse`, `--include` and `--exclude`: how a manifest directory is read, shared by the
//! subcommands that load one.

use crate::manifest::DirectoryOptions;

/// Directory options as command-line flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DirectoryArgs {
    /// Descend into subdirectories.
    #[arg(long)]
    pub recurse: bool,
    /// Only files whose relative path matches this glob.
    #[arg(long)]
    pub include: Option<String>,
    /// Skip files whose relative path matches this glob.
    #[arg(long)]
    pub exclude: Option<String>,
}

impl DirectoryArgs {
    /// These flags over `base` (an Application's `directory` options): a flag that is set wins.
    #[must_use]
    pub fn over(&self, base: &DirectoryOptions) -> DirectoryOptions {
        DirectoryOptions {
            recurse: base.recurse || self.recurse,
            include: self.include.clone().or_else(|| base.include.clone()),
            exclude: self.exclude.clone().or_else(|| base.exclude.clone()),
        }
    }
}
