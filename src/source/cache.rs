//! Generated manifests kept per (revision, source directory, source options, tool versions), so
//! Applications with identical inputs share one tool run and a controller at steady state runs
//! none. Only sources at a known revision are kept (a commit's tree or a chart version is never
//! written again); a plain local directory, which may change, is generated every time. Bounded:
//! the oldest entry goes first. One [`Generations`] is owned by the process's
//! [`super::Toolchain`].

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use flotilla_core::manifest::{Resource, ValidationError};

/// The most generations kept.
pub const CAPACITY: usize = 1024;

/// What a generation produced.
pub type Generated = (Vec<Resource>, Vec<ValidationError>);

/// What decides a generation's output.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// The commit or chart version.
    pub revision: String,
    /// The source directory (inside that revision's tree).
    pub root: PathBuf,
    /// The source options that matter ([`super::SourceOptions::inputs`]), printed.
    pub options: String,
    /// The tools' versions, printed.
    pub tools: String,
}

/// The kept generations, shared by every thread that generates.
#[derive(Default)]
pub struct Generations {
    kept: Mutex<Kept>,
}

/// Kept generations, oldest first in `order`.
#[derive(Default)]
struct Kept {
    entries: HashMap<Key, Arc<Generated>>,
    order: VecDeque<Key>,
}

impl Key {
    /// The key of generating `root` at `revision` with `options` (already reduced to the inputs
    /// that matter) and `tools` (their versions).
    #[must_use]
    pub fn new(
        revision: &str,
        root: &Path,
        options: &impl std::fmt::Debug,
        tools: &impl std::fmt::Debug,
    ) -> Self {
        Self {
            revision: revision.to_owned(),
            root: root.to_owned(),
            options: format!("{options:?}"),
            tools: format!("{tools:?}"),
        }
    }
}

impl Generations {
    /// The kept generation of `key`, or `generate`'s (kept when it has no error: a failure is
    /// retried, e.g. after a tool is fixed).
    pub fn get_or_generate(&self, key: Key, generate: impl FnOnce() -> Generated) -> Generated {
        if let Some(found) = self.lock().entries.get(&key) {
            return (**found).clone();
        }
        let generated = generate();
        if generated.1.is_empty() {
            let mut kept = self.lock();
            if kept.entries.len() >= CAPACITY
                && let Some(oldest) = kept.order.pop_front()
            {
                kept.entries.remove(&oldest);
            }
            if kept
                .entries
                .insert(key.clone(), Arc::new(generated.clone()))
                .is_none()
            {
                kept.order.push_back(key);
            }
        }
        generated
    }

    /// Drops the kept generations of `revision` (a hard refresh asks for them to be generated
    /// again).
    pub fn forget(&self, revision: &str) {
        let mut kept = self.lock();
        kept.entries.retain(|key, _| key.revision != revision);
        let Kept { entries, order } = &mut *kept;
        order.retain(|key| entries.contains_key(key));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How many generations are kept (their manifests are not printed).
impl std::fmt::Debug for Generations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generations")
            .field("kept", &self.lock().entries.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generation_is_kept_per_key_and_failures_are_not() {
        let key = |revision: &str| Key::new(revision, Path::new("/tree/app"), &"opts", &"helm v3");
        let generations = Generations::default();
        let mut runs = 0;
        for _ in 0..3 {
            generations.get_or_generate(key("cache-test-a"), || {
                runs += 1;
                (Vec::new(), Vec::new())
            });
        }
        assert_eq!(runs, 1);
        generations.get_or_generate(key("cache-test-b"), || {
            runs += 1;
            (Vec::new(), Vec::new())
        });
        assert_eq!(runs, 2, "another revision generates again");
        let failed = || {
            let error = ValidationError {
                file: "helm".into(),
                document: None,
                object: None,
                message: "failed".into(),
            };
            (Vec::new(), vec![error])
        };
        let mut failures = 0;
        for _ in 0..2 {
            generations.get_or_generate(key("cache-test-c"), || {
                failures += 1;
                failed()
            });
        }
        assert_eq!(failures, 2, "a failure is not kept");
    }
}
