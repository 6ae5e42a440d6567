//! The fleet's MQTT broker (issue 37): Mosquitto from the distribution's
//! packages, on 127.0.0.1 only, on a free port, with a configuration file
//! written here, its log (and, when asked, its persistence) in a directory
//! under `target/`.
//!
//! Shared by `cargo xtask broker` (a broker in the foreground, for manual
//! use), `cargo xtask fleet`, `cargo xtask test` (which installs it,
//! [`ensure`]) and the fleet tests (`sim/tests/fleet.rs`, which find it
//! with [`find`] and skip without it where they may).
//!
//! ```no_run
//! let mosquitto = xtask::mqtt::find()?;
//! let dir = std::path::Path::new("target/mqtt/example");
//! let broker = xtask::mqtt::Broker::start(&mosquitto, dir, &xtask::mqtt::Options::default())?;
//! println!("publish to {}", broker.address());
//! broker.stop()?;
//! # Ok::<(), String>(())
//! ```

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The variable that names the `mosquitto` program (else it is looked for
/// on the `PATH` and in `/usr/sbin`, where Debian installs it).
pub const PROGRAM_VAR: &str = "ENVAWARE_MOSQUITTO";

/// The Debian package that holds the broker.
pub const PACKAGE: &str = "mosquitto";

/// How long a broker may take to accept connections after it starts.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// How long a stopped broker may take to save and exit before it is killed.
const STOP_WITHIN: Duration = Duration::from_secs(10);

/// What the broker keeps, beyond Mosquitto's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Keep sessions and queued messages on disk (`persistence true`, in the
    /// broker's directory, saved every [`Options::autosave_secs`] and at a
    /// clean stop), so that a restarted broker still holds a consumer's
    /// queue; without it a restart loses what the broker had not delivered.
    pub persistence: bool,
    /// `autosave_interval` with persistence, in seconds.
    pub autosave_secs: u32,
    /// QoS 1 messages sent to one client and not yet acknowledged
    /// (`max_inflight_messages`; Mosquitto's default is 20, which a
    /// consumer that acknowledges a batch at a time would wait on).
    pub max_inflight: u32,
    /// QoS 1 messages queued for one client beyond those in flight
    /// (`max_queued_messages`; Mosquitto's default of 1,000 drops the rest
    /// while a consumer is away, which the consumer would see as gaps).
    pub max_queued: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options { persistence: false, autosave_secs: 5, max_inflight: 1000, max_queued: 2_000_000 }
    }
}

/// A running Mosquitto, stopped (SIGTERM, then killed) when dropped.
#[derive(Debug)]
pub struct Broker {
    child: Option<Child>,
    program: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl Broker {
    /// Starts `program` (Mosquitto) on a free port of 127.0.0.1 with a
    /// configuration written to `dir/mosquitto.conf` (its log in
    /// `dir/mosquitto.log`, its persistence in `dir/`), and waits (10 s at
    /// most) until it accepts a connection.
    ///
    /// # Errors
    ///
    /// The directory or the file cannot be written, the broker does not
    /// start or exits (its log's last lines are in the message), or it
    /// does not accept a connection in time.
    pub fn start(program: &Path, dir: &Path, options: &Options) -> Result<Broker, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let dir = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;
        // A port another program takes between the probe and the broker's
        // bind makes it exit at once: try another.
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port()?;
            write_config(&dir, port, options)?;
            let mut broker =
                Broker { child: None, program: program.to_path_buf(), dir: dir.clone(), port };
            match broker.launch() {
                Ok(()) => return Ok(broker),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Its directory: the configuration, the log, the persistence file.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The configuration file it was started with.
    pub fn config_file(&self) -> PathBuf {
        self.dir.join("mosquitto.conf")
    }

    /// Its log file.
    pub fn log_file(&self) -> PathBuf {
        self.dir.join("mosquitto.log")
    }

    /// The broker's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops it (SIGTERM: Mosquitto saves its persistence and exits), then
    /// starts it again with the same configuration on the same port: a
    /// broker outage.
    ///
    /// # Errors
    ///
    /// As [`Broker::stop`] and [`Broker::start`].
    pub fn restart(&mut self) -> Result<(), String> {
        self.terminate()?;
        self.launch()
    }

    /// Stops it: SIGTERM, and a kill if it has not exited after 10 s.
    ///
    /// # Errors
    ///
    /// It had to be killed, or exited with a failure of its own before.
    pub fn stop(mut self) -> Result<(), String> {
        self.terminate()
    }

    fn launch(&mut self) -> Result<(), String> {
        let log = self.log_file();
        let mut child = Command::new(&self.program)
            .arg("-c")
            .arg(self.config_file())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "mosquitto exited at start ({status}); its log ({}) ends:\n{}",
                    log.display(),
                    log_tail(&log)
                ));
            }
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                self.child = Some(child);
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "mosquitto did not accept a connection on {address} within {} s; its log ends:\n{}",
                    READY_WITHIN.as_secs(),
                    log_tail(&log)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn terminate(&mut self) -> Result<(), String> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        if let Ok(Some(status)) = child.try_wait() {
            return match status.success() {
                true => Ok(()),
                false => Err(format!("mosquitto had exited ({status})")),
            };
        }
        // Only the broker this value started, by its id.
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let asked = Instant::now();
        while asked.elapsed() < STOP_WITHIN {
            if let Ok(Some(_)) = child.try_wait() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(format!("mosquitto did not stop within {} s of SIGTERM: killed", STOP_WITHIN.as_secs()))
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}

/// A port nobody listens on now, on 127.0.0.1.
fn free_port() -> Result<u16, String> {
    let probe = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))?;
    probe.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// The configuration: one listener on loopback, anonymous clients (only
