//! The scripted model server (`envaware-sim model-server`), the project's
//! one test double: started on 127.0.0.1 with a free port, bounded in
//! requests and idle time, killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `envaware-sim model-server`.
pub struct ModelServer {
    child: Child,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
}

impl ModelServer {
    /// Starts the server of `sim` with `script`, logging each request to
    /// `log`; it stops by itself after `max_requests` or 30 idle seconds.
    pub fn start(sim: &Path, script: &Path, log: &Path, max_requests: u32) -> Result<Self, String> {
        let _ = std::fs::remove_file(log);
        let mut child = Command::new(sim)
            .args(["model-server", "--port", "0", "--idle-timeout", "30", "--max-requests"])
            .arg(max_requests.to_string())
            .arg("--script")
            .arg(script)
            .arg("--log")
            .arg(log)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {} model-server: {e}", sim.display()))?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("the model server has no stdout")?;
        let read = BufReader::new(stdout).read_line(&mut line);
        let port = line.trim().strip_prefix("listening on 127.0.0.1:").and_then(|p| p.parse().ok());
        match (read, port) {
            (Ok(_), Some(port)) => Ok(ModelServer { child, port }),
            _ => {
                let _ = child.kill();
                Err(format!("the model server did not say its port (it printed {line:?})"))
            }
        }
    }

    /// Waits for the server to stop by itself (its request limit).
    pub fn wait(mut self) -> Result<(), String> {
        let status = self.child.wait().map_err(|e| format!("the model server: {e}"))?;
        status.success().then_some(()).ok_or(format!("the model server exited with {status}"))
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
