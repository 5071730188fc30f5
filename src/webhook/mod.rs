//! The git webhook receiver (`flotilla controller --webhook-addr`): push events of GitHub,
//! GitLab, Bitbucket Cloud and Server, Gitea/Forgejo and Gogs, each verified by its provider's
//! mechanism with a secret from a Secret, refresh the repositories they name and whatever reads
//! them; pull-request events of GitHub, GitLab, Gitea/Forgejo and Bitbucket Server, verified
//! alike, refresh the ApplicationSets whose `pullRequest` generators list that repository.
//! Pure parts: [`provider`] (which host, which event), [`signature`] (verification),
//! [`payload`] (the repository URLs and refs of a push), [`pushed_refs`] (which
//! `targetRevision`s a push moves), [`repo_url`] (one key per repository whatever its URL
//! form), [`pull_request_event`] (the repository and action of a pull-request event),
//! [`pull_request_generators`] (which generators list that repository). I/O: [`secrets`] (the
//! watched Secret), [`refresh`] (the repository cache and the annotations that requeue
//! Applications and ApplicationSets), [`refresh_queue`] (the Applications annotated after the
//! answer), and [`handler`], the [`crate::httpd`] handler tying them together.

pub mod handler;
pub mod payload;
pub mod provider;
pub mod pull_request_event;
pub mod pull_request_generators;
pub mod pushed_refs;
pub mod refresh;
pub mod refresh_queue;
pub mod repo_url;
pub mod secrets;
pub mod signature;
