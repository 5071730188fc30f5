//! The generation tools of one process and what it learns of them as it uses them: the
//! [`Tools`] the command line gave, the versions of helm and kustomize (checked once, when first
//! asked) and the generations kept per revision ([`Generations`]). One value, made by `main` and
//! handed to what generates (the controller's contexts, each command), instead of process
//! globals: two controllers in one test process each have their own.

use std::sync::OnceLock;

use flotilla_generators::cause::Cause;

use super::cache::Generations;
use super::tools::Tools;

/// What checking helm's and kustomize's versions found (each version, or why the tool is not
/// usable).
pub type Versions = (Result<String, Cause>, Result<String, Cause>);

/// The tools of a process, their checked versions and its kept generations.
#[derive(Debug, Default)]
pub struct Toolchain {
    /// The tools and limits the command line gave.
    pub tools: Tools,
    versions: OnceLock<Versions>,
    /// Generations kept per revision, shared by every Application with the same inputs.
    pub generations: Generations,
}

impl Toolchain {
    /// A toolchain of `tools`, nothing checked or kept yet.
    #[must_use]
    pub fn new(tools: Tools) -> Self {
        Self {
            tools,
            versions: OnceLock::new(),
            generations: Generations::default(),
        }
    }

    /// The versions of helm and kustomize, checked on the first call: what generation reports
    /// when a tool is unusable, what `flotilla version` prints and part of each kept
    /// generation's key.
    pub fn versions(&self) -> &Versions {
        self.versions.get_or_init(|| {
            (
                self.tools.helm_version().map_err(Cause::new),
                self.tools.kustomize_version().map_err(Cause::new),
            )
        })
    }
}
