//! `envaware-sim fleet`: the fleet consumer (issue 37). It subscribes to the
//! devices' session logs on an MQTT broker, keeps each device's items
//! (in order: a duplicate dropped, a gap refused), verifies them as
//! `replay` verifies a device's log (each step decided again and checked
//! against what the device logged), and writes one row per step to the
//! fleet store, Parquet files partitioned by device and day
//! ([`envaware_sim::fleet_store`]). docs/fleet.md is the reference.
//!
//! **Topic and payload.** `envaware/<device-id>/log`, QoS 1; a message is
//! the item's whole number (`u32`, little-endian) and the item's bytes as
//! `envaware::journal` wrote them. `envaware/<device-id>/lost`: the
//! numbers `from..to` (two `u32`, little-endian) the device's log dropped
//! before they were delivered, published before the item after them: the
//! consumer counts them lost and lets the device's items jump them.
//!
//! **Nothing lost, nothing twice.** Messages are taken in batches; a
//! batch's items are appended to their devices' item logs
//! (`STORE/items/<device>.log`) and synced before any of them is
//! acknowledged (acknowledgements are manual: `MqttOptions::set_manual_acks`),
//! so a message the broker forgets is on disk. Rows are written later, at
//! most `--flush-secs` after; a stopped consumer finds at start the last
//! step its store holds per device, replays the items it kept, and writes
//! the rows after it. The broker keeps the consumer's session (a fixed
//! client id, no clean session) while it is away, and sends again what was
//! not acknowledged: those items are dropped as duplicates.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rumqttc::{Client, Event, MqttOptions, Packet, Publish, QoS, RecvTimeoutError};

mod device;
pub mod devices;
pub mod view;

use device::{Arrival, Declared, Device, Received};

/// `envaware-sim fleet`'s arguments.
#[derive(clap::Args, Debug)]
pub struct FleetArgs {
    /// The broker, HOST:PORT. Without it, only --plot and --rows-json (from
    /// the store).
    #[arg(long, value_name = "HOST:PORT", required_unless_present_any = ["plot", "rows_json"])]
    broker: Option<String>,
    /// The fleet store's directory (created when absent).
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// Draw the fleet view from the store to this SVG file (with --broker,
    /// once the consumer stops).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Stop when no message has come for SECS seconds (fractions allowed).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = crate::seconds)]
    idle_exit: Duration,
    /// Stop once every device FILE names has its items up to the number
    /// given (a line `DEVICE NUMBER` each; lost ones count) or is refused.
    /// A FILE that does not exist yet is looked for every second: write it
    /// whole (a rename) once the devices are done.
    #[arg(long, value_name = "FILE")]
    until: Option<PathBuf>,
    /// The MQTT client id: the broker keeps this session (its subscription,
    /// the messages not yet acknowledged) while the consumer is away.
    #[arg(long, value_name = "ID", default_value = "envaware-fleet")]
    client_id: String,
    /// The topic filters, QoS 1 (repeat for more): the devices' items and
    /// their declared losses.
    #[arg(long = "topic", value_name = "FILTER", default_values = ["envaware/+/log", "envaware/+/lost"])]
    topics: Vec<String>,
    /// Write the pending rows at least every SECS seconds (fractions
    /// allowed): a file per device and day each time.
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = crate::seconds)]
    flush_secs: Duration,
    /// Most messages taken in one batch (kept, synced, replayed, then
    /// acknowledged together).
    #[arg(long, value_name = "N", default_value = "1000", value_parser = crate::in_range::<1, 100_000>)]
    batch: u64,
    /// `batch`: sync the item logs before acknowledging a batch; `never`:
    /// leave it to the OS (a power cut may then lose acknowledged items).
    #[arg(long, value_name = "POLICY", default_value = "batch", value_parser = ["batch", "never"])]
    sync: String,
    /// Also write the summary as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,
    /// Write what the store holds to FILE as JSON (once the consumer
    /// stops; without --broker, from the store alone), read with the
    /// store's own reader: per device its rows, the rows stored twice, its
    /// hints per dimension, and each row's number and `written_at`.
    #[arg(long, value_name = "FILE")]
    rows_json: Option<PathBuf>,
}

/// What a device publishes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    /// `envaware/<id>/log`: its items.
    Log,
    /// `envaware/<id>/lost`: the numbers its log dropped undelivered.
    Lost,
}

