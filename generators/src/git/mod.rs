//! The `git` generator: chooses between the [`directories`] and [`files`] variants, which share
//! the helpers of [`paths`].

mod directories;
mod files;
mod paths;

use serde_json::Value;

use crate::generator::{GenerateContext, Generator, GeneratorError, GeneratorErrorReason};
use crate::params::Params;
use crate::spec::GitGenerator;

impl Generator for GitGenerator {
    fn generate(&self, ctx: &GenerateContext<'_>) -> Result<Vec<Params>, GeneratorError> {
        match (self.directories.is_empty(), self.files.is_empty()) {
            (false, true) => directories::generate(self, ctx),
            (true, false) => files::generate(self, ctx),
            (true, true) => Err(GeneratorError::here(GeneratorErrorReason::NoGitPaths)),
            (false, false) => Err(GeneratorError::here(GeneratorErrorReason::BothGitPaths)),
        }
    }

    fn template(&self) -> Option<&Value> {
        self.template.as_ref()
    }
}
