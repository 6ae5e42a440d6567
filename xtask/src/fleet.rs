//! `cargo xtask fleet --devices N --steps S [--faults]` (issue 37): a
//! fleet against a real broker and the fleet consumer, checked at the end.
//!
//! - Mosquitto on a free loopback port ([`crate::mqtt`]; persistence on
//!   with `--faults`, so that a restarted broker keeps the consumer's
//!   queue);
//! - the consumer (`envaware-sim fleet`), started first: the devices
//!   publish once its session is subscribed;
//! - the QEMU firmware as device `qemu-0` for S steps ([`crate::qemu`],
//!   the tests' temperatures, its clock fixed), publishing over UART2;
//! - N−1 simulated devices (`envaware-sim devices`): the fleet's generated
//!   sessions through the same outbox code (`envaware-uplink`) over TCP,
//!   S steps each at a board's pace;
//! - with `--faults`: the broker restarted at a third of the run, the
//!   board reset after step S/2, the consumer killed (SIGKILL) at two
//!   thirds and started again.
//!
//! Everything is bounded in time and stops by itself. At the end the store
//! is counted (DuckDB from the test venv when it has it, else the
//! consumer's own reader: the report says which), each device's hints per
//! dimension are checked against `envaware-sim replay` of the items the
//! consumer kept (and the simulated devices' own count), and the last line
//! is `fleet: devices N, steps S, items published P, rows R, lost L,
//! duplicates D`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::mqtt::{Broker, Options as BrokerOptions};
use crate::qemu::{self, RunOptions, RunResult, EPOCH, TEMPERATURES};

/// The board's device id.
pub const BOARD: &str = "qemu-0";

/// The simulated devices' id prefix (`sim-0001`, …).
pub const SIM_PREFIX: &str = "sim-";

/// The consumer's MQTT session.
const CLIENT_ID: &str = "envaware-fleet-run";

/// What to run, and with what.
#[derive(Debug, Clone)]
pub struct Options {
    /// Devices in all: the board and `devices - 1` simulated ones.
    pub devices: usize,
    /// Steps each device takes (the board's environment steps come on top).
    pub steps: usize,
    /// Restart the broker, reset the board and kill the consumer mid-run.
    pub faults: bool,
    /// `qemu-system-arm`.
    pub qemu: PathBuf,
    /// `defmt-print`.
    pub defmt_print: PathBuf,
    /// The firmware's release ELF.
    pub elf: PathBuf,
    /// Mosquitto.
    pub mosquitto: PathBuf,
    /// `envaware-sim`.
    pub sim: PathBuf,
    /// A Python with `duckdb` (the test venv's), to count the store with;
    /// `None`: the consumer's own reader counts it.
    pub python: Option<PathBuf>,
    /// The workspace (`tests/reference/*.py`, `docs/fleet.sql`).
    pub workspace: PathBuf,
    /// Where the broker, the store and the run's files go (emptied first).
    pub dir: PathBuf,
    /// Host time between a simulated device's steps (a board's pace).
    pub step_ms: u64,
    /// The consumer writes rows at least this often (`--flush-secs`): a
    /// file per device each time, so shorter is sooner and more files.
    pub flush_secs: f64,
}

impl Options {
    /// The defaults for `devices` and `steps`, with the tools given.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        devices: usize,
        steps: usize,
        faults: bool,
        qemu: PathBuf,
        defmt_print: PathBuf,
        elf: PathBuf,
        mosquitto: PathBuf,
        sim: PathBuf,
        workspace: PathBuf,
        dir: PathBuf,
    ) -> Options {
        Options {
            devices,
            steps,
            faults,
            qemu,
            defmt_print,
            elf,
            mosquitto,
            sim,
            python: None,
            workspace,
            dir,
            step_ms: DEFAULT_STEP_MS,
            flush_secs: DEFAULT_FLUSH_SECS,
        }
    }
}

/// A simulated device's pace by default: about a QEMU board's step (0.6 s
/// alone on this 2-core machine, 1 s beside a hundred devices), so that
/// the faults find every device mid-run.
pub const DEFAULT_STEP_MS: u64 = 1000;