/// The device id (`[a-z0-9-]{1,32}`) and the leaf of a device's topic.
fn topic_of(topic: &str) -> Option<(&str, Leaf)> {
    let rest = topic.strip_prefix("envaware/")?;
    let (id, leaf) = rest.split_once('/')?;
    let leaf = match leaf {
        "log" => Leaf::Log,
        "lost" => Leaf::Lost,
        _ => return None,
    };
    valid_id(id).then_some((id, leaf))
}

/// A device id: `[a-z0-9-]{1,32}`.
fn valid_id(id: &str) -> bool {
    (1..=32).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// What a run did, for the summary.
#[derive(Debug, Default)]
struct Stats {
    received: u64,
    kept: u64,
    duplicates: u64,
    refused: u64,
    rows: u64,
    files: u64,
    /// Numbers this run was told were lost, that it had not kept.
    declared_lost: u64,
    /// Receive → row written, in milliseconds, for the rows of items this
    /// run received.
    latencies: Vec<f64>,
    first_message: Option<Instant>,
    last_kept: Option<Instant>,
    /// Items read back from the item logs at start.
    reopened: u64,
}

/// The consumer's CPU time so far (user + system), from getrusage.
fn cpu_time() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF).map_or(Duration::ZERO, |u| {
        let t = |tv: nix::sys::time::TimeVal| {
            Duration::from_secs(tv.tv_sec() as u64) + Duration::from_micros(tv.tv_usec() as u64)
        };
        t(u.user_time()) + t(u.system_time())
    })
}

/// The `q` quantile (nearest rank) of sorted values.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    sorted.get(((q * sorted.len() as f64).ceil() as usize).saturating_sub(1).min(last)).copied()
}

/// The consumer's state: the devices, the store, the counts.
struct Fleet {
    store: PathBuf,
    devices: BTreeMap<String, Device>,
    stats: Stats,
    sync: bool,
    /// Devices whose refusal was reported.
    reported: BTreeSet<String>,
}

