//! The controller's notifier: the I/O around the pure decisions of [`flotilla_core::notify`] —
//! [`deliver`] watches, delivers and keeps the ledger while this replica leads (see
//! [`deliver::run_while_leading`]); [`argo`] is its pass over notifications in Argo CD's format,
//! whose requests [`send`] performs (emails with [`smtp`]); [`watched`] keeps what it reads of
//! the objects, [`sources`] the ConfigMaps and Secrets a pass reads; [`post`] sends one JSON
//! POST.

pub mod argo;
pub mod deliver;
pub mod post;
pub mod send;
pub mod smtp;
pub mod sources;
pub mod watched;