/// How often the consumer writes rows by default: with a hundred devices
/// each writing a row or two a second, every second would make two files
/// per device a second (100,000 steps: some 200,000 files).
pub const DEFAULT_FLUSH_SECS: f64 = 5.0;

/// What the run measured and found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Devices, steps each.
    pub devices: usize,
    /// Steps each device was asked for.
    pub steps: usize,
    /// Items the devices published (each acknowledged by the broker once).
    pub published: u64,
    /// Rows in the store.
    pub rows: u64,
    /// Rows the store should hold: every step of every device, less the
    /// steps of items a device declared lost.
    pub expected_rows: u64,
    /// Items the consumer counted declared lost.
    pub lost: u64,
    /// Items the devices said they dropped undelivered.
    pub devices_lost: u64,
    /// Rows stored twice (a device's step number more than once).
    pub duplicates: u64,
    /// Who counted the store.
    pub reader: String,
    /// The figure lines before the last one.
    pub lines: Vec<String>,
    /// What is not as expected (empty: the run passed).
    pub problems: Vec<String>,
}

impl Report {
    /// `fleet: devices N, steps S, items published P, rows R, lost L, duplicates D`.
    pub fn last_line(&self) -> String {
        format!(
            "fleet: devices {}, steps {}, items published {}, rows {}, lost {}, duplicates {}",
            self.devices, self.steps, self.published, self.rows, self.lost, self.duplicates
        )
    }
}

/// Prints a progress line on standard error.
fn say(started: Instant, text: &str) {
    eprintln!("fleet: [{:>6.1} s] {text}", started.elapsed().as_secs_f64());
}

/// A consumer, a child process: its standard error echoed and watched for
/// its subscription, its standard output kept (the summary line).
struct Consumer {
    child: Child,
    subscribed: mpsc::Receiver<()>,
    out: Option<std::thread::JoinHandle<String>>,
    summary: PathBuf,
}

