//! The controller's web view (`flotilla controller --ui-addr`): the Fleet of ApplicationSets,
//! one ApplicationSet's rollout, one Application's resources and operation.
//! Pages are rendered on the server from a [`snapshot::Snapshot`] of the watches
//! ([`watch`]) by pure functions ([`fleet`], [`application_set`], [`application`]), every
//! user-controlled string escaped ([`flotilla_core::html`]); [`handler`] serves them over [`crate::httpd`],
//! and streams each page again as server-sent events when the watches see a change (the
//! embedded script swaps it in; without JavaScript the pages still work). The watches read
//! ApplicationSets and Applications only. An Application's resource tree and an object's panel
//! are read when opened ([`inspect`], drawn by [`tree_view`] and [`object_panel`]); manifests
//! and Events only for a viewer whose token may `get` the object, a Secret's values never. A
//! pod's log ([`pod_logs`], for a viewer whose token may `get` `pods/log`) and an open panel's
//! Events ([`object_events`]) are streamed to that viewer alone ([`live_stream`], bounded).
//! Read-only for everyone; a viewer who gives a Kubernetes bearer token is offered the actions
//! of [`crate::actions`] ([`action_offers`]), each done by [`act`] once the cluster's RBAC
//! allows that user `patch` on the object ([`access_review`]) and the request passed the CSRF
//! checks ([`csrf`]).

pub mod access_review;
pub mod act;
pub mod action_offers;
pub mod action_request;
pub mod application;
pub mod application_list;
pub mod application_query;
pub mod application_set;
pub mod csrf;
pub mod events;
pub mod fleet;
pub mod handler;
pub mod inspect;
pub mod label_filter;
pub mod layout;
pub mod live_stream;
pub mod object_events;
pub mod object_panel;
pub mod pod_logs;
pub mod rollout_view;
pub mod routes;
pub mod snapshot;
pub mod sync_windows;
#[cfg(test)]
pub mod test_fixtures;
pub mod timeline;
pub mod tree_view;
pub mod watch;
