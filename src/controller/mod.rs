//! The controller: reconciles ApplicationSets into Applications in one namespace while holding a
//! Lease. The decisions live in the pure [`appset`] core; this module and the files beside it are
//! the I/O shell.

pub mod appset;