impl Consumer {
    fn start(o: &Options, broker: &str, run: usize, started: Instant) -> Result<Consumer, String> {
        let summary = o.dir.join(format!("consumer-{run}.json"));
        let mut child = Command::new(&o.sim)
            .args(["fleet", "--broker", broker, "--store"])
            .arg(o.dir.join("store"))
            .args(["--client-id", CLIENT_ID, "--idle-exit", "300", "--flush-secs"])
            .arg(o.flush_secs.to_string())
            .arg("--until")
            .arg(o.dir.join("until.txt"))
            .arg("--summary-json")
            .arg(&summary)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", o.sim.display()))?;
        let (tx, subscribed) = mpsc::channel();
        let err = child.stderr.take().ok_or("no consumer stderr")?;
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if line.starts_with("fleet: subscribed to ") {
                    let _ = tx.send(());
                }
                say(started, &format!("consumer {run}: {line}"));
            }
        });
        let mut stdout = child.stdout.take().ok_or("no consumer stdout")?;
        let out = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        let consumer = Consumer { child, subscribed, out: Some(out), summary };
        consumer
            .subscribed
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| "the consumer did not subscribe within 30 s".to_string())?;
        Ok(consumer)
    }

    /// Its CPU time so far (user + system, from /proc), in milliseconds.
    fn cpu_ms(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        // The fields after the command's closing parenthesis: utime is the
        // 12th of them, stime the 13th (in clock ticks).
        let rest = stat.rsplit_once(')')?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: f64 =
            fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
        Some(ticks * 1000.0 / clock_ticks())
    }

    /// Kills it (SIGKILL, by its id): a consumer that dies mid-run.
    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits (at most `limit`) for it to stop by itself: its exit code,
    /// its summary line and its summary JSON.
    fn finish(mut self, limit: Duration) -> Result<(Option<i32>, String, Value), String> {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            if started.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!("the consumer did not stop within {} s", limit.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let line =
            self.out.take().and_then(|o| o.join().ok()).unwrap_or_default().trim().to_string();
        let text = std::fs::read_to_string(&self.summary)
            .map_err(|e| format!("{}: {e}", self.summary.display()))?;
        let json =
            serde_json::from_str(&text).map_err(|e| format!("the consumer's summary: {e}"))?;
        Ok((status.code(), line, json))
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        // Only the child this run started, if still running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 on Linux).
fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The simulated devices, a child process: progress from its standard
/// error.
struct Devices {
    child: Child,
    logged: Arc<AtomicU64>,
    out: Option<std::thread::JoinHandle<String>>,
    summary: PathBuf,
}

impl Devices {
    fn start(o: &Options, broker: &str, started: Instant) -> Result<Devices, String> {
        let summary = o.dir.join("devices.json");
        let count = (o.devices - 1).to_string();
        // Long enough for its steps, an outage or two, and its last items.
        let timeout = (o.steps as u64 * o.step_ms / 1000 * 2 + 600).to_string();
        let mut child = Command::new(&o.sim)
            .args(["devices", "--broker", broker, "--count", &count])
            .args(["--steps", &o.steps.to_string(), "--id-prefix", SIM_PREFIX])
            .args(["--step-ms", &o.step_ms.to_string(), "--timeout", &timeout])
            .arg("--summary-json")
            .arg(&summary)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {} devices: {e}", o.sim.display()))?;
        let logged = Arc::new(AtomicU64::new(0));
        let err = child.stderr.take().ok_or("no devices stderr")?;
        let seen = Arc::clone(&logged);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                // `devices: K of T steps logged (E s)`
                match line.strip_prefix("devices: ").and_then(|l| l.split(' ').next()) {
                    Some(k) if line.contains(" steps logged") => {
                        seen.store(k.parse().unwrap_or(0), Ordering::Relaxed);
                    }
                    _ => say(started, &line),
                }
            }
        });
        let mut stdout = child.stdout.take().ok_or("no devices stdout")?;
        let out = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        });
        Ok(Devices { child, logged, out: Some(out), summary })
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn finish(mut self) -> Result<(String, Value), String> {
        let status = self.child.wait().map_err(|e| e.to_string())?;
        let line =
            self.out.take().and_then(|o| o.join().ok()).unwrap_or_default().trim().to_string();
        if !status.success() {
            return Err(format!("envaware-sim devices failed ({status}): {line}"));
        }
        let text = std::fs::read_to_string(&self.summary)
            .map_err(|e| format!("{}: {e}", self.summary.display()))?;
        let json = serde_json::from_str(&text).map_err(|e| format!("the devices' summary: {e}"))?;
        Ok((line, json))
    }
}

impl Drop for Devices {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The board's uplink report: items delivered, up to (of), bytes sent, lost.
#[derive(Debug, Clone, Copy, Default)]
pub struct Uplink {
    /// Items delivered (PUBACKs).
    pub delivered: u64,
    /// The log's items up to this one were delivered.
    pub up_to: u64,
    /// The log's next item: items 0..of were logged.
    pub of: u64,
    /// Bytes sent to the broker, MQTT framing included.
    pub sent: u64,
    /// Items the log dropped undelivered.
    pub lost: u64,
}

/// Reads the board's `uplink: N items delivered (the log's items up to X
/// of Y), C connections, F given up, B bytes sent, R received, L lost`.
pub fn uplink_line(log: &str) -> Option<Uplink> {
    let line = log.lines().find(|l| l.contains("uplink: ") && l.contains(" items delivered"))?;
    let line = &line[line.find("uplink: ")? + "uplink: ".len()..];
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    match numbers[..] {
        [delivered, up_to, of, _connections, _given_up, sent, _received, lost] => {
            Some(Uplink { delivered, up_to, of, sent, lost })
        }
        _ => None,
    }
}

/// The steps the board took: scripted and environment steps, from its log.
pub fn board_steps(log: &str) -> usize {
    log.lines().filter(|l| is_step(l)).count()
}

fn is_step(line: &str) -> bool {
    line.starts_with("=== step") || line.starts_with("=== environment")
}

/// The steps the board took since its last boot: its uplink's counters
/// (items delivered, bytes sent) start again at each boot.
pub fn board_steps_since_boot(log: &str) -> usize {
    let lines: Vec<&str> = log.lines().collect();
    let boot = lines.iter().rposition(|l| l.contains("uplink: device ")).map_or(0, |i| i + 1);
    lines[boot..].iter().filter(|l| is_step(l)).count()
}

/// The board's resets, from its log: after which step, and how many events
/// its log restored at the next boot.
pub fn board_resets(log: &str) -> Vec<(u64, u64)> {
    let number_after = |line: &str, key: &str| -> Option<u64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    let mut resets = Vec::new();
    let mut lines = log.lines();
    while let Some(line) = lines.next() {
        if let Some(step) = number_after(line, "resetting the MCU after step ") {
            let restored =
                lines.by_ref().find_map(|l| number_after(l, "restored ")).unwrap_or_default();
            resets.push((step, restored));
        }
    }
    resets
}

/// The `q` quantile (nearest rank) of sorted values.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    sorted.get(((q * sorted.len() as f64).ceil() as usize).saturating_sub(1).min(last)).copied()
}

