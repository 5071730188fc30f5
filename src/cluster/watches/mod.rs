//! Objects of the control plane kept by watches, read without a request: the shape of every
//! small informer ([`listed_watch`], [`watched_object`]), the settings ConfigMap's
//! customizations, the namespaces, the AppProjects and the Argo CD Secrets.

pub mod listed_watch;
pub mod watched_customizations;
pub mod watched_namespaces;
pub mod watched_object;
pub mod watched_projects;
pub mod watched_secrets;
