//! The `flotilla` command line: parses arguments and hands each subcommand to its module in
//! `flotilla::cli`.

use std::process::ExitCode;

use clap::Parser;
use flotilla::cli::{Cli, Command};

/// jemalloc, not the C library's allocator: the controller's many threads each took a glibc
/// arena, and freed memory stayed resident (a fleet of 10,000 Applications grew from 222 to 299
/// MiB in the half minute after it converged); see BENCHMARKS.md.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`: a background thread returns freed pages to the
/// system after a second (by default ten, and only as other allocations happen), so the memory of
/// a burst of work does not stay resident. `_RJEM_MALLOC_CONF` in the environment overrides it.
// SAFETY: jemalloc reads this symbol as its `const char *malloc_conf`: a thin pointer to a
// NUL-terminated string that lives as long as the program; nothing else defines it.
#[unsafe(export_name = "_rjem_malloc_conf")]
#[allow(
    unsafe_code,
    reason = "jemalloc reads its options from this exported symbol"
)]
#[allow(non_upper_case_globals)]
pub static malloc_conf: &[u8; 60] =
    b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Crd(_)
            | Command::Render(_)
            | Command::Plan(_)
            | Command::Simulate(_)
            | Command::Version(_)
            | Command::Completion(_)
    ) {
        end_quietly_on_a_closed_pipe();
    }
    flotilla::cli::init_tracing(cli.verbose, cli.log_format);
    if matches!(
        cli.command,
        Command::Render(_)
            | Command::Plan(_)
            | Command::Simulate(_)
            | Command::Sync(_)
            | Command::Diff(_)
            | Command::App(_)
    ) && let Err(error) = flotilla::cli::interrupt::remove_temporaries_on_interrupt()
    {
        tracing::warn!(%error, "temporary checkouts will not be removed on Ctrl-C");
    }
    let plugins = match cli
        .plugins_dir
        .as_deref()
        .map(flotilla::source::plugin::load_dir)
    {
        None => Vec::new(),
        Some(Ok(plugins)) => plugins,
        Some(Err(error)) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let toolchain =
        std::sync::Arc::new(flotilla::source::Toolchain::new(flotilla::source::Tools {
            timeout: cli.exec_timeout,
            jsonnet_memory_mib: cli.jsonnet_memory_mib,
            plugins,
            ..flotilla::source::Tools::new(cli.helm, cli.kustomize, cli.kubectl)
        }));
    let result: anyhow::Result<ExitCode> = match cli.command {
        Command::Crd(args) => flotilla::cli::crd::run(&args),
        Command::Render(args) => flotilla::cli::render::run(&args, &toolchain),
        Command::Plan(args) => flotilla::cli::plan::run(&args, &toolchain),
        Command::Rollout(args) => flotilla::cli::rollout::run(&args, &toolchain),
        Command::Controller(args) => flotilla::cli::controller::run(&args, &toolchain),
        Command::Sync(args) => flotilla::cli::sync::run(&args, &toolchain),
        Command::Diff(args) => Ok(flotilla::cli::diff::run(&args, &toolchain)),
        Command::Get(args) => flotilla::cli::get::run(&args),
        Command::Import(args) => flotilla::cli::import::run(&args),
        Command::App(args) => flotilla::cli::app::run(&args, &toolchain),
        Command::Appset(args) => flotilla::cli::appset::run(&args, &toolchain),
        Command::Proj(args) => flotilla::cli::proj::run(&args),
        Command::Simulate(args) => flotilla::cli::simulate::run(&args, &toolchain),
        Command::Version(args) => flotilla::cli::version::run(&args, &toolchain),
        Command::Completion(args) => flotilla::cli::completion::run(&args),
        Command::Windows(args) => flotilla::cli::windows::run(&args),
        Command::JsonnetEval(args) => flotilla::cli::jsonnet_eval::run(&args),
        Command::Docs(args) => flotilla::cli::docs::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", flotilla::cli::error_text(&error));
            flotilla::cli::exit_code(&error)
        }
    }
}

/// An offline command whose stdout is closed early (`flotilla render … | head -1`) ends quietly,
/// as other command-line tools do, instead of panicking on its next print: SIGPIPE's default
/// action is restored (Rust starts with it ignored). Only for the commands that talk to no
/// server: a vectored write to a socket the server closed could raise SIGPIPE too, and a
/// command talking to the API server must report that as an error, not die of it.
fn end_quietly_on_a_closed_pipe() {
    // SAFETY: called once at start, before any other thread exists; setting a signal's
    // disposition to its default has no other effect on this process.
    #[allow(
        unsafe_code,
        reason = "SIGPIPE's disposition is only set through signal(2)"
    )]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
