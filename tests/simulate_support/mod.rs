//! Helpers shared by tests/simulate.rs and tests/simulate_offline.rs.
// Each of the two test binaries compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::PathBuf;

use clap::Parser;
use flotilla::cli::simulate::{SimulateArgs, simulate_from_args};
use flotilla::cli::{Cli, Command as Subcommand};
use flotilla::simulate::report::Report;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn example(path: &str) -> String {
    root().join("examples").join(path).display().to_string()
}

/// The arguments of each example, as its header comment documents them.
pub fn examples() -> Vec<(&'static str, Vec<String>)> {
    let repo = |url: &str, dir: &str| format!("--repo={url}={}", example(dir));
    let clusters = format!("--clusters={}", example("clusters.yaml"));
    vec![
        (
            "three-tier-stack",
            vec![
                example("three-tier-stack.yaml"),
                repo(
                    "https://git.example.com/acme/platform-manifests.git",
                    "repos/platform-manifests",
                ),
            ],
        ),
        (
            "multi-cluster-promotion",
            vec![
                example("multi-cluster-promotion.yaml"),
                clusters.clone(),
                repo(
                    "https://git.example.com/acme/checkout.git",
                    "repos/checkout",
                ),
            ],
        ),
        (
            "matrix-clusters-apps",
            vec![
                example("matrix-clusters-apps.yaml"),
                clusters,
                repo(
                    "https://git.example.com/acme/services.git",
                    "repos/services",
                ),
            ],
        ),
        (
            "monorepo-directories",
            vec![
                example("monorepo-directories.yaml"),
                repo(
                    "https://git.example.com/acme/monorepo.git",
                    "repos/monorepo",
                ),
            ],
        ),
    ]
}

pub fn parse(args: &[String]) -> SimulateArgs {
    let argv = ["flotilla", "simulate", "--instant"]
        .into_iter()
        .map(str::to_owned)
        .chain(args.iter().cloned());
    match Cli::try_parse_from(argv).expect("valid arguments").command {
        Subcommand::Simulate(args) => args,
        other => panic!("parsed as {other:?}"),
    }
}

pub fn simulate(args: &[String]) -> Report {
    simulate_from_args(&parse(args), &Default::default(), &|_| {})
        .unwrap_or_else(|e| panic!("{args:?}: {e:#}"))
}

pub fn three_tier(extra: &[&str]) -> Vec<String> {
    let mut args = examples().swap_remove(0).1;
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}