/// Per dimension (time, tasks, context length, tool error, watch), the
/// hints `envaware-sim replay` prints for a device's item log that tell it.
fn replay_counts(sim: &Path, log: &Path) -> Result<[u64; 5], String> {
    let out = crate::checked_output(
        &format!("envaware-sim replay {}", log.display()),
        Command::new(sim).args(["replay", "--json"]).arg(log),
    )?;
    let mut counts = [0; 5];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("replay --json: {e}"))?;
        let Some(hint) = v["hint"].as_str() else { continue };
        for (k, tag) in
            ["<current-time>", "<tasks>", "<context-length>", "<tool-error>"].iter().enumerate()
        {
            counts[k] += u64::from(hint.contains(tag));
        }
        counts[4] += u64::from(v["watch"].as_array().is_some_and(|w| !w.is_empty()));
    }
    Ok(counts)
}

const DIMENSIONS: [&str; 5] = ["time", "tasks", "context_length", "tool_error", "watch"];

/// A device's hints per dimension in a JSON object of them.
fn dims(hints: &Value) -> [u64; 5] {
    DIMENSIONS.map(|k| hints[k].as_u64().unwrap_or(0))
}

/// What the store holds: DuckDB through `fleet_rows.py` when `python` has
/// it, else `envaware-sim fleet --rows-json`.
fn count_store(o: &Options) -> Result<Value, String> {
    let store = o.dir.join("store");
    let Some(python) = &o.python else {
        let file = o.dir.join("rows.json");
        crate::checked_output(
            "counting the store (envaware-sim fleet --rows-json)",
            Command::new(&o.sim)
                .args(["fleet", "--store"])
                .arg(&store)
                .arg("--rows-json")
                .arg(&file),
        )?;
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        return serde_json::from_str(&text).map_err(|e| format!("--rows-json: {e}"));
    };
    let out = crate::checked_output(
        "counting the store (fleet_rows.py)",
        Command::new(python).arg(o.workspace.join("tests/reference/fleet_rows.py")).arg(&store),
    )?;
    serde_json::from_slice(&out.stdout).map_err(|e| format!("the store's count: {e}"))
}

