//! Notifications in Argo CD's format: the `argocd-notifications-cm` ConfigMap and
//! `argocd-notifications-secret` Secret ([`config`], with Argo CD's catalog and Flotilla's
//! rollout triggers built in, [`catalog`]), the `notifications.argoproj.io/subscribe.*`
//! annotations ([`subscription`]), what was sent kept on each object ([`state`]), the
//! Application as triggers see it ([`view`]), what each service is sent ([`payload`]) and, for
//! one object, all of it together ([`plan`]). The controller's notifier reads and sends;
//! everything here is pure.

pub mod catalog;
pub mod config;
pub mod payload;
pub mod plan;
pub mod state;
pub mod subscription;
pub mod view;
