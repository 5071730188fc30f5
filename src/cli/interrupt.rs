//! Ctrl-C (SIGINT) and SIGTERM for the commands that check sources out: the command's temporary
//! directories ([`crate::repo::temporary`]) are removed before the process exits (with 130 or
//! 143, as a shell reports a process killed by the signal). A command that handles Ctrl-C
//! itself (`flotilla sync` terminates its operation, then ends normally and drops its
//! directories) takes it over with [`handled_by_the_command`].

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::signal::unix::{SignalKind, signal};

/// Whether the running command handles Ctrl-C itself.
static COMMAND_HANDLES_CTRL_C: AtomicBool = AtomicBool::new(false);

/// Starts the thread that removes the temporary directories on Ctrl-C or SIGTERM and exits.
///
/// # Errors
/// The signals cannot be watched.
pub fn remove_temporaries_on_interrupt() -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut interrupt, mut terminate) = runtime.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        ))
    })?;
    std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || {
            let code = runtime.block_on(async {
                loop {
                    tokio::select! {
                        _ = interrupt.recv() => {
                            if !COMMAND_HANDLES_CTRL_C.load(Ordering::SeqCst) {
                                break 130;
                            }
                        }
                        _ = terminate.recv() => break 143,
                    }
                }
            });
            crate::repo::temporary::remove_all();
            std::process::exit(code);
        })?;
    Ok(())
}

/// From now on Ctrl-C is the command's: the handler leaves it alone (SIGTERM still removes the
/// temporary directories and exits).
pub fn handled_by_the_command() {
    COMMAND_HANDLES_CTRL_C.store(true, Ordering::SeqCst);
}
