//! `--recurse`, `--include` and `--exclude`: how a manifest directory is read, shared by the
//! subcommands that load one.

use flotilla_core::manifest::DirectoryOptions;

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
    /// The flags as directory options (to lay over an Application's with
    /// [`DirectoryOptions::over`]).
    #[must_use]
    pub fn options(&self) -> DirectoryOptions {
        DirectoryOptions {
            recurse: self.recurse,
            include: self.include.clone(),
            exclude: self.exclude.clone(),
            ..DirectoryOptions::default()
        }
    }
}