/// docs/fleet.sql's queries over the store, by DuckDB (with a Python that
/// has it): the answers in `answers.json`, and a line that sums them up.
fn sql_answers(o: &Options) -> Result<Option<String>, String> {
    let Some(python) = &o.python else { return Ok(None) };
    let started = Instant::now();
    let out = crate::checked_output(
        "fleet_sql.py docs/fleet.sql",
        Command::new(python)
            .arg(o.workspace.join("tests/reference/fleet_sql.py"))
            .arg(o.workspace.join("docs/fleet.sql"))
            .arg(o.dir.join("store")),
    )?;
    let took = started.elapsed().as_secs_f64();
    let file = o.dir.join("answers.json");
    std::fs::write(&file, &out.stdout).map_err(|e| format!("{}: {e}", file.display()))?;
    let answers: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("fleet_sql.py: {e}"))?;
    let rows = |name: &str| answers[name].as_array().cloned().unwrap_or_default();
    let per_device = rows("hints_per_device_and_dimension");
    let total = |k: &str| per_device.iter().filter_map(|r| r[k].as_u64()).sum::<u64>();
    let crossings = rows("above_to_told");
    let seconds: Vec<f64> = crossings.iter().filter_map(|r| r["seconds"].as_f64()).collect();
    let later: Vec<f64> = seconds.iter().copied().filter(|&s| s > 0.0).collect();
    let (low, high) = later.iter().fold((f64::MAX, 0.0f64), |(l, h), &s| (l.min(s), h.max(s)));
    Ok(Some(format!(
        "fleet: docs/fleet.sql by DuckDB in {took:.1} s ({}): {} hints (time {}, tasks {}, context length {}, tool error {}, watch {}); {} devices whose tool-error hint fired; {} devices above a watch's `above`, {} told at that step, {} later ({}), {} not told",
        file.display(),
        total("hints"),
        total("time"),
        total("tasks"),
        total("context_length"),
        total("tool_error"),
        total("watch"),
        rows("tool_error_devices").len(),
        crossings.len(),
        seconds.len() - later.len(),
        later.len(),
        if later.is_empty() { "-".to_string() } else { format!("{low:.0} to {high:.0} s") },
        crossings.len() - seconds.len()
    )))
}

