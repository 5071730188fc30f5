//! Running one generator tool (`helm`, `kustomize`, `kubectl kustomize`): a clean environment
//! (only `PATH` is passed on) with a private HOME, cache and config directory per run (deleted
//! after it), every HTTP(S) request sent to a closed loopback port unless the run fetches from a
//! chart repository (local sources never reach a network), a timeout, optionally a limit on its
//! memory (its data segment, `RLIMIT_DATA`, set in the child before it starts), the output
//! bounded by the limits of an Application, and stderr kept for the error. Knows nothing of
//! charts, kustomizations or Jsonnet.

use std::ffi::OsString;
use std::fmt;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;

use flotilla_core::manifest::limits::MAX_APPLICATION_BYTES;
use flotilla_core::secrets::repository::Sensitive;

/// Where every HTTP(S) request of a tool goes: the discard port on loopback, closed here, so a
/// request fails at once instead of reaching a network.
const NO_NETWORK_PROXY: &str = "http://127.0.0.1:9";

/// How often a running tool is checked for its end.
const POLL: Duration = Duration::from_millis(5);

/// The most stderr kept for an error message.
const MAX_STDERR_BYTES: u64 = 64 * 1024;

/// The tool runs this process started (the controller's `flotilla_source_tool_runs_total`):
/// at steady state, with every source in the generation cache, it stays still.
#[must_use]
pub fn runs() -> Counter {
    static RUNS: OnceLock<Counter> = OnceLock::new();
    RUNS.get_or_init(Counter::default).clone()
}

/// One command line of a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCommand {
    /// The program to run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Whether it may reach the network (a chart repository's).
    pub network: bool,
}

impl fmt::Display for ToolCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.program.display())?;
        for arg in &self.args {
            write!(f, " {}", arg.to_string_lossy())?;
        }
        Ok(())
    }
}

/// A tool run that did not give manifests.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("cannot run `{command}`: {error}")]
    Spawn {
        command: ToolCommand,
        #[source]
        error: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        command: ToolCommand,
        status: ExitStatus,
        /// Its stderr, after what it printed on stdout when that is short.
        stderr: String,
    },
    #[error("`{command}` did not finish within {timeout:?} and was stopped")]
    TimedOut {
        command: ToolCommand,
        timeout: Duration,
    },
    #[error(
        "`{command}` printed more than {MAX_APPLICATION_BYTES} bytes (the limit of an Application)"
    )]
    TooLarge { command: ToolCommand },
    #[error("`{command}` printed output that is not UTF-8")]
    NotUtf8 { command: ToolCommand },
    #[error("cannot make a private directory for `{command}`: {error}")]
    Private {
        command: ToolCommand,
        #[source]
        error: std::io::Error,
    },
}

impl ToolCommand {
    /// Runs the command to its end within `timeout` and returns its stdout.
    ///
    /// # Errors
    /// A program that cannot be started, a non-zero exit (with its stderr), a timeout, output
    /// over the limit or not UTF-8.
    pub fn run(&self, timeout: Duration) -> Result<String, ToolError> {
        let private = self.private_home()?;
        self.run_with(timeout, &RunInput::new(private.path()))
    }

    /// A private directory (mode 0700, removed when dropped) to serve as the HOME of one or
    /// more runs.
    ///
    /// # Errors
    /// It cannot be made.
    pub fn private_home(&self) -> Result<tempfile::TempDir, ToolError> {
        tempfile::Builder::new()
            .prefix("flotilla-tool-")
            .tempdir()
            .map_err(|error| ToolError::Private {
                command: self.clone(),
                error,
            })
    }

    /// [`ToolCommand::run`] with `input`'s HOME (kept after the run, for the next one), working
    /// directory, standard input and variables.
    ///
    /// # Errors
    /// As [`ToolCommand::run`].
    pub fn run_with(&self, timeout: Duration, input: &RunInput<'_>) -> Result<String, ToolError> {
        let home = input.home;
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("KUBECONFIG", home.join("kubeconfig"));
        if !self.network {
            command
                .env("HTTP_PROXY", NO_NETWORK_PROXY)
                .env("HTTPS_PROXY", NO_NETWORK_PROXY)
                .env("NO_PROXY", "");
        }
        command.envs(input.env.iter().map(|(name, value)| (name, value.expose())));
        command.envs(input.variables.iter().map(|(name, value)| (name, value)));
        if let Some(bytes) = input.memory {
            limit_memory(&mut command, bytes);
        }
        runs().inc();
        let mut child = command
            .current_dir(input.dir.unwrap_or(home))
            .stdin(if input.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| ToolError::Spawn {
                command: self.clone(),
                error,
            })?;
        if let (Some(mut pipe), Some(bytes)) = (child.stdin.take(), input.stdin) {
            // Small (a password): written whole before the output is read; closed when dropped.
            let _ = pipe.write_all(bytes.expose().as_bytes());
        }
        let stdout = child
            .stdout
            .take()
            .map(|out| read_bounded(out, MAX_APPLICATION_BYTES));
        let stderr = child
            .stderr
            .take()
            .map(|err| read_bounded(err, MAX_STDERR_BYTES));
        let deadline = Instant::now() + timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
                Ok(None) | Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(ToolError::TimedOut {
                        command: self.clone(),
                        timeout,
                    });
                }
            }
        };
        let joined = |reader: Option<thread::JoinHandle<(Vec<u8>, bool)>>| {
            reader.and_then(|r| r.join().ok()).unwrap_or_default()
        };
        let (out, out_truncated) = joined(stdout);
        let (err, _) = joined(stderr);
        if !status.success() {
            // Some failures are told on stdout (helm dependency build's unreachable
            // repository): what the tool printed there comes first, when it is short.
            let printed = String::from_utf8_lossy(&out);
            let printed = Some(printed.trim())
                .filter(|text| !text.is_empty() && text.len() as u64 <= MAX_STDERR_BYTES);
            let err = String::from_utf8_lossy(&err);
            return Err(ToolError::Failed {
                command: self.clone(),
                status,
                stderr: printed
                    .into_iter()
                    .chain([err.trim()])
                    .filter(|text| !text.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n"),
            });
        }
        if out_truncated {
            return Err(ToolError::TooLarge {
                command: self.clone(),
            });
        }
        String::from_utf8(out).map_err(|_| ToolError::NotUtf8 {
            command: self.clone(),
        })
    }
}