impl Fleet {
    /// Opens every device the store has items of: what a stopped run left.
    fn open(store: &Path, sync: bool) -> Result<Fleet, String> {
        let mut fleet = Fleet {
            store: store.to_path_buf(),
            devices: BTreeMap::new(),
            stats: Stats::default(),
            sync,
            reported: BTreeSet::new(),
        };
        let items = store.join("items");
        let mut ids = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&items) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(id) = name.strip_suffix(".log").filter(|id| valid_id(id)) {
                    ids.push(id.to_string());
                }
            }
        }
        ids.sort();
        for id in ids {
            fleet.device(&id)?;
        }
        Ok(fleet)
    }

    /// The device `id`, opened (its items replayed) the first time.
    fn device(&mut self, id: &str) -> Result<&mut Device, String> {
        if !self.devices.contains_key(id) {
            let (device, reopened) = Device::open(&self.store, id)?;
            if reopened.items > 0 || reopened.torn > 0 || reopened.removed > 0 {
                eprintln!(
                    "fleet: device {id}: {} items read back{}, the store holds its steps up to {}{}; {} rows to write",
                    reopened.items,
                    match reopened.torn {
                        0 => String::new(),
                        n => format!(" (a torn tail of {n} bytes cut)"),
                    },
                    reopened.committed.map_or("none".into(), |n| format!("item {n}")),
                    match reopened.removed {
                        0 => String::new(),
                        n => format!(" ({n} unfinished files removed)"),
                    },
                    device.pending()
                );
            }
            self.stats.reopened += reopened.items as u64;
            self.devices.insert(id.to_string(), device);
        }
        self.devices.get_mut(id).ok_or_else(|| format!("device {id}"))
    }

    /// Takes one batch of messages: each item kept or dropped, the item
    /// logs synced, the kept items replayed.
    fn take(&mut self, batch: &[(Publish, Arrival)]) -> Result<(), String> {
        let mut touched = BTreeSet::new();
        for (publish, arrival) in batch {
            self.stats.received += 1;
            self.stats.first_message.get_or_insert(arrival.at);
            let Some((id, leaf)) = topic_of(&publish.topic) else {
                eprintln!("fleet: a message on {:?}: not envaware/<device-id>/log or /lost (ids are [a-z0-9-]{{1,32}}): dropped", publish.topic);
                self.stats.refused += 1;
                continue;
            };
            let payload = &publish.payload;
            if leaf == Leaf::Lost {
                let (Some(from), Some(to), 8) =
                    (payload.first_chunk::<4>(), payload.last_chunk::<4>(), payload.len())
                else {
                    eprintln!(
                        "fleet: device {id}: a loss of {} bytes, not two item numbers: dropped",
                        payload.len()
                    );
                    self.stats.refused += 1;
                    continue;
                };
                let (from, to) = (u32::from_le_bytes(*from), u32::from_le_bytes(*to));
                match self.device(id)?.declare_lost(from, to)? {
                    Declared::Lost(n) => {
                        eprintln!(
                            "fleet: device {id}: items {} to {} declared lost ({from}..{to} declared): its log resumes after them",
                            to.wrapping_sub(n),
                            to.wrapping_sub(1)
                        );
                        self.stats.declared_lost += u64::from(n);
                        // Its items after the gap may be waiting to be replayed.
                        touched.insert(id.to_string());
                    }
                    Declared::Known => self.stats.duplicates += 1,
                    Declared::Refused => self.stats.refused += 1,
                }
                continue;
            }
            let Some((number, item)) = payload.split_first_chunk::<4>() else {
                eprintln!("fleet: device {id}: a message of {} bytes, not an item's number and bytes: dropped", payload.len());
                self.stats.refused += 1;
                continue;
            };
            let number = u32::from_le_bytes(*number);
            match self.device(id)?.receive(number, item, *arrival)? {
                Received::Kept => {
                    self.stats.kept += 1;
                    touched.insert(id.to_string());
                }
                Received::Duplicate => self.stats.duplicates += 1,
                Received::Refused => self.stats.refused += 1,
            }
        }
        for id in &touched {
            if let Some(device) = self.devices.get_mut(id) {
                device.commit(self.sync)?;
            }
        }
        if !touched.is_empty() {
            self.stats.last_kept = Some(Instant::now());
        }
        self.report_failures();
        Ok(())
    }

    /// Says once, on standard error, why each refused device is refused.
    fn report_failures(&mut self) {
        for (id, device) in &self.devices {
            if let Some(failure) = device.failed() {
                if self.reported.insert(id.clone()) {
                    eprintln!("fleet: device {id}: refused from here on: {failure}");
                }
            }
        }
    }

    /// Writes every device's pending rows.
    fn flush(&mut self) -> Result<(), String> {
        for device in self.devices.values_mut() {
            let (files, arrivals) = device.flush(&self.store)?;
            let written = Instant::now();
            self.stats.rows += arrivals.len() as u64;
            self.stats.files += files as u64;
            self.stats.latencies.extend(
                arrivals.into_iter().flatten().map(|at| (written - at).as_secs_f64() * 1e3),
            );
        }
        Ok(())
    }

    /// Whether every device `until` names has its items up to its number,
    /// or is refused.
    fn reached(&self, until: &[(String, u32)]) -> bool {
        until.iter().all(|(id, last)| {
            self.devices.get(id).is_some_and(|d| {
                d.failed().is_some() || d.last().is_some_and(|l| l.wrapping_sub(*last) as i32 >= 0)
            })
        })
    }
}

/// Reads `--until`: a line `DEVICE NUMBER` each (blank lines and `#`
/// comments allowed).
fn read_until(path: &Path) -> Result<Vec<(String, u32)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut until = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad =
            || format!("{} line {}: expected `DEVICE NUMBER`, got {line:?}", path.display(), i + 1);
        let (id, number) = line.split_once(char::is_whitespace).ok_or_else(bad)?;
        if !valid_id(id) {
            return Err(bad());
        }
        until.push((id.to_string(), number.trim().parse().map_err(|_| bad())?));
    }
    Ok(until)
}

