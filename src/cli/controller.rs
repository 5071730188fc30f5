//! `flotilla controller`: runs the ApplicationSet and Application controllers in one namespace
//! (and the Application controller in the namespaces `--application-namespaces` names),
//! with leader election through a Lease (and, with `--shards auto`, the Applications shared
//! between replicas by member Leases), optional `/metrics`, web view and git webhook endpoints,
//! notifications while leading, and a graceful shutdown on Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures::FutureExt;

use crate::cluster::watches::watched_namespaces::follow;
use crate::cluster::watches::watched_secrets::WatchedSecrets;
use crate::controller::application::ApplicationContext;
use crate::controller::appset::{AppSetContext, WatchedNamespaces};
use crate::controller::leases::leadership::gated_connect;
use crate::controller::leases::lease_lock::{LeaseConfig, LeaseLock};
use crate::controller::leases::member_lease::MemberLeases;
use crate::controller::runtime::endpoint::Endpoint;
use crate::controller::runtime::events::EventPublisher;
use crate::controller::runtime::metrics::Metrics;
use crate::controller::runtime::namespace_controllers::{
    ApplicationControllers, ApplicationSetControllers,
};
use crate::httpd::server::{Limits, serve};
use crate::notifier::deliver::{Notifier, run_while_leading};
use crate::notifier::sources::NotificationSources;
use crate::repo::LocalRepos;
use crate::repo::cache::RepoCache;
use crate::source::Toolchain;
use crate::sync::execute::{DEFAULT_WAVE_DELAY_TEXT, ExecuteSettings};
use crate::web::act::Actor;
use crate::web::csrf::CsrfKey;
use crate::web::handler::WebView;
use crate::web::inspect::Inspector;
use crate::web::watch::FleetWatch;
use crate::webhook::handler::WebhookReceiver;
use crate::webhook::refresh::Refresher;
use crate::webhook::secrets::WebhookSecretSource;
use flotilla_core::controller::application_namespaces::ApplicationNamespaces;
use flotilla_core::controller::appset::rollout_layout::DEFAULT_ROLLOUT_STATUS_LIMIT;
use flotilla_core::controller::appset::status::DEFAULT_MAX_RESOURCES_STATUS_COUNT;
use flotilla_core::controller::leader::LeaseTiming;
use flotilla_generators::duration::{parse_duration, parse_seconds_or_duration};

/// Threads for blocking work (git and the manifests on disk). Tokio's default (512) let every
/// concurrent reconcile have its own thread (and, with glibc's allocator then, an arena of its
/// own whose freed memory stayed resident: see BENCHMARKS.md). The reconciles' blocking work is
/// short, or waits for the one fetch of its repository, so a few threads serve it.
const BLOCKING_THREADS: usize = 4;