/// Runs the fleet and checks the store; `Err` when something could not
/// run at all (a report with problems when it ran and the figures are off).
pub fn run(o: &Options) -> Result<Report, String> {
    if o.devices == 0 || o.steps == 0 {
        return Err("--devices and --steps must be at least 1".into());
    }
    let started = Instant::now();
    let _ = std::fs::remove_dir_all(&o.dir);
    std::fs::create_dir_all(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let options =
        BrokerOptions { persistence: o.faults, autosave_secs: 1, ..BrokerOptions::default() };
    let mut broker = Broker::start(&o.mosquitto, &o.dir.join("broker"), &options)?;
    let address = broker.address();
    say(started, &format!("mosquitto on {address} (persistence {})", o.faults));
    let mut consumer = Consumer::start(o, &address, 1, started)?;
    let mut consumers = 1;
    say(started, "the consumer is subscribed: the devices start");

    // The board, in a thread; its streamed steps counted as they come.
    let (live_tx, live_rx) = mpsc::channel::<String>();
    let board_live = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&board_live);
    std::thread::spawn(move || {
        for line in live_rx {
            if line.starts_with("{\"step\":") {
                counted.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let board_options = RunOptions {
        qemu: o.qemu.clone(),
        defmt_print: o.defmt_print.clone(),
        elf: o.elf.clone(),
        sensor: true,
        temperatures_milli: TEMPERATURES.to_vec(),
        timeout: Duration::from_secs(o.steps as u64 * 4 + 300),
        echo: false,
        epoch: Some(EPOCH),
        reset_after: o.faults.then_some((o.steps / 2).max(1)),
        environment_milli: Vec::new(),
        model_port: None,
        model_stream: false,
        broker_port: Some(broker.port()),
        device: Some(BOARD.into()),
        steps: Some(o.steps),
        live: Some(live_tx),
    };
    let board = std::thread::spawn(move || qemu::run(&board_options));
    let mut devices =
        if o.devices > 1 { Some(Devices::start(o, &address, started)?) } else { None };
    let sim_total = ((o.devices - 1) * o.steps) as f64;

    // Faults at a third and two thirds of the run, by the slower of the
    // board and the simulated devices.
    let progress = |devices: &Option<Devices>| {
        let board = board_live.load(Ordering::Relaxed) as f64 / o.steps as f64;
        match devices {
            Some(d) => board.min(d.logged.load(Ordering::Relaxed) as f64 / sim_total),
            None => board,
        }
    };
    let (mut restarted, mut killed) = (!o.faults, !o.faults);
    let mut killed_cpu_ms = 0.0;
    let mut last_say = Instant::now();
    while !board.is_finished() || devices.as_mut().is_some_and(Devices::running) {
        std::thread::sleep(Duration::from_millis(200));
        let p = progress(&devices);
        if !restarted && p >= 1.0 / 3.0 {
            let at = Instant::now();
            broker.restart()?;
            restarted = true;
            say(
                started,
                &format!("fault: the broker restarted (down {:.2} s)", at.elapsed().as_secs_f64()),
            );
        }
        if !killed && p >= 2.0 / 3.0 {
            killed_cpu_ms = consumer.cpu_ms().unwrap_or(0.0);
            consumer.kill();
            say(started, "fault: the consumer killed (SIGKILL); starting it again in 2 s");
            std::thread::sleep(Duration::from_secs(2));
            consumers += 1;
            consumer = Consumer::start(o, &address, consumers, started)?;
            killed = true;
        }
        if last_say.elapsed() >= Duration::from_secs(30) {
            last_say = Instant::now();
            let sims = devices.as_ref().map_or(String::new(), |d| {
                format!(
                    ", simulated devices {} of {} steps",
                    d.logged.load(Ordering::Relaxed),
                    sim_total
                )
            });
            say(
                started,
                &format!(
                    "board at step {} of {}{sims}",
                    board_live.load(Ordering::Relaxed),
                    o.steps
                ),
            );
        }
    }
    let run: RunResult = board.join().map_err(|_| "the board's thread panicked")??;
    let run_ended = Instant::now();
    std::fs::write(o.dir.join("board.log"), &run.log)
        .map_err(|e| format!("{}: {e}", o.dir.join("board.log").display()))?;
    if run.status != Some(0) {
        return Err(format!(
            "the board exited with {:?}; its log is {}",
            run.status,
            o.dir.join("board.log").display()
        ));
    }
    let uplink = uplink_line(&run.log).ok_or_else(|| {
        format!("no uplink line in the board's log ({})", o.dir.join("board.log").display())
    })?;
    let steps_on_board = board_steps(&run.log);
    let steps_since_boot = board_steps_since_boot(&run.log);
    for (step, restored) in board_resets(&run.log) {
        say(
            started,
            &format!("fault: the board reset after step {step} (its log restored {restored} events at the next boot)"),
        );
    }
    say(
        started,
        &format!(
            "the board is done: {steps_on_board} steps (environment steps included); its log's items up to {} of {} delivered, {} since its last boot, {} lost",
            uplink.up_to, uplink.of, uplink.delivered, uplink.lost
        ),
    );
    let sims = match devices.take() {
        Some(d) => {
            let (line, json) = d.finish()?;
            say(started, &line);
            Some(json)
        }
        None => None,
    };

    // The last item of each device: the consumer stops once it has them.
    let mut until = format!("{BOARD} {}\n", uplink.of.saturating_sub(1));
    let per_device =
        sims.as_ref().and_then(|s| s["per_device"].as_array().cloned()).unwrap_or_default();
    for d in &per_device {
        let items = d["items"].as_u64().unwrap_or(0);
        until.push_str(&format!(
            "{} {}\n",
            d["id"].as_str().unwrap_or("?"),
            items.saturating_sub(1)
        ));
    }
    let file = o.dir.join("until.txt");
    let partial = o.dir.join("until.txt.part");
    std::fs::write(&partial, until)
        .and_then(|()| std::fs::rename(&partial, &file))
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let (code, consumer_line, summary) = consumer.finish(Duration::from_secs(600))?;
    say(started, &format!("the consumer stopped ({code:?}): {consumer_line}"));
    broker.stop()?;

    // The store.
    let counted = count_store(o)?;
    let mut report = Report {
        devices: o.devices,
        steps: o.steps,
        reader: counted["reader"].as_str().unwrap_or("?").to_string(),
        ..Report::default()
    };
    if code != Some(0) {
        report.problems.push(format!("the consumer exited with {code:?}: {consumer_line}"));
    }
    report.rows = counted["rows"].as_u64().unwrap_or(0);
    report.duplicates = counted["duplicates"].as_u64().unwrap_or(0);
    report.lost = summary["lost"].as_u64().unwrap_or(0);
    let sim_lost = sims.as_ref().and_then(|s| s["lost"].as_u64()).unwrap_or(0);
    report.devices_lost = sim_lost + uplink.lost;
    let sim_delivered = sims.as_ref().and_then(|s| s["delivered"].as_u64()).unwrap_or(0);
    // The board's own count restarts at its reset: its log's mark says
    // which items reached the broker (those it did not drop).
    report.published = uplink.up_to.saturating_sub(uplink.lost) + sim_delivered;
    let sim_steps_lost = sims.as_ref().and_then(|s| s["steps_lost"].as_u64()).unwrap_or(0);
    report.expected_rows =
        steps_on_board as u64 + ((o.devices - 1) * o.steps) as u64 - sim_steps_lost;
    if uplink.lost > 0 {
        report.problems.push(format!(
            "the board lost {} items: its rows cannot be counted from its log",
            uplink.lost
        ));
    }
    if report.rows != report.expected_rows {
        report.problems.push(format!(
            "{} rows, not {} (the board's {steps_on_board} steps and the simulated devices' {} less {sim_steps_lost} lost)",
            report.rows,
            report.expected_rows,
            (o.devices - 1) * o.steps
        ));
    }
    if report.duplicates != 0 {
        report.problems.push(format!("{} rows stored twice", report.duplicates));
    }
    if report.lost != report.devices_lost {
        report.problems.push(format!(
            "the consumer counted {} items lost, the devices {}",
            report.lost, report.devices_lost
        ));
    }
    if summary["failed"].as_u64() != Some(0) {
        report.problems.push(format!("devices refused: {}", summary["failures"]));
    }

    // Each device's hints per dimension: the store's, the replay's of the
    // items kept, and the simulated device's own.
    let stored = counted["devices"].as_object().cloned().unwrap_or_default();
    let mut checked = 0;
    for (id, device) in &stored {
        let ours = dims(&device["hints"]);
        let gaps = summary["lost_per_device"].get(id).is_some();
        if !gaps {
            let log = o.dir.join("store/items").join(format!("{id}.log"));
            match replay_counts(&o.sim, &log) {
                Ok(replayed) if replayed == ours => checked += 1,
                Ok(replayed) => report.problems.push(format!(
                    "{id}: the store's hints per dimension {ours:?}, the replay's {replayed:?}"
                )),
                Err(e) => report.problems.push(e),
            }
        }
        if let Some(own) = per_device.iter().find(|d| d["id"] == id.as_str()) {
            if dims(&own["hints"]) != ours {
                report.problems.push(format!(
                    "{id}: the store's hints per dimension {ours:?}, the device's own {:?}",
                    dims(&own["hints"])
                ));
            }
        }
    }
    if stored.len() != o.devices {
        report.problems.push(format!(
            "the store holds {} devices, not {}",
            stored.len(),
            o.devices
        ));
    }

    // Publish (the simulated device's PUBACK) → row (its file written).
    let mut latencies = Vec::new();
    for d in &per_device {
        let Some(rows) = stored.get(d["id"].as_str().unwrap_or("")) else { continue };
        let written: std::collections::HashMap<u64, i64> = rows["written"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| Some((w[0].as_u64()?, w[1].as_i64()?)))
            .collect();
        for s in d["step_items"].as_array().into_iter().flatten() {
            let (Some(number), Some(acked)) = (s[0].as_u64(), s[2].as_i64()) else { continue };
            if let Some(at) = written.get(&number) {
                latencies.push((at - acked) as f64 / 1e3);
            }
        }
    }
    latencies.sort_by(f64::total_cmp);
    let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0} ms"));

    // Rates and costs.
    let kept: u64 = report.published;
    let first_publish =
        per_device.iter().filter_map(|d| d["step_items"].as_array()?.first()?[1].as_i64()).min();
    let last_row = stored
        .values()
        .flat_map(|d| d["written"].as_array().into_iter().flatten())
        .filter_map(|w| w[1].as_i64())
        .max();
    let span = match (first_publish, last_row) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e6,
        _ => run_ended.duration_since(started).as_secs_f64(),
    };
    let final_cpu = summary["cpu_ms"].as_f64().unwrap_or(0.0);
    let cpu_per_1000 = (killed_cpu_ms + final_cpu) / kept.max(1) as f64 * 1000.0;

    report.lines.push(format!(
        "fleet: the store counted by {}; hints per dimension equal to the replay of the items kept for {checked} of {} devices{}",
        report.reader,
        stored.len(),
        if per_device.is_empty() { String::new() } else { ", and to each simulated device's own".into() }
    ));
    report.lines.push(format!(
        "fleet: items/s ingested {:.0} over the run ({kept} items in {span:.1} s, first publish to last row); the last consumer's own rate {:.0} items/s",
        kept as f64 / span.max(1e-3),
        summary["items_per_second"].as_f64().unwrap_or(0.0)
    ));
    report.lines.push(format!(
        "fleet: end-to-end latency publish -> row p50 {}, p99 {} ({} rows of the simulated devices: their PUBACK to the row's file)",
        ms(quantile(&latencies, 0.5)),
        ms(quantile(&latencies, 0.99)),
        latencies.len()
    ));
    report.lines.push(format!(
        "fleet: the consumer's CPU per 1,000 items {:.1} ms ({:.0} ms in all over {consumers} run{}, {kept} items)",
        cpu_per_1000,
        killed_cpu_ms + final_cpu,
        if consumers == 1 { "" } else { "s" }
    ));
    report.lines.push(format!(
        "fleet: bytes on the wire per step for the QEMU board {:.0} ({} bytes sent for the {steps_since_boot} steps since its last boot, MQTT framing included)",
        uplink.sent as f64 / steps_since_boot.max(1) as f64,
        uplink.sent
    ));
    if let Some(line) = sql_answers(o)? {
        report.lines.push(line);
    }
    say(
        started,
        &format!(
            "done in {:.0} s; the run's files are in {}",
            started.elapsed().as_secs_f64(),
            o.dir.display()
        ),
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_s_uplink_line_is_read_and_its_steps_counted() {
        let log = "INFO uplink: device qemu-0, publishing the log over UART2\n=== step 0: a\n=== environment step before step 1: woken by temperature: 30 °C\n=== step 1: b\nINFO uplink: 41 items delivered (the log's items up to 41 of 41), 2 connections, 1 given up, 5321 bytes sent, 190 received, 0 lost\n";
        let u = uplink_line(log).unwrap();
        assert_eq!((u.delivered, u.up_to, u.of, u.sent, u.lost), (41, 41, 41, 5321, 0));
        assert_eq!(board_steps(log), 3);
        assert_eq!(board_steps_since_boot(log), 3);
        assert!(board_resets(log).is_empty());
        assert!(uplink_line("nothing").is_none());
        let reset = "INFO uplink: device qemu-0, publishing the log over UART2\n=== step 0: a\n=== step 1: b\nINFO resetting the MCU after step 1\nINFO uplink: device qemu-0, publishing the log over UART2\nINFO restored 12 events\n=== step 2: c\n";
        assert_eq!(board_steps(reset), 3);
        assert_eq!(board_steps_since_boot(reset), 1);
        assert_eq!(board_resets(reset), vec![(1, 12)]);
        let r = Report {
            devices: 3,
            steps: 20,
            published: 90,
            rows: 60,
            lost: 0,
            duplicates: 0,
            ..Report::default()
        };
        assert_eq!(
            r.last_line(),
            "fleet: devices 3, steps 20, items published 90, rows 60, lost 0, duplicates 0"
        );
    }
}