/// Runs `envaware-sim fleet`: exit 0 when every device's log verified, 1
/// when a device was refused (a gap, a changed item, a step the replay
/// decides otherwise), 2 on an I/O error, a bad argument, or a broker never
/// reached.
pub fn main(args: FleetArgs) -> ExitCode {
    let fail = |what: String| {
        eprintln!("envaware-sim fleet: {what}");
        ExitCode::from(2)
    };
    let cpu_start = cpu_time();
    let started = Instant::now();
    // A file not written yet is read once it is.
    let until = match args.until.as_deref().filter(|p| p.exists()).map(read_until).transpose() {
        Ok(u) => u,
        Err(e) => return fail(e),
    };
    if let Err(e) = std::fs::create_dir_all(&args.store) {
        return fail(format!("{}: {e}", args.store.display()));
    }
    let mut code = ExitCode::SUCCESS;
    if let Some(broker) = &args.broker {
        let mut fleet = match Fleet::open(&args.store, args.sync == "batch") {
            Ok(f) => f,
            Err(e) => return fail(e),
        };
        let ended = consume(&mut fleet, broker, &args, until);
        let connected = match ended.and_then(|connected| fleet.flush().map(|()| connected)) {
            Ok(connected) => connected,
            Err(e) => return fail(e),
        };
        let summary = summary(&fleet, started.elapsed(), cpu_time() - cpu_start);
        println!("{}", summary.line);
        if let Some(path) = &args.summary_json {
            if let Err(e) = std::fs::write(path, format!("{}\n", summary.json)) {
                return fail(format!("{}: {e}", path.display()));
            }
        }
        for (id, device) in &fleet.devices {
            if device.held() > 0 {
                eprintln!(
                    "fleet: device {id}: {} items held, waiting for a header that carries the configuration",
                    device.held()
                );
            }
        }
        if !connected {
            return fail(format!("never reached the broker at {broker}"));
        }
        if fleet.devices.values().any(|d| d.failed().is_some()) {
            code = ExitCode::FAILURE;
        }
    }
    if let Some(path) = &args.rows_json {
        let written = rows_json(&args.store).and_then(|json| {
            std::fs::write(path, format!("{json}\n"))
                .map_err(|e| format!("{}: {e}", path.display()))
        });
        if let Err(e) = written {
            return fail(e);
        }
    }
    if let Some(path) = &args.plot {
        let title = format!("envaware fleet: {}", args.store.display());
        let drawn = view::render_store(&args.store, &title).and_then(|(svg, drawn)| {
            std::fs::write(path, svg).map(|()| drawn).map_err(|e| e.to_string())
        });
        match drawn {
            Ok(d) => eprintln!(
                "wrote the fleet view to {}: {} devices, {} hints, {} marks",
                path.display(),
                d.devices,
                d.hints,
                d.marks
            ),
            Err(e) => return fail(format!("cannot draw {}: {e}", path.display())),
        }
    }
    code
}

/// What the store holds, read with its own reader: per device its rows,
/// the rows stored twice (a number more than once), its hints per
/// dimension, and each row's number and `written_at` (µs).
fn rows_json(store: &Path) -> Result<serde_json::Value, String> {
    use envaware_sim::fleet_store;
    let (mut rows, mut twice) = (0usize, 0usize);
    let mut devices = serde_json::Map::new();
    for id in fleet_store::devices(store).map_err(|e| e.to_string())? {
        let stored = fleet_store::read_device(store, &id).map_err(|e| e.to_string())?;
        let distinct: BTreeSet<u32> = stored.iter().map(|r| r.number).collect();
        let hinted = |f: fn(&fleet_store::StepRow) -> bool| {
            stored.iter().filter(|r| r.hint.is_some() && f(r)).count()
        };
        rows += stored.len();
        twice += stored.len() - distinct.len();
        devices.insert(
            id,
            serde_json::json!({
                "rows": stored.len(),
                "duplicates": stored.len() - distinct.len(),
                "hints": {
                    "all": hinted(|_| true),
                    "time": hinted(|r| r.time),
                    "tasks": hinted(|r| r.tasks),
                    "context_length": hinted(|r| r.context_length),
                    "tool_error": hinted(|r| r.tool_error),
                    "watch": hinted(|r| r.watch),
                },
                "written": stored.iter().map(|r| (r.number, r.written_at)).collect::<Vec<_>>(),
            }),
        );
    }
    Ok(serde_json::json!({
        "reader": "envaware-sim (the fleet store's own Parquet reader)",
        "rows": rows,
        "duplicates": twice,
        "devices": devices,
    }))
}

/// The broker's `HOST:PORT`.
fn host_port(broker: &str) -> Result<(String, u16), String> {
    let (host, port) = broker
        .rsplit_once(':')
        .ok_or_else(|| format!("--broker {broker:?}: expected HOST:PORT"))?;
    let port = port.parse().map_err(|_| format!("--broker {broker:?}: not a port: {port:?}"))?;
    Ok((host.to_string(), port))
}

