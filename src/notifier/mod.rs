//! The controller's notifier: the I/O around the pure decisions of [`flotilla_core::notify`] —
//! [`deliver`] watches, delivers and keeps the ledger while this replica leads (see
//! [`deliver::run_while_leading`]); [`watched`] keeps what it reads of the objects; [`post`]
//! sends one JSON POST.

pub mod deliver;
pub mod post;
pub mod watched;