/// Arguments of `flotilla controller`.
#[derive(Debug, clap::Args)]
pub struct ControllerArgs {
    /// Namespace of the ApplicationSets, their Applications, cluster Secrets and the Lease
    /// (default: the kubeconfig's or service account's namespace).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Namespaces besides --namespace whose Applications it manages (Argo CD's
    /// `application.namespaces`): names or globs, comma-separated or repeated, `!` denies.
    /// Applications there may use only projects whose `sourceNamespaces` permit their
    /// namespace; Applications of other namespaces are ignored. Globs are matched against the
    /// namespaces as they are created and deleted (a watch of Namespaces, which needs
    /// cluster-wide `list` and `watch` of namespaces); names are used as given.
    #[arg(long = "application-namespaces", value_name = "GLOB[,GLOB]")]
    pub application_namespaces: Vec<String>,
    /// Namespaces besides --namespace whose ApplicationSets it reconciles (Argo CD's
    /// `applicationsetcontroller.namespaces`): names or globs, as --application-namespaces. An
    /// ApplicationSet writes its Applications in its own namespace, so only namespaces
    /// --application-namespaces permits too are reconciled; their Applications may use only
    /// projects whose `sourceNamespaces` permit the namespace.
    #[arg(long = "applicationset-namespaces", value_name = "GLOB[,GLOB]")]
    pub applicationset_namespaces: Vec<String>,
    #[command(flatten)]
    pub cluster: crate::cli::connect::KubeconfigArgs,
    /// Serve `/metrics` (Prometheus), `/healthz` and `/readyz` on this address, e.g. 0.0.0.0:8080.
    #[arg(long)]
    pub metrics_addr: Option<SocketAddr>,
    /// Serve the web view (Fleet, ApplicationSets, Applications, live updates; actions for a
    /// viewer with a bearer token the cluster's RBAC allows) on this address, e.g.
    /// 127.0.0.1:8081 (reach it with `kubectl port-forward`). Off unless set.
    #[arg(long)]
    pub ui_addr: Option<SocketAddr>,
    /// Receive git push webhooks (GitHub, GitLab, Bitbucket Cloud and Server, Gitea/Forgejo,
    /// Gogs) at `POST /api/webhook` on this address, e.g. 0.0.0.0:8082. Off unless set.
    #[arg(long)]
    pub webhook_addr: Option<SocketAddr>,
    /// The Secret (in --namespace) with the webhooks' shared secrets under Argo CD's keys
    /// (`webhook.github.secret`, `webhook.gitlab.secret`, `webhook.bitbucket.uuid`,
    /// `webhook.bitbucketserver.secret`, `webhook.gogs.secret`, …).
    #[arg(long, default_value = "argocd-secret")]
    pub webhook_secret: String,
    /// How often git generators re-resolve their revision when they set no
    /// `requeueAfterSeconds`, e.g. 3m, 30s.
    #[arg(long, default_value = "3m", value_parser = parse_duration)]
    pub git_poll: Duration,
    /// How many Applications an ApplicationSet's `status.resources` lists at most (the first by
    /// name; `status.resourcesCount` counts them all); 0: no limit. The list is cut shorter
    /// still when the status would pass 1 MiB, to keep the ApplicationSet within etcd's limit.
    #[arg(long, default_value_t = DEFAULT_MAX_RESOURCES_STATUS_COUNT)]
    pub max_resources_status_count: usize,
    /// How many bytes of JSON a RollingSync's `status.applicationStatus` may take; past it,
    /// each Application keeps its own rollout state (`status.rollout`) and the ApplicationSet
    /// counts them per step (`status.applicationStatusSummary`), so any number of Applications
    /// stays within etcd's request limit.
    #[arg(long, default_value_t = DEFAULT_ROLLOUT_STATUS_LIMIT)]
    pub rollout_status_limit: usize,
    /// Read repository URL from a local PATH (repeatable); `file://` URLs work without it.
    #[arg(long = "repo", value_name = "URL=PATH")]
    pub repos: Vec<String>,
    /// Where Applications' repositories are cloned and their commits written out (default:
    /// `flotilla-repos` in the temporary directory).
    #[arg(long)]
    pub repo_cache: Option<PathBuf>,
    /// How often every Application is compared with its source and cluster without a change,
    /// e.g. 3m, 30s (new commits are noticed this often).
    #[arg(long, default_value = "3m", value_parser = parse_duration)]
    pub app_resync: Duration,
    /// How long a repository fetch serves the resolving of branches and tags without fetching
    /// again (Applications of one repository share it), e.g. 10s; 0s fetches for every compare.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub repo_refresh: Duration,
    /// The known-hosts file ssh checks repository host keys against (a repository Secret with
    /// `insecure: "true"` skips the check); default: ssh's own files.
    #[arg(long, value_name = "FILE")]
    pub ssh_known_hosts: Option<PathBuf>,
    /// The ConfigMap (in --namespace) whose `resource.customizations` configure health checks,
    /// as Argo CD's argocd-cm.
    #[arg(long, default_value = crate::cluster::watches::watched_customizations::DEFAULT_CONFIG_MAP)]
    pub settings_config_map: String,
    #[command(flatten)]
    pub health: crate::cli::health_args::HealthArgs,
    #[command(flatten)]
    pub api_limits: crate::cli::api_limit_args::ApiLimitArgs,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "flotilla-controller")]
    pub lease_name: String,
    /// This replica's identity in the Lease (default: $POD_NAME, else host name and process id).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// How long a standby must see the Lease unchanged before it takes over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,
    /// How long the leader acts after its last successful renewal; shorter than
    /// --lease-duration, so it stops before anyone else can start.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub renew_deadline: Duration,
    /// How often the leader renews the Lease and a standby reads it; shorter than
    /// --renew-deadline.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub retry_period: Duration,
    /// `auto` (the default): replicas share the Applications, each holding a member Lease
    /// (`<lease-name>-<identity>`) and reconciling the Applications consistent hashing gives
    /// it; the ApplicationSet controller runs in the leader only. `1`: the leader runs both
    /// controllers, the other replicas stand by.
    #[arg(long, default_value = "auto", value_parser = parse_shards)]
    pub shards: Shards,
    /// Fail a sync operation that has not finished after this long: seconds (Argo CD's
    /// `controller.sync.timeout.seconds` in argocd-cmd-params-cm) or a duration such as `30m`.
    /// `0`, the default as in Argo CD, never times out. An Application's
    /// flotilla.dev/sync-timeout annotation wins over it.
    #[arg(
        long,
        env = "ARGOCD_APPLICATION_CONTROLLER_SYNC_TIMEOUT",
        default_value = "0",
        value_parser = parse_seconds_or_duration
    )]
    pub sync_timeout: Duration,
    /// How long after a sync wave's last apply the next wave starts at the earliest, so that
    /// admission webhooks and other controllers catch up before its health counts: seconds
    /// (Argo CD's `controller.sync.wave.delay.seconds`) or a duration. The time the wave takes
    /// to become Healthy counts towards it. Default none (Argo CD: 2): waves already wait for
    /// each object to be Healthy on its current generation.
    #[arg(
        long,
        env = "ARGOCD_SYNC_WAVE_DELAY",
        default_value = DEFAULT_WAVE_DELAY_TEXT,
        value_parser = parse_seconds_or_duration
    )]
    pub sync_wave_delay: Duration,
}

