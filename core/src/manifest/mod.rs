//! Desired manifests: loading a source directory into validated [`Resource`]s, with the
//! namespace defaulting rules. Pure apart from reading files; knows nothing of sync semantics.

mod directory;
mod document;
mod duplicate;
mod error;
mod jsonnet;
mod label;
pub mod limits;
mod name;
mod resource;
mod scope;

#[cfg(test)]
pub use directory::load_directory;
pub use directory::{DirectoryOptions, load_directory_of};
pub use document::{parse_documents, read_objects};
pub use duplicate::find_duplicates;
pub use error::{ValidationError, ValidationErrors};
pub use jsonnet::{InProcess, JsonnetEvaluator, JsonnetOptions, JsonnetRequest, JsonnetVariable};
pub use label::check_label;
pub use name::{NameRule, derive_name};
pub use resource::{ObjectKey, ObjectName, Resource, Source, group_kind_of_key, group_of};
pub use scope::{ScopeTable, assign_namespaces};