/// this machine can reach it), a log file, the limits of [`Options`].
pub fn config_text(dir: &Path, port: u16, options: &Options) -> String {
    let mut text =
        String::from("# Written by cargo xtask (xtask::mqtt) for the fleet: loopback only.\n");
    let _ = writeln!(text, "listener {port} 127.0.0.1");
    text.push_str("allow_anonymous true\n");
    // As root Mosquitto would switch to the `mosquitto` user, which cannot
    // write here; any other user runs it as itself and ignores this.
    text.push_str("user root\n");
    let _ = writeln!(text, "log_dest file {}", dir.join("mosquitto.log").display());
    text.push_str("log_type error\nlog_type warning\nlog_type notice\nlog_type information\n");
    text.push_str("log_timestamp_format %Y-%m-%dT%H:%M:%S\nconnection_messages true\n");
    let _ = writeln!(text, "max_inflight_messages {}", options.max_inflight);
    let _ = writeln!(text, "max_queued_messages {}", options.max_queued);
    text.push_str("max_queued_bytes 0\n");
    if options.persistence {
        text.push_str("persistence true\n");
        // Mosquitto joins the location and the file name as text.
        let _ = writeln!(text, "persistence_location {}/", dir.display());
        text.push_str("persistence_file mosquitto.db\n");
        let _ = writeln!(text, "autosave_interval {}", options.autosave_secs);
    } else {
        text.push_str("persistence false\n");
    }
    text
}

fn write_config(dir: &Path, port: u16, options: &Options) -> Result<(), String> {
    let path = dir.join("mosquitto.conf");
    std::fs::write(&path, config_text(dir, port, options))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The last lines of a log file, for an error message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// The version `program` says it is, if it is Mosquitto. (`mosquitto -h`
/// prints it and exits 3; it has no `--version`.)
pub fn version(program: &Path) -> Option<String> {
    let out = Command::new(program).arg("-h").stdin(Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.starts_with("mosquitto version "))?;
    Some(line.trim_start_matches("mosquitto version ").trim().to_string())
}

/// Mosquitto: [`PROGRAM_VAR`], else `mosquitto` on the `PATH`, else
/// `/usr/sbin/mosquitto`.
///
/// # Errors
///
/// None of them is Mosquitto; the message names the variable and the
/// package.
pub fn find() -> Result<PathBuf, String> {
    let candidates: Vec<PathBuf> = match std::env::var_os(PROGRAM_VAR) {
        Some(p) => vec![PathBuf::from(p)],
        None => vec![PathBuf::from("mosquitto"), PathBuf::from("/usr/sbin/mosquitto")],
    };
    candidates.into_iter().find(|p| version(p).is_some()).ok_or_else(|| {
        format!("no mosquitto (the Debian package `{PACKAGE}`, or set {PROGRAM_VAR})")
    })
}

/// Mosquitto, installed from the distribution's packages when missing (as
/// root, without its recommends; the apt lock waited for). Debian's
/// package would start a system broker on port 1883 where services may
/// start; the fleet never uses it.
///
/// # Errors
///
/// Not root, no apt-get, or the install failed: the message names the
/// command to run.
pub fn ensure() -> Result<PathBuf, String> {
    if let Ok(found) = find() {
        return Ok(found);
    }
    crate::apt::install(PACKAGE, &["--no-install-recommends"])?;
    find().map_err(|e| format!("{e}, after installing {PACKAGE}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_listens_on_loopback_only_and_keeps_queues_when_asked() {
        let dir = Path::new("/tmp/broker");
        let plain = config_text(dir, 18_830, &Options::default());
        assert!(plain.contains("listener 18830 127.0.0.1\n"), "{plain}");
        assert_eq!(plain.matches("listener").count(), 1, "{plain}");
        assert!(plain.contains("persistence false\n"), "{plain}");
        assert!(plain.contains("log_dest file /tmp/broker/mosquitto.log\n"), "{plain}");
        let kept = config_text(dir, 1, &Options { persistence: true, ..Options::default() });
        assert!(kept.contains("persistence true\npersistence_location /tmp/broker/\n"), "{kept}");
        assert!(kept.contains("max_queued_messages 2000000\n"), "{kept}");
    }
}
