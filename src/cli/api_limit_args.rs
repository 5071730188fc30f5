//! `--kube-api-qps` and `--kube-api-burst` of the controller (kube-controller-manager's names;
//! Argo CD's `ARGOCD_K8S_CLIENT_QPS` and `ARGOCD_K8S_CLIENT_BURST` set them too): the
//! client-side rate limit of its requests to each API server. Argo CD's
//! `--kubectl-parallelism-limit` is refused by name: Flotilla runs no kubectl.

use crate::cluster::api_server::api_limits::{ApiLimits, DEFAULT_RATE};
use crate::cluster::api_server::token_bucket::Rate;

/// The rate limit flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ApiLimitArgs {
    /// Requests a second the controller sends to each Kubernetes API server at most, on
    /// average (Argo CD's ARGOCD_K8S_CLIENT_QPS); more wait their turn.
    #[arg(long, env = "ARGOCD_K8S_CLIENT_QPS", default_value_t = DEFAULT_RATE.qps, value_parser = parse_qps)]
    pub kube_api_qps: f64,
    /// Requests sent at once above --kube-api-qps after a quiet time (Argo CD's
    /// ARGOCD_K8S_CLIENT_BURST).
    #[arg(long, env = "ARGOCD_K8S_CLIENT_BURST", default_value_t = DEFAULT_RATE.burst,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub kube_api_burst: u32,
    /// Argo CD's limit of concurrent kubectl runs: refused, Flotilla runs no kubectl.
    #[arg(long, hide = true, env = "ARGOCD_APPLICATION_CONTROLLER_KUBECTL_PARALLELISM_LIMIT",
          value_parser = refuse_kubectl_parallelism)]
    pub kubectl_parallelism_limit: Option<u32>,
}

impl ApiLimitArgs {
    /// The limits the flags set, one bucket per API server.
    #[must_use]
    pub fn limits(&self) -> ApiLimits {
        ApiLimits::new(Rate {
            qps: self.kube_api_qps,
            burst: self.kube_api_burst,
        })
    }
}

/// A positive, finite number of requests a second.
fn parse_qps(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(qps) if qps.is_finite() && qps > 0.0 => Ok(qps),
        _ => Err(format!(
            "{text:?}: a number of requests a second above 0, e.g. 50 or 2.5"
        )),
    }
}

/// Always an error naming what to use instead.
fn refuse_kubectl_parallelism(_: &str) -> Result<u32, String> {
    Err(
        "Flotilla runs no kubectl, it applies through the API: limit its requests with \
         --kube-api-qps and --kube-api-burst (ARGOCD_K8S_CLIENT_QPS, ARGOCD_K8S_CLIENT_BURST)"
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser, Debug)]
    struct Flags {
        #[command(flatten)]
        limits: ApiLimitArgs,
    }

    fn parse(args: &[&str]) -> Result<ApiLimitArgs, String> {
        Flags::try_parse_from(std::iter::once("controller").chain(args.iter().copied()))
            .map(|flags| flags.limits)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn reads_the_rate_and_refuses_what_cannot_be_one() {
        let limits = parse(&["--kube-api-qps", "2.5", "--kube-api-burst", "5"]).unwrap();
        assert_eq!((limits.kube_api_qps, limits.kube_api_burst), (2.5, 5));
        for bad in [
            "--kube-api-qps=0",
            "--kube-api-qps=-1",
            "--kube-api-qps=fast",
            "--kube-api-burst=0",
        ] {
            let error = parse(&[bad]).expect_err("refused");
            let flag = bad.split('=').next().unwrap();
            assert!(error.contains(flag), "{error}");
        }
        let refused = parse(&["--kubectl-parallelism-limit", "20"]).expect_err("refused");
        assert!(
            refused.contains("--kubectl-parallelism-limit") && refused.contains("--kube-api-qps"),
            "{refused}"
        );
    }
}
