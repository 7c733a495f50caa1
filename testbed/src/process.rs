//! Child processes of a run: started with their output in log files,
//! stopped by PID, and never left behind: dropping a [`Processes`] ends
//! every child still running (SIGTERM, then SIGKILL).

use std::fs::File;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

/// How long a child gets to exit after SIGTERM before SIGKILL.
const TERMINATE_GRACE: Duration = Duration::from_millis(1500);

/// Index of a child in its [`Processes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessId(usize);

struct Managed {
    name: String,
    child: Child,
    log: PathBuf,
    /// Exit status once reaped.
    status: Option<std::process::ExitStatus>,
}

/// The children of one run.
#[derive(Default)]
pub struct Processes {
    children: Vec<Managed>,
}

/// Sends `signal` to `pid` with kill(1): the crate has no unsafe code and
/// std only knows SIGKILL.
fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).stderr(Stdio::null()).status();
}

impl Processes {
    /// Starts `command` with stdout and stderr in `log` and stdin closed.
    pub fn spawn(&mut self, name: &str, mut command: Command, log: &Path) -> Result<ProcessId, String> {
        let file = File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let errors = file.try_clone().map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        command.stdin(Stdio::null()).stdout(file).stderr(errors);
        self.spawn_configured(name, command, log)
    }

    /// Starts `command` as configured by the caller (pipes, environment).
    pub fn spawn_configured(&mut self, name: &str, mut command: Command, log: &Path) -> Result<ProcessId, String> {
        let child = command.spawn().map_err(|e| format!("cannot start {name} ({:?}): {e}", command.get_program()))?;
        self.children.push(Managed { name: name.to_string(), child, log: log.to_path_buf(), status: None });
        Ok(ProcessId(self.children.len() - 1))
    }

    /// The child, for its pipes.
    pub fn child_mut(&mut self, id: ProcessId) -> &mut Child {
        &mut self.children[id.0].child
    }

    /// Whether the child has exited (reaping it if so).
    pub fn exited(&mut self, id: ProcessId) -> bool {
        let managed = &mut self.children[id.0];
        if managed.status.is_none() {
            if let Ok(Some(status)) = managed.child.try_wait() {
                managed.status = Some(status);
            }
        }
        managed.status.is_some()
    }

    /// The exit status, if the child has exited.
    pub fn status(&mut self, id: ProcessId) -> Option<std::process::ExitStatus> {
        self.exited(id);
        self.children[id.0].status
    }

    /// Waits up to `limit` for the child to exit; returns whether it did.
    pub fn wait(&mut self, id: ProcessId, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.exited(id) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// Ends the child: SIGTERM, and SIGKILL if it is still there after a
    /// grace period.
    pub fn terminate(&mut self, id: ProcessId) {
        if self.exited(id) {
            return;
        }
        signal(self.children[id.0].child.id(), "TERM");
        if !self.wait(id, TERMINATE_GRACE) {
            let managed = &mut self.children[id.0];
            let _ = managed.child.kill();
            managed.status = managed.child.wait().ok();
        }
    }

    /// Ends every child still running.
    pub fn terminate_all(&mut self) {
        let running: Vec<usize> = (0..self.children.len()).filter(|&i| !self.exited(ProcessId(i))).collect();
        for &i in &running {
            signal(self.children[i].child.id(), "TERM");
        }
        let deadline = Instant::now() + TERMINATE_GRACE;
        for &i in &running {
            while !self.exited(ProcessId(i)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if !self.exited(ProcessId(i)) {
                let managed = &mut self.children[i];
                let _ = managed.child.kill();
                managed.status = managed.child.wait().ok();
            }
        }
    }

    /// A one-line description of a child that failed, with the end of its
    /// log.
    pub fn describe_failure(&mut self, id: ProcessId) -> String {
        let status = self.status(id);
        let managed = &self.children[id.0];
        // The first line that says what went wrong, else the last one.
        let tail = std::fs::read_to_string(&managed.log)
            .map(|text| {
                let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
                let telling = ["error", "invalid", "cannot", "failed"];
                lines
                    .iter()
                    .find(|line| telling.iter().any(|word| line.to_lowercase().contains(word)))
                    .or(lines.last())
                    .map_or(String::new(), |line| line.trim().to_string())
            })
            .unwrap_or_default();
        let status = status.map_or("is still running".to_string(), |s| format!("exited with {s}"));
        format!("{} {status} (log {}: {tail})", managed.name, managed.log.display())
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        self.terminate_all();
    }
}
