//! The pure core of the Application controller: one reconcile decided whole ([`pass`]), how an Application compares with the cluster
//! ([`compare`], with the sync engine's one diff), whether it must be compared again ([`freshness`]), whether it syncs
//! now ([`decide`]), how a sync starts ([`start`]) and whether sync windows let it ([`window_gate`]), what status and history
//! result ([`status`], [`history`]), what a rollback to an entry of the history writes
//! ([`rollback`]), what its objects are tracked as ([`instance`]), how its resources are
//! deleted with it ([`deletion`]), whether it is left alone ([`skip_reconcile`]) and whether a
//! refresh is asked for ([`refresh`]). No API
//! client here.

pub mod compare;
pub mod decide;
pub mod deletion;
pub mod error_reason;
pub mod freshness;
pub mod history;
pub mod instance;
pub mod pass;
pub mod refresh;
pub mod rollback;
pub mod skip_reconcile;
pub mod start;
pub mod status;
pub mod window_gate;