/// Consumes until `--idle-exit` or `--until`: whether it ever reached the
/// broker.
fn consume(
    fleet: &mut Fleet,
    broker: &str,
    args: &FleetArgs,
    mut until: Option<Vec<(String, u32)>>,
) -> Result<bool, String> {
    // The rows the items read back at start are owed first.
    fleet.report_failures();
    fleet.flush()?;
    let (host, port) = host_port(broker)?;
    let mut options = MqttOptions::new(&args.client_id, host, port);
    options
        .set_keep_alive(Duration::from_secs(30))
        .set_clean_session(false)
        .set_manual_acks(true)
        // An item is at most a few KiB; a header with long settings more.
        .set_max_packet_size(1 << 20, 1 << 20);
    let (client, mut connection) = Client::new(options, 1 << 16);
    let mut to_ack: VecDeque<Publish> = VecDeque::new();
    let mut connected = false;
    let mut subscribed = 0;
    let mut outage: Option<Instant> = None;
    let mut last_message = Instant::now();
    let mut last_flush = Instant::now();
    let mut last_look = Instant::now();
    let max_batch = args.batch as usize;
    loop {
        let mut batch: Vec<(Publish, Arrival)> = Vec::new();
        let mut wait = Duration::from_millis(100);
        while batch.len() < max_batch {
            while let Some(publish) = to_ack.front() {
                if client.try_ack(publish).is_err() {
                    break;
                }
                to_ack.pop_front();
            }
            match connection.recv_timeout(wait) {
                Ok(Ok(Event::Incoming(Packet::Publish(publish)))) => {
                    batch.push((publish, Arrival::now()));
                    // The rest of a burst, without waiting long for it.
                    wait = Duration::from_millis(2);
                }
                Ok(Ok(Event::Incoming(Packet::ConnAck(ack)))) => {
                    connected = true;
                    subscribed = 0;
                    if let Some(since) = outage.take() {
                        eprintln!(
                            "fleet: the broker is back after {:.1} s (session kept: {})",
                            since.elapsed().as_secs_f64(),
                            ack.session_present
                        );
                    }
                    // A new session (the first run, or a broker that lost
                    // its state) has no subscription yet; a kept one may
                    // lack a filter (opened by an older consumer): the
                    // same filter again replaces it, and what the broker
                    // queued for it stays queued.
                    for topic in &args.topics {
                        client
                            .try_subscribe(topic.as_str(), QoS::AtLeastOnce)
                            .map_err(|e| format!("subscribe {topic}: {e}"))?;
                    }
                }
                Ok(Ok(Event::Incoming(Packet::SubAck(ack)))) => {
                    if ack
                        .return_codes
                        .iter()
                        .any(|c| matches!(c, rumqttc::SubscribeReasonCode::Failure))
                    {
                        return Err(format!(
                            "the broker refused the subscription to {:?}",
                            args.topics
                        ));
                    }
                    subscribed += 1;
                    if subscribed == args.topics.len() {
                        // What a caller waits for before devices publish.
                        eprintln!(
                            "fleet: subscribed to {} on {broker} as {}",
                            args.topics.join(", "),
                            args.client_id
                        );
                    }
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    if outage.is_none() {
                        eprintln!("fleet: the broker at {broker}: {e}; trying again");
                        outage = Some(Instant::now());
                    }
                    // Rows are still written, and the stop still comes,
                    // while the broker is away.
                    std::thread::sleep(Duration::from_millis(250));
                    break;
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return Err("the MQTT client stopped".into()),
            }
        }
        if !batch.is_empty() {
            last_message = Instant::now();
            fleet.take(&batch)?;
            // Kept and synced: now the broker may forget them.
            to_ack.extend(batch.into_iter().map(|(publish, _)| publish));
        }
        let full = fleet.devices.values().any(|d| d.pending() >= 10_000);
        if full || last_flush.elapsed() >= args.flush_secs {
            fleet.flush()?;
            last_flush = Instant::now();
        }
        if until.is_none() && last_look.elapsed() >= Duration::from_secs(1) {
            last_look = Instant::now();
            until = args.until.as_deref().filter(|p| p.exists()).map(read_until).transpose()?;
        }
        let done = until.as_deref().is_some_and(|u| fleet.reached(u));
        if done || last_message.elapsed() >= args.idle_exit {
            break;
        }
    }
    // The acknowledgements owed, then a clean goodbye (bounded).
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && connected && outage.is_none() {
        match to_ack.front() {
            Some(publish) if client.try_ack(publish).is_ok() => {
                to_ack.pop_front();
            }
            _ => {}
        }
        match connection.recv_timeout(Duration::from_millis(20)) {
            Ok(Ok(_)) | Err(RecvTimeoutError::Timeout) if !to_ack.is_empty() => {}
            _ => break,
        }
    }
    let _ = client.try_disconnect();
    let _ = connection.recv_timeout(Duration::from_millis(200));
    Ok(connected)
}

/// The summary line and its JSON.
struct Summary {
    line: String,
    json: serde_json::Value,
}

fn summary(fleet: &Fleet, elapsed: Duration, cpu: Duration) -> Summary {
    let s = &fleet.stats;
    let mut latencies = s.latencies.clone();
    latencies.sort_by(f64::total_cmp);
    let (p50, p99) = (quantile(&latencies, 0.50), quantile(&latencies, 0.99));
    let busy = match (s.first_message, s.last_kept) {
        (Some(first), Some(last)) => (last - first).as_secs_f64(),
        _ => 0.0,
    };
    let rate = if busy > 0.0 { s.kept as f64 / busy } else { 0.0 };
    let cpu_ms = cpu.as_secs_f64() * 1e3;
    let per_1000 = if s.received > 0 { cpu_ms / s.received as f64 * 1000.0 } else { 0.0 };
    let failed = fleet.devices.values().filter(|d| d.failed().is_some()).count();
    let lost: u64 = fleet.devices.values().map(|d| u64::from(d.lost())).sum();
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let line = format!(
        "fleet: devices {}, received {}, kept {}, duplicates {}, refused {}, lost {}, rows {}, failed {}, items/s {:.0}, receive-to-row p50 {} ms p99 {} ms, cpu per 1000 items {:.1} ms",
        fleet.devices.len(),
        s.received,
        s.kept,
        s.duplicates,
        s.refused,
        lost,
        s.rows,
        failed,
        rate,
        ms(p50),
        ms(p99),
        per_1000
    );
    let failures: serde_json::Map<String, serde_json::Value> = fleet
        .devices
        .iter()
        .filter_map(|(id, d)| Some((id.clone(), d.failed()?.to_string().into())))
        .collect();
    let json = serde_json::json!({
        "devices": fleet.devices.len(),
        "received": s.received,
        "kept": s.kept,
        "duplicates": s.duplicates,
        "refused": s.refused,
        "lost": lost,
        "lost_this_run": s.declared_lost,
        "lost_per_device": fleet.devices.iter().filter(|(_, d)| d.lost() > 0).map(|(id, d)| {
            let gaps: Vec<(u32, u32)> = d.gaps().iter().map(|g| (g.from, g.to)).collect();
            (id.clone(), serde_json::json!({"lost": d.lost(), "gaps": gaps, "replays_resumed": d.resumed()}))
        }).collect::<serde_json::Map<_, _>>(),
        "rows": s.rows,
        "files": s.files,
        "failed": failed,
        "failures": failures,
        "read_back": s.reopened,
        "items_per_second": rate,
        "busy_seconds": busy,
        "receive_to_row_ms": {"p50": p50, "p99": p99, "rows": latencies.len()},
        "cpu_ms": cpu_ms,
        "cpu_ms_per_1000_items": per_1000,
        "elapsed_seconds": elapsed.as_secs_f64(),
        "last": fleet.devices.iter().filter_map(|(id, d)| Some((id.clone(), d.last()?))).collect::<BTreeMap<_, _>>(),
        "steps": fleet.devices.iter().map(|(id, d)| (id.clone(), d.steps())).collect::<BTreeMap<_, _>>(),
    });
    Summary { line, json }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_id_is_the_topic_s_middle_level_of_the_allowed_characters() {
        assert_eq!(topic_of("envaware/sim-0001/log"), Some(("sim-0001", Leaf::Log)));
        assert_eq!(topic_of("envaware/sprout-qemu/log"), Some(("sprout-qemu", Leaf::Log)));
        for bad in [
            "envaware//log",
            "envaware/Sim/log",
            "envaware/a/b/log",
            "other/a/log",
            "envaware/a_b/log",
        ] {
            assert_eq!(topic_of(bad), None, "{bad}");
        }
        assert_eq!(topic_of(&format!("envaware/{}/log", "a".repeat(33))), None);
        assert!(valid_id(&"a".repeat(32)) && !valid_id(""));
        assert_eq!(topic_of("envaware/sim-0001/lost"), Some(("sim-0001", Leaf::Lost)));
        assert_eq!(topic_of("envaware/sim-0001/other"), None);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&[7.0], 0.99), Some(7.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