/// How the Applications are shared between replicas (`--shards`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shards {
    /// One shard per live replica, by member Leases.
    Auto,
    /// One shard: the leader reconciles every Application.
    One,
}

/// `auto` or `1`.
fn parse_shards(text: &str) -> Result<Shards, String> {
    match text {
        "auto" => Ok(Shards::Auto),
        "1" => Ok(Shards::One),
        other => Err(format!(
            "{other:?}: `auto` (member Leases) or `1` (the leader reconciles everything)"
        )),
    }
}

/// Runs the controller until interrupted.
///
/// # Errors
/// Unusable arguments or kubeconfig, a metrics address in use, or a Lease that cannot be written.
pub fn run(args: &ControllerArgs, toolchain: &Arc<Toolchain>) -> anyhow::Result<ExitCode> {
    let (helm, kustomize) = toolchain.versions();
    for (tool, version) in [("helm", helm), ("kustomize", kustomize)] {
        match version {
            Ok(version) => tracing::info!(tool, %version, "source tool"),
            Err(error) => tracing::warn!(tool, %error, "source tool unusable: its sources fail"),
        }
    }
    let repos = LocalRepos::from_mappings(&args.repos)?;
    let managed = ApplicationNamespaces::parse(&args.application_namespaces)?;
    let appset_managed = ApplicationNamespaces::parse_flag(
        "--applicationset-namespaces",
        &args.applicationset_namespaces,
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build()?;
    runtime.block_on(async {
        let timing = LeaseTiming::new(args.lease_duration, args.renew_deadline, args.retry_period)?;
        let settings = super::connect::settings(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
        )
        .await?;
        let config = settings.config.clone();
        let namespace = args
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        // The Lease (and the web view and webhooks) has a bucket of its own: its renewals
        // never wait behind the reconcilers' requests.
        let lease_client = args
            .api_limits
            .limits()
            .client(config.clone(), &tower::layer::util::Identity::new())?;
        let limits = args.api_limits.limits();
        settings.check(&lease_client).await?;
        let identity = args.identity.clone().unwrap_or_else(default_identity);
        let lease = LeaseLock::new(
            lease_client.clone(),
            &namespace,
            LeaseConfig {
                name: args.lease_name.clone(),
                identity: identity.clone(),
                timing,
            },
        );
        let members = (args.shards == Shards::Auto).then(|| {
            MemberLeases::new(
                lease_client.clone(),
                &namespace,
                &args.lease_name,
                &identity,
                timing,
            )
        });
        // Every write of the controller, to its own cluster or a destination, passes a gate:
        // none leaves once the Lease is lost; when sharded, none of the Application controllers
        // once the member Lease is, nor to an Application of another replica's.
        let appset_connect = lease.leadership().connect(&limits);
        let connect = members.as_ref().map_or_else(
            || appset_connect.clone(),
            |members| gated_connect(members.ownership(), &limits),
        );
        let client = connect(config.clone())?;
        let appset_client = appset_connect(config)?;
        let metrics = Arc::new(Metrics::default());
        let shutdown = super::connect::shutdown_signal().shared();
        if let Some(address) = args.metrics_addr {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("--metrics-addr {address}"))?;
            let endpoint = Arc::new(Endpoint {
                metrics: Arc::clone(&metrics),
                readiness: lease.readiness(),
            });
            let counters = metrics.listener("metrics");
            let served = serve(
                listener,
                Limits::default(),
                endpoint,
                counters,
                shutdown.clone(),
            );
            tokio::spawn(served);
        }
        if let Some(address) = args.ui_addr {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("--ui-addr {address}"))?;
            let (watch, watching) = FleetWatch::start(&lease_client, &namespace);
            tokio::spawn(watching);
            // Actions write through a client that does not need the Lease, as webhooks do:
            // a standby replica's page acts too.
            let view = Arc::new(WebView {
                watch,
                actor: Arc::new(Actor::new(lease_client.clone(), &namespace, csrf_key()?)),
                inspector: Arc::new(Inspector::new(
                    lease_client.clone(),
                    &namespace,
                    Arc::clone(toolchain),
                )),
            });
            tokio::spawn(serve(
                listener,
                Limits::default(),
                view,
                metrics.listener("web"),
                shutdown.clone(),
            ));
            tracing::info!(%address, "serving the web view");
        }
        let app_namespaces = managed_namespaces(&lease_client, &managed, None, &namespace);
        let appset_namespaces =
            managed_namespaces(&lease_client, &appset_managed, Some(&managed), &namespace);
        tracing::info!(%namespace, identity = %lease.identity(), "starting");
        let cache = args
            .repo_cache
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("flotilla-repos"));
        // One cache serves both controllers: a repository is fetched once for both.
        let credentials = WatchedSecrets::repository_credentials(client.clone(), &namespace);
        let cache = RepoCache::new(cache, repos, Arc::clone(toolchain))
            .with_fetch_reuse(args.repo_refresh)
            .with_credentials(Arc::new(credentials), args.ssh_known_hosts.clone());
        let cache = Arc::new(cache);
        if let Some(address) = args.webhook_addr {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("--webhook-addr {address}"))?;
            let receiver = Arc::new(WebhookReceiver::new(
                WebhookSecretSource::new(lease_client.clone(), &namespace, &args.webhook_secret),
                Refresher {
                    client: lease_client.clone(),
                    namespace: namespace.clone(),
                    app_namespaces: app_namespaces.clone(),
                    repos: Arc::clone(&cache),
                },
                Arc::clone(&metrics),
            ));
            let watching = Arc::clone(&receiver);
            tokio::spawn(async move { watching.watch_secrets().await });
            tokio::spawn(serve(
                listener,
                Limits::default(),
                receiver,
                metrics.listener("webhook"),
                shutdown.clone(),
            ));
            tracing::info!(%address, "receiving git webhooks");
        }
        let make = {
            let (client, namespace, cache) =
                (client.clone(), namespace.clone(), Arc::clone(&cache));
            let (resync, metrics) = (args.app_resync, Arc::clone(&metrics));
            let settings_config_map = args.settings_config_map.clone();
            let health_defaults = args.health.read()?;
            let ownership = members.as_ref().map(MemberLeases::ownership);
            let execute = ExecuteSettings {
                timeout: Some(args.sync_timeout).filter(|timeout| !timeout.is_zero()),
                wave_delay: args.sync_wave_delay,
                ..ExecuteSettings::default()
            };
            Box::new(move |app_namespace: &str| {
                let ctx = ApplicationContext::new(
                    client.clone(),
                    connect.clone(),
                    namespace.clone(),
                    Arc::clone(&cache),
                    resync,
                    Arc::clone(&metrics),
                )
                .with_settings_config_map(&settings_config_map, health_defaults.clone())
                .with_execute_settings(execute.clone())
                .managing(app_namespace);
                match &ownership {
                    Some(ownership) => ctx.sharded(ownership.clone()),
                    None => ctx,
                }
            })
        };
        let notifier = Arc::new(Notifier {
            client: client.clone(),
            namespace: namespace.clone(),
            metrics: Arc::clone(&metrics),
            events: Arc::new(EventPublisher::new(client.clone())),
            sources: NotificationSources::new(&client, &namespace),
        });
        tokio::spawn(run_while_leading(
            notifier,
            lease.leadership(),
            shutdown.clone(),
        ));
        let applications = ApplicationControllers::new(app_namespaces, make);
        let appsets = {
            let (metrics, args_git_poll) = (Arc::clone(&metrics), args.git_poll);
            let max_resources_status_count = args.max_resources_status_count;
            let rollout_status_limit = args.rollout_status_limit;
            // One registry of the namespaces' ApplicationSet watches, shared by their
            // controllers (cross-namespace `dependsOn`).
            let watched = Arc::new(WatchedNamespaces::default());
            ApplicationSetControllers::new(
                appset_namespaces,
                Box::new(move |appset_namespace: &str| {
                    AppSetContext::new(
                        appset_client.clone(),
                        appset_connect.clone(),
                        namespace.clone(),
                        Arc::clone(&cache),
                        args_git_poll,
                        Arc::clone(&metrics),
                    )
                    .managing(appset_namespace)
                    .listing_at_most(max_resources_status_count)
                    .keeping_rollout_inline_up_to(rollout_status_limit)
                    .sharing_watches(Arc::clone(&watched))
                }),
            )
        };
        match members {
            Some(members) => {
                crate::controller::run_sharded(
                    metrics,
                    appsets,
                    applications,
                    lease,
                    members,
                    shutdown,
                )
                .await?;
            }
            None => crate::controller::run(metrics, appsets, applications, lease, shutdown).await?,
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The namespaces whose Applications (or ApplicationSets) are managed: `control` and the names
/// as given, or (with globs) `control` and the namespaces the globs select, those `within`
/// permits when given, followed as namespaces are created and
/// deleted (a watch of Namespaces, which needs cluster-wide `list` and `watch` of namespaces).
fn managed_namespaces(
    client: &kube::Client,
    managed: &ApplicationNamespaces,
    within: Option<&ApplicationNamespaces>,
    control: &str,
) -> tokio::sync::watch::Receiver<Vec<String>> {
    let within = within.cloned();
    let kept = move |names: Vec<String>| -> Vec<String> {
        names
            .into_iter()
            .filter(|name| within.as_ref().is_none_or(|w| w.permits(name)))
            .collect()
    };
    if let Some(names) = managed.literal(control) {
        return tokio::sync::watch::channel(with_control(control, kept(names))).1;
    }
    let (selected, following) = tokio::sync::watch::channel(with_control(control, Vec::new()));
    let (managed, control) = (managed.clone(), control.to_owned());
    tokio::spawn(follow(client.clone(), selected, move |names| {
        with_control(&control, kept(managed.select(names, &control)))
    }));
    following
}

/// `control` followed by `selected`.
fn with_control(control: &str, selected: Vec<String>) -> Vec<String> {
    std::iter::once(control.to_owned())
        .chain(selected)
        .collect()
}

/// `<host name>-<process id>`, unique enough among replicas outside a pod.
fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "flotilla".to_string());
    format!("{host}-{}", std::process::id())
}

/// A new key for the web view's page tokens: 32 random bytes from the kernel, so a restarted
/// controller refuses the tokens of pages rendered before.
fn csrf_key() -> anyhow::Result<CsrfKey> {
    use std::io::Read as _;
    let mut secret = vec![0; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut secret))
        .context("reading /dev/urandom for the web view's CSRF key")?;
    Ok(CsrfKey::new(secret))
}
