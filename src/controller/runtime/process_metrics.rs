//! The process figures Argo CD's dashboard charts for each of its Go components, served under
//! the same names with what each means for Flotilla (docs/src/reference/metrics.md says it):
//! `process_cpu_seconds_total` and `process_start_time_seconds` are the process's own (from
//! `/proc`); `go_goroutines` is the tokio tasks alive; `go_memstats_heap_alloc_bytes` is the
//! resident memory; `go_gc_duration_seconds` is always 0 (no garbage collector). Argo CD's
//! Redis, gRPC and kubectl figures are served as zeros: Flotilla has no Redis and no gRPC
//! server, and never runs kubectl, so none of them ever happens. Read on each scrape.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::observed::encode;

/// The services of Argo CD's API server its dashboard charts `grpc_server_handled_total` of.
const GRPC_SERVICES: [&str; 8] = [
    "account.AccountService",
    "application.ApplicationService",
    "cluster.ClusterService",
    "cluster.SettingsService",
    "project.ProjectService",
    "repository.RepositoryService",
    "session.SessionService",
    "version.VersionService",
];

/// The quantiles Go's `go_gc_duration_seconds` summary has.
const GC_QUANTILES: [&str; 5] = ["0", "0.25", "0.5", "0.75", "1"];

/// The process figures, read when scraped.
#[derive(Debug, Default)]
pub struct ProcessCollector;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QuantileLabels {
    quantile: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GrpcLabels {
    grpc_service: &'static str,
    grpc_method: &'static str,
    grpc_type: &'static str,
    grpc_code: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RedisLabels {
    initiator: &'static str,
    failed: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KubectlLabels {
    command: &'static str,
}

/// What `/proc` says of this process: CPU seconds, start time (seconds since the epoch) and
/// resident bytes; `None` where it cannot be read (not Linux).
#[derive(Debug, Default, PartialEq)]
struct ProcessFigures {
    cpu_seconds: Option<f64>,
    start_time: Option<f64>,
    resident_bytes: Option<u64>,
}

/// Clock ticks per second, the unit of `/proc/self/stat`'s times.
fn clock_ticks() -> f64 {
    #[expect(unsafe_code, reason = "sysconf only reads a constant of the system")]
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

impl ProcessFigures {
    fn read() -> Self {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let boot = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        Self::parse(&stat, &boot, &status, clock_ticks())
    }

    /// From `/proc/self/stat` (`utime`, `stime`, `starttime` in clock ticks, after the command
    /// name in parentheses), `/proc/stat` (`btime`, the boot time) and `/proc/self/status`
    /// (`VmRSS` in kB).
    fn parse(stat: &str, boot: &str, status: &str, ticks: f64) -> Self {
        // The fields after the command name, which may hold spaces: field 3 (state) first.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok());
        let cpu_seconds = field(14)
            .zip(field(15))
            .map(|(user, system)| (user + system) / ticks);
        let boot_time = boot
            .lines()
            .find_map(|line| line.strip_prefix("btime "))
            .and_then(|t| t.trim().parse::<f64>().ok());
        let start_time = field(22)
            .zip(boot_time)
            .map(|(start, boot)| boot + start / ticks);
        let resident_bytes = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024);
        Self {
            cpu_seconds,
            start_time,
            resident_bytes,
        }
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let e = &mut encoder;
        let figures = ProcessFigures::read();
        if let Some(seconds) = figures.cpu_seconds {
            let cpu: Counter<f64, std::sync::atomic::AtomicU64> = Counter::default();
            cpu.inc_by(seconds);
            encode(
                e,
                ("process_cpu_seconds", "User and system CPU time in seconds"),
                &cpu,
            )?;
        }
        if let Some(start) = figures.start_time {
            let started: Gauge<f64, std::sync::atomic::AtomicU64> = Gauge::default();
            started.set(start);
            encode(
                e,
                (
                    "process_start_time_seconds",
                    "When the process started, in seconds since the Unix epoch",
                ),
                &started,
            )?;
        }
        let heap: Gauge = Gauge::default();
        heap.set(
            figures
                .resident_bytes
                .map_or(0, |b| i64::try_from(b).unwrap_or(i64::MAX)),
        );
        encode(
            e,
            (
                "go_memstats_heap_alloc_bytes",
                "Flotilla: the process's resident memory in bytes (Argo CD's name for its Go heap)",
            ),
            &heap,
        )?;
        let tasks: Gauge = Gauge::default();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            tasks.set(i64::try_from(runtime.metrics().num_alive_tasks()).unwrap_or(i64::MAX));
        }
        encode(
            e,
            (
                "go_goroutines",
                "Flotilla: tokio tasks alive (Argo CD's name for its goroutines)",
            ),
            &tasks,
        )?;
        let gc: Family<QuantileLabels, Gauge> = Family::default();
        for quantile in GC_QUANTILES {
            gc.get_or_create(&QuantileLabels { quantile }).set(0);
        }
        encode(
            e,
            (
                "go_gc_duration_seconds",
                "Flotilla: always 0, it has no garbage collector (Argo CD's name for Go's GC pauses)",
            ),
            &gc,
        )?;
        encode_absent(e)
    }
}

/// Argo CD's Redis, gRPC and kubectl figures: zero series, as none of them happens.
fn encode_absent(e: &mut DescriptorEncoder) -> fmt::Result {
    let grpc: Family<GrpcLabels, Counter> = Family::default();
    for grpc_service in GRPC_SERVICES {
        grpc.get_or_create(&GrpcLabels {
            grpc_service,
            grpc_method: "",
            grpc_type: "unary",
            grpc_code: "OK",
        })
        .inc_by(0);
    }
    encode(
        e,
        (
            "grpc_server_handled",
            "Flotilla: always 0, it serves no gRPC (Argo CD's API server's RPCs)",
        ),
        &grpc,
    )?;
    let redis: Family<RedisLabels, Counter> = Family::default();
    for failed in ["false", "true"] {
        redis
            .get_or_create(&RedisLabels {
                initiator: "argocd-application-controller",
                failed,
            })
            .inc_by(0);
    }
    encode(
        e,
        (
            "argocd_redis_request",
            "Flotilla: always 0, it uses no Redis (Argo CD's Redis requests)",
        ),
        &redis,
    )?;
    let kubectl: Family<KubectlLabels, Gauge> = Family::default();
    kubectl
        .get_or_create(&KubectlLabels { command: "apply" })
        .set(0);
    encode(
        e,
        (
            "argocd_kubectl_exec_pending",
            "Flotilla: always 0, it never runs kubectl (Argo CD's pending kubectl runs)",
        ),
        &kubectl,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_figures_are_read_in_seconds_and_bytes() {
        let stat = "4242 (flo tilla) S 1 2 3 4 5 6 7 8 9 10 250 150 0 0 20 0 9 0 5000 100 200";
        let figures = ProcessFigures::parse(
            stat,
            "cpu  1 2 3\nbtime 1700000000\n",
            "Name:\tflotilla\nVmRSS:\t  2048 kB\n",
            100.0,
        );
        assert_eq!(
            figures,
            ProcessFigures {
                cpu_seconds: Some(4.0),
                start_time: Some(1_700_000_050.0),
                resident_bytes: Some(2 * 1024 * 1024),
            }
        );
        assert_eq!(
            ProcessFigures::parse("", "", "", 100.0),
            ProcessFigures::default()
        );
    }
}
