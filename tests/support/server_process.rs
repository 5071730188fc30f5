//! A server a test starts (git daemon, sshd, a registry, chromedriver) as the leader of a process
//! group of its own, ended with everything it forked when the guard is dropped, also when the test
//! panics: killing only the spawned pid leaves its children running (`git daemon` runs
//! `git-daemon` as a child, chromedriver its browsers).

use std::process::{Child, Command, ExitStatus};

/// A running server process group; killed (SIGKILL to the whole group) and reaped on drop.
pub struct ServerProcess {
    child: Child,
}

impl ServerProcess {
    /// Spawns `command` in a new process group.
    pub fn spawn(command: &mut Command) -> std::io::Result<Self> {
        use std::os::unix::process::CommandExt;
        let child = command.process_group(0).spawn()?;
        Ok(Self { child })
    }

    /// The exit status, if the group's leader has already exited.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: killpg only sends a signal; the group is the one spawn() made for this child.
            #[allow(
                unsafe_code,
                reason = "a process group is only killed through killpg(2)"
            )]
            unsafe {
                libc::killpg(pid, libc::SIGKILL)
            };
        }
        let _ = self.child.wait();
    }
}
