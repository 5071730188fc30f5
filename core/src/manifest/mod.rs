//! Desired manifests: loading a source directory into validated [`Resource`]s, with the
//! namespace defaulting rules. Pure: files are read through the caller's [`SourceTree`]; knows
//! nothing of sync semantics.

mod directory;
mod document;
mod duplicate;
mod error;
pub mod expand;
mod jsonnet;
mod label;
pub mod limits;
#[cfg(test)]
pub mod memory_tree;
mod name;
mod resource;
mod scope;
mod source_tree;

#[cfg(test)]
pub use directory::load_directory;
pub use directory::{DirectoryOptions, load_directory_of};
pub use document::{parse_documents, read_objects};
pub use duplicate::find_duplicates;
pub use error::{ValidationError, ValidationErrors};
pub use jsonnet::{
    InProcess, JsonnetEvaluator, JsonnetOptions, JsonnetRequest, JsonnetVariable, evaluate,
};
pub use label::check_label;
pub use name::{NameRule, derive_name};
pub use resource::{ObjectKey, ObjectName, Resource, Source, group_kind_of_key, group_of};
pub use scope::{ScopeTable, assign_namespaces};
pub use source_tree::{Entries, Entry, FileInfo, FileKind, Opened, SourceTree};