/// What a run is given besides its command line; secrets go here, never in arguments.
#[derive(Debug)]
pub struct RunInput<'a> {
    /// Its HOME, cache and config directory (private; the caller removes it).
    pub home: &'a Path,
    /// Written to its standard input (null when none).
    pub stdin: Option<&'a Sensitive>,
    /// Variables set for it (a proxy, which may hold a password).
    pub env: Vec<(&'static str, &'a Sensitive)>,
    /// The most bytes its data segment (heap included) may grow to; an allocation beyond fails.
    pub memory: Option<u64>,
    /// Where it runs (its HOME when none).
    pub dir: Option<&'a Path>,
    /// Variables set for it by name, in order (a later one of the same name wins).
    pub variables: &'a [(String, String)],
}

impl<'a> RunInput<'a> {
    /// A run in `home` with nothing on stdin and no variables of its own.
    #[must_use]
    pub fn new(home: &'a Path) -> Self {
        Self {
            home,
            stdin: None,
            env: Vec::new(),
            memory: None,
            dir: None,
            variables: &[],
        }
    }
}

/// Limits the data segment of `command`'s process to `bytes` (`RLIMIT_DATA`: its heap and
/// private mappings, not the program's code), set in the child before it starts.
fn limit_memory(command: &mut Command, bytes: u64) {
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: bytes,
    };
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit, which
    // is async-signal-safe; it allocates nothing and takes no lock.
    #[allow(
        unsafe_code,
        reason = "pre_exec is unsafe: it runs in the forked child"
    )]
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_DATA, &raw const limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

/// Reads at most `limit` bytes on a thread (and drains the rest, so the tool never blocks on a
/// full pipe); whether more came.
fn read_bounded(
    mut reader: impl Read + Send + 'static,
    limit: u64,
) -> thread::JoinHandle<(Vec<u8>, bool)> {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut reader).take(limit).read_to_end(&mut kept);
        let more = std::io::copy(&mut reader, &mut std::io::sink()).unwrap_or(0);
        (kept, more > 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> ToolCommand {
        ToolCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            network: false,
        }
    }

    #[test]
    fn runs_with_a_private_home_and_no_proxy_escape() {
        let out = sh("echo $HOME; echo $HTTPS_PROXY; echo $SECRET")
            .run(Duration::from_secs(30))
            .unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].contains("flotilla-tool-"), "{out}");
        assert!(
            !std::path::Path::new(lines[0]).exists(),
            "removed after the run"
        );
        assert_eq!(lines[1], NO_NETWORK_PROXY);
        assert_eq!(lines[2], "", "the caller's environment is not passed on");
    }

    #[test]
    fn a_failure_keeps_stderr_and_names_the_command() {
        let error = sh("echo told on stdout; echo bad chart >&2; exit 3")
            .run(Duration::from_secs(30))
            .unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("/bin/sh -c echo told on stdout"),
            "{message}"
        );
        assert!(message.contains("exit status: 3"), "{message}");
        assert!(message.ends_with("told on stdout\nbad chart"), "{message}");
    }

    #[test]
    fn a_tool_that_runs_too_long_is_stopped() {
        let error = sh("sleep 30").run(Duration::from_millis(100)).unwrap_err();
        assert!(matches!(error, ToolError::TimedOut { .. }), "{error}");
    }

    #[test]
    fn a_memory_limit_bounds_the_data_segment_of_the_run() {
        let command = sh("ulimit -d");
        let home = command.private_home().unwrap();
        let input = RunInput {
            memory: Some(64 * 1024 * 1024),
            ..RunInput::new(home.path())
        };
        let out = command.run_with(Duration::from_secs(30), &input).unwrap();
        assert_eq!(out.trim(), "65536", "in KiB");
        let unlimited = command.run(Duration::from_secs(30)).unwrap();
        assert_ne!(unlimited.trim(), "65536");
    }

    #[test]
    fn a_missing_program_is_named() {
        let command = ToolCommand {
            program: "/nonexistent/helm".into(),
            args: vec!["version".into()],
            network: false,
        };
        let message = command.run(Duration::from_secs(5)).unwrap_err().to_string();
        assert!(
            message.starts_with("cannot run `/nonexistent/helm version`"),
            "{message}"
        );
    }
}
