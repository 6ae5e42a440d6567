//! `envaware-sim fleet` against a real Mosquitto (issue 37): devices'
//! session logs (made with the core's `journal::Session`, as a device
//! makes them) published over MQTT with QoS 1 by a plain rumqttc client, the
//! consumer run as a child process, and its store read back.
//!
//! - A fleet's logs, each item published once and some twice: every step
//!   is one row, each row what the device decided and appended, and each
//!   device's counts per dimension those of `envaware-sim replay` over the
//!   items the consumer kept.
//! - The consumer killed in mid-stream and started again while devices
//!   re-publish: no row lost, none twice; a log whose step was tampered
//!   with, and one with an item missing, are refused, naming the device
//!   and the item, with no row after it.
//! - The three queries of docs/fleet.sql, run by DuckDB (the test venv's
//!   Python package) over the store, answer what the generated sessions
//!   and the replay count.
//! - The fleet view (`--plot`) opens in headless Chromium: a title per
//!   hint, a mark per dimension told, each in its colour on the screenshot.
//! - Simulated devices (`envaware-sim devices`: the same sessions through
//!   a session log that is their outbox, published by `envaware-uplink`):
//!   each row the step the session took; devices whose link is down while
//!   their region fills declare the items they dropped, and the consumer
//!   counts them lost and resumes after the gap.
//!
//! Mosquitto is `ENVAWARE_MOSQUITTO`, else `mosquitto` on the path or in
//! /usr/sbin; `cargo xtask test` installs it. Without it (or without
//! DuckDB in the venv, or Chromium) a test skips, except under `cargo xtask
//! test` and `CI=true`, where it fails (`xtask::needs`).
#![cfg(feature = "fleet")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use envaware::journal::{ItemStore, Session};
use envaware::{ConfigBuf, Engine, TimeDecision, Timestamp};
use envaware_host::block_on;
use envaware_sim::fleet_store::{self, StepRow};
use envaware_sim::greenhouse::{Greenhouse, TurnEvent, ABOVE, CONFIG, SEED};
use rumqttc::{Client, Event as MqttEvent, MqttOptions, Outgoing, Packet, QoS};
use serde_json::Value;

#[path = "common/pixels.rs"]
mod pixels;
use pixels::count_colour;

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fleet-{}", std::process::id()));
    let path = dir.join(name);
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).expect("temp dir");
    path
}

/// Mosquitto, or `None` when the check skips without it.
fn mosquitto() -> Option<PathBuf> {
    xtask::needs::or_skip(xtask::mqtt::find())
}

/// A broker started in `dir/broker`.
fn start_broker(
    mosquitto: &Path,
    dir: &Path,
    options: &xtask::mqtt::Options,
) -> xtask::mqtt::Broker {
    xtask::mqtt::Broker::start(mosquitto, &dir.join("broker"), options).expect("mosquitto starts")
}

/// One step as the device took it.
#[derive(Debug, Clone)]
struct Step {
    /// The step item's number.
    number: u32,
    at: Timestamp,
    hint: Option<String>,
    /// time, tasks, context length, tool error, watch.
    dims: [bool; 5],
    temperature: f64,
}

/// One device's session: its log's items (item `i` is number `i`), and
/// its steps.
#[derive(Debug, Clone)]
struct Device {
    id: String,
    items: Vec<Vec<u8>>,
    steps: Vec<Step>,
}

/// The items in memory, as a device's outbox holds them.
struct Items(Vec<Vec<u8>>);
impl ItemStore for Items {
    type Error = core::convert::Infallible;
    async fn append(&mut self, item: &[u8]) -> Result<(), Self::Error> {
        self.0.push(item.to_vec());
        Ok(())
    }
}

/// Device `index`'s session of `steps` steps, as the library's
/// generator makes it ([`Greenhouse`]): replies of a few steps, tool calls
/// (four failures in a row of the same call on every third device), tasks,
/// tokens that sometimes cross the reminder, and a temperature that climbs
/// past 28 °C on every other device.
fn device(index: u32, steps: usize) -> Device {
    let mut config = ConfigBuf::<4096, 8, 8>::with_capacity();
    let loaded = config.load_session(CONFIG).expect("the configuration");
    let engine = Engine::new(loaded.config).expect("a valid configuration");
    let mut session: Session<'_, 16, 64, 4096> = Session::new(&engine, loaded.agent_name);
    let mut log = Items(Vec::new());
    let (mut buf, mut hint) = ([0u8; 4096], [0u8; 2048]);
    block_on(session.start(&mut buf, &mut log)).expect("the header");
    let mut greenhouse = Greenhouse::new(index, SEED);
    let mut out = Vec::new();
    for _ in 0..steps {
        let turn = greenhouse.next_turn();
        for event in turn.events.iter().flat_map(TurnEvent::events) {
            block_on(session.record(&event, &mut buf, &mut log)).unwrap();
        }
        let mut live = turn.readings();
        let before = log.0.len();
        let outcome = block_on(session.step(
            &turn.input,
            Some(turn.at),
            &mut live,
            &mut hint,
            &mut buf,
            &mut log,
        ))
        .expect("a step");
        let number = (before..log.0.len()).find(|&i| log.0[i][0] == 9).expect("a step item") as u32;
        let d = &outcome.decision;
        out.push(Step {
            number,
            at: turn.at,
            hint: outcome.hint.map(str::to_string),
            dims: [
                matches!(d.time, TimeDecision::Inject(_)),
                d.tasks.is_some(),
                d.context.is_some(),
                d.tool_error.is_some(),
                d.watch.contains(0),
            ],
            temperature: turn.temperature,
        });
    }
    Device { id: format!("sim-{index:04}"), items: log.0, steps: out }
}

/// A message: the topic and the payload (number, then the item).
fn message(device: &str, number: u32, item: &[u8]) -> (String, Vec<u8>) {
    let mut payload = number.to_le_bytes().to_vec();
    payload.extend_from_slice(item);
    (format!("envaware/{device}/log"), payload)
}

/// Publishes `messages` in order with QoS 1 and waits (60 s, and a second
/// per 1,000 messages, at most) until the broker acknowledged each; when
/// each was handed to the client (µs since the epoch).
fn publish(port: u16, client_id: &str, messages: &[(String, Vec<u8>)]) -> Vec<i64> {
    publish_at(port, client_id, messages, None)
}

/// [`publish`], `per_second` messages a second when given.
fn publish_at(
    port: u16,
    client_id: &str,
    messages: &[(String, Vec<u8>)],
    per_second: Option<u32>,
) -> Vec<i64> {
    let mut options = MqttOptions::new(client_id, "127.0.0.1", port);
    options.set_keep_alive(Duration::from_secs(30)).set_max_packet_size(1 << 20, 1 << 20);
    let (client, mut connection) = Client::new(options, 1024);
    let expected = messages.len();
    let driver = std::thread::spawn(move || {
        let mut acked = 0;
        let started = Instant::now();
        let limit = Duration::from_secs(60 + expected as u64 / 1000);
        while acked < expected && started.elapsed() < limit {
            match connection.recv_timeout(Duration::from_millis(200)) {
                Ok(Ok(MqttEvent::Incoming(Packet::PubAck(_)))) => acked += 1,
                Ok(Err(e)) => panic!("the publisher's connection: {e}"),
                _ => {}
            }
        }
        let _ = connection.recv_timeout(Duration::from_millis(10));
        (acked, connection)
    });
    let mut sent = Vec::with_capacity(messages.len());
    let start = Instant::now();
    for (i, (topic, payload)) in messages.iter().enumerate() {
        if let Some(rate) = per_second {
            let due = start + Duration::from_secs_f64(i as f64 / f64::from(rate.max(1)));
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        sent.push(device_now());
        client.publish(topic.as_str(), QoS::AtLeastOnce, false, payload.clone()).expect("publish");
    }
    let (acked, mut connection) = driver.join().expect("the publisher's thread");
    assert_eq!(acked, expected, "the broker acknowledged every message");
    client.disconnect().expect("disconnect");
    for _ in 0..10 {
        if let Ok(Ok(MqttEvent::Outgoing(Outgoing::Disconnect))) =
            connection.recv_timeout(Duration::from_millis(100))
        {
            break;
        }
    }
    sent
}

/// Makes the consumer's session on the broker before anything is
/// published (a fixed client id, no clean session, subscribed with QoS 1):
/// the broker queues the messages for it until it connects.
fn open_session(port: u16, client_id: &str) {
    let mut options = MqttOptions::new(client_id, "127.0.0.1", port);
    options.set_clean_session(false);
    let (client, mut connection) = Client::new(options, 16);
    // The items, and the losses devices declare.
    for filter in ["envaware/+/log", "envaware/+/lost"] {
        client.subscribe(filter, QoS::AtLeastOnce).expect("subscribe");
    }
    let started = Instant::now();
    let mut acks = 0;
    loop {
        match connection.recv_timeout(Duration::from_millis(200)) {
            Ok(Ok(MqttEvent::Incoming(Packet::SubAck(_)))) if acks == 1 => break,
            Ok(Ok(MqttEvent::Incoming(Packet::SubAck(_)))) => acks += 1,
            Ok(Err(e)) => panic!("the consumer's session: {e}"),
            _ => assert!(started.elapsed() < Duration::from_secs(10), "no SUBACK"),
        }
    }
    client.disconnect().expect("disconnect");
    let _ = connection.recv_timeout(Duration::from_millis(200));
}

/// A consumer run as a child process, killed if still running when dropped.
struct Consumer(Child);

impl Consumer {
    fn start(port: u16, store: &Path, client_id: &str, extra: &[&str]) -> Consumer {
        let child = Command::new(SIM)
            .args(["fleet", "--broker", &format!("127.0.0.1:{port}"), "--store"])
            .arg(store)
            .args(["--client-id", client_id])
            // Rows soon after their items, unless the test says otherwise.
            .args(if extra.contains(&"--flush-secs") {
                &[][..]
            } else {
                &["--flush-secs", "0.2"][..]
            })
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start envaware-sim fleet");
        Consumer(child)
    }

    /// Its exit status, standard output and error; killed after `limit`.
    fn finish(mut self, limit: Duration) -> (Option<i32>, String, String) {
        let started = Instant::now();
        while self.0.try_wait().expect("wait").is_none() {
            assert!(started.elapsed() < limit, "the consumer did not stop within {limit:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut out = String::new();
        let mut err = String::new();
        use std::io::Read as _;
        self.0.stdout.take().expect("stdout").read_to_string(&mut out).unwrap();
        self.0.stderr.take().expect("stderr").read_to_string(&mut err).unwrap();
        (self.0.wait().expect("status").code(), out, err)
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        // Only the child this test started.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `--until`'s file: each device's last item.
fn until(dir: &Path, devices: &[&Device]) -> PathBuf {
    let path = dir.join("until.txt");
    let text: String =
        devices.iter().map(|d| format!("{} {}\n", d.id, d.items.len() - 1)).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// The messages of `devices`, their items interleaved one by one.
fn interleaved(
    devices: &[&Device],
    range: impl Fn(&Device) -> std::ops::Range<usize>,
) -> Vec<(String, Vec<u8>)> {
    let ranges: Vec<std::ops::Range<usize>> = devices.iter().map(|d| range(d)).collect();
    let longest = ranges.iter().map(|r| r.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    for k in 0..longest {
        for (d, r) in devices.iter().zip(&ranges) {
            let i = r.start + k;
            if i < r.end {
                out.push(message(&d.id, i as u32, &d.items[i]));
            }
        }
    }
    out
}

/// What a row must hold: the step the device took.
fn assert_row_is_the_step(device: &str, row: &StepRow, step: &Step) {
    assert_eq!(row.number, step.number, "{device}");
    assert_eq!(row.instant, Some(step.at.unix_micros()), "{device} item {}", row.number);
    assert_eq!(row.hint, step.hint, "{device} item {}", row.number);
    let why = row.watches.iter().any(|w| w == "temperature:value" || w == "temperature:heartbeat");
    assert_eq!(why, row.watch, "{device} item {}: {:?}", row.number, row.watches);
    assert_eq!(
        [row.time, row.tasks, row.context_length, row.tool_error, row.watch],
        step.dims,
        "{device} item {}",
        row.number
    );
    assert!(row.checked, "{device} item {}: decided again", row.number);
    let read = row.readings.iter().find(|r| r.kind == "read").expect("the watched reading");
    assert_eq!(read.text.as_deref(), Some(format!("{:.2} °C", step.temperature).as_str()));
    assert_eq!((read.above, read.below), (Some(ABOVE), None));
    let told = row.readings.iter().any(|r| r.kind == "told" && r.field == "temperature");
    assert_eq!(told, step.hint.is_some(), "{device} item {}", row.number);
}

/// The run the read-only checks share: a fleet published once (every
/// item, a tenth of them twice), consumed until each device's last item.
struct Run {
    dir: PathBuf,
    store: PathBuf,
    devices: Vec<Device>,
    published: usize,
    summary: Value,
}

/// `None` when Mosquitto is missing and the checks may skip.
fn shared_run() -> Option<&'static Run> {
    static RUN: OnceLock<Run> = OnceLock::new();
    // Each test that skips says so.
    let mosquitto = mosquitto()?;
    Some(RUN.get_or_init(|| {
        let dir = tmp("shared");
        let broker = start_broker(&mosquitto, &dir, &xtask::mqtt::Options::default());
        let devices: Vec<Device> = (1..=6).map(|i| device(i, 40)).collect();
        let all: Vec<&Device> = devices.iter().collect();
        open_session(broker.port(), "fleet-shared");
        let mut messages = interleaved(&all, |d| 0..d.items.len());
        // A device that re-publishes: every tenth message again, later.
        let again: Vec<(String, Vec<u8>)> = messages.iter().step_by(10).cloned().collect();
        messages.extend(again);
        let store = dir.join("store");
        let consumer = Consumer::start(
            broker.port(),
            &store,
            "fleet-shared",
            &[
                "--idle-exit",
                "20",
                "--until",
                until(&dir, &all).to_str().unwrap(),
                "--summary-json",
                dir.join("summary.json").to_str().unwrap(),
            ],
        );
        publish(broker.port(), "devices-shared", &messages);
        // The duplicates come after each device's last item: it stops
        // once those are in, so publish them again at the very end.
        let (code, out, err) = consumer.finish(Duration::from_secs(120));
        assert_eq!(code, Some(0), "{out}\n{err}");
        assert!(out.starts_with("fleet: devices 6, received "), "{out}");
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        broker.stop().expect("mosquitto stops");
        Run { dir, store, devices, published: messages.len(), summary }
    }))
}

#[test]
fn each_step_of_a_fleet_is_one_row_holding_what_the_device_decided() {
    let Some(run) = shared_run() else { return };
    let items: usize = run.devices.iter().map(|d| d.items.len()).sum();
    let steps: usize = run.devices.iter().map(|d| d.steps.len()).sum();
    let s = &run.summary;
    // It stopped at the last items: the duplicates after them may or may
    // not have come in, but every item was kept once.
    assert_eq!(s["kept"], items, "{s}");
    assert_eq!(s["rows"], steps, "{s}");
    assert_eq!(s["failed"], 0, "{s}");
    assert!(s["received"].as_u64().unwrap() <= run.published as u64, "{s}");
    assert_eq!(
        s["received"].as_u64().unwrap(),
        s["kept"].as_u64().unwrap() + s["duplicates"].as_u64().unwrap(),
        "{s}"
    );
    assert!(s["receive_to_row_ms"]["rows"].as_u64().unwrap() == steps as u64, "{s}");
    for device in &run.devices {
        let rows = fleet_store::read_device(&run.store, &device.id).unwrap();
        assert_eq!(rows.len(), device.steps.len(), "{}", device.id);
        for (row, step) in rows.iter().zip(&device.steps) {
            assert_row_is_the_step(&device.id, row, step);
        }
    }
    // The fleet's sessions exercise every dimension.
    let fired: Vec<usize> = (0..5)
        .map(|k| run.devices.iter().flat_map(|d| &d.steps).filter(|s| s.dims[k]).count())
        .collect();
    assert!(fired.iter().all(|&n| n > 0), "{fired:?}");
}

/// Per dimension (time, tasks, context length, tool error, watch), the
/// hints `envaware-sim replay` prints for a log file that tell it.
fn replay_counts(log: &Path) -> [usize; 5] {
    let out = Command::new(SIM).args(["replay", "--json"]).arg(log).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut counts = [0; 5];
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let Some(hint) = v["hint"].as_str() else { continue };
        for (k, tag) in
            ["<current-time>", "<tasks>", "<context-length>", "<tool-error>"].iter().enumerate()
        {
            counts[k] += usize::from(hint.contains(tag));
        }
        counts[4] += usize::from(v["watch"].as_array().is_some_and(|w| !w.is_empty()));
    }
    counts
}

#[test]
fn the_counts_per_dimension_are_those_of_the_replay_of_the_items_kept() {
    let Some(run) = shared_run() else { return };
    for device in &run.devices {
        let log = run.store.join("items").join(format!("{}.log", device.id));
        let rows = fleet_store::read_device(&run.store, &device.id).unwrap();
        let mut counts = [0; 5];
        for row in &rows {
            let dims = [row.time, row.tasks, row.context_length, row.tool_error, row.watch];
            for (k, fired) in dims.into_iter().enumerate() {
                counts[k] += usize::from(fired && row.hint.is_some());
            }
        }
        assert_eq!(counts, replay_counts(&log), "{}", device.id);
    }
}

/// Which steps of `device` the store holds, each once.
fn stored(store: &Path, device: &str) -> Vec<StepRow> {
    let rows = fleet_store::read_device(store, device).unwrap();
    let numbers: BTreeSet<u32> = rows.iter().map(|r| r.number).collect();
    assert_eq!(numbers.len(), rows.len(), "{device}: a step stored twice");
    rows
}

#[test]
fn a_killed_consumer_resumes_without_losing_or_repeating_a_row_and_refuses_a_bad_log() {
    let Some(mosquitto) = mosquitto() else { return };
    let dir = tmp("restart");
    let broker = start_broker(&mosquitto, &dir, &xtask::mqtt::Options::default());
    let port = broker.port();
    let mut devices: Vec<Device> = (1..=4).map(|i| device(i, 60)).collect();
    // sim-0003: a step that told the time alone (it ends with its
    // `decided` bits, 0b01, then one told field, the temperature as its
    // watch's reading: tag 0xC0), logged as if the tasks had fired too.
    let tampered = {
        let d = &mut devices[2];
        let time_only = |i: &Vec<u8>| i[0] == 9 && i.ends_with(&[0b01, 1, 0xC0]);
        let at = d.items.iter().position(time_only).expect("a step that told the time alone");
        let len = d.items[at].len();
        d.items[at][len - 3] = 0b11;
        at as u32
    };
    // sim-0004: item 30 never comes.
    let gap = 30usize;
    open_session(port, "fleet-restart");
    let store = dir.join("store");
    let first = Consumer::start(port, &store, "fleet-restart", &["--idle-exit", "30"]);
    let all: Vec<&Device> = devices.iter().collect();
    let skip = |d: &Device, range: std::ops::Range<usize>| -> Vec<(String, Vec<u8>)> {
        range
            .filter(|&i| !(d.id == "sim-0004" && i == gap))
            .map(|i| message(&d.id, i as u32, &d.items[i]))
            .collect()
    };
    let half = |d: &Device| d.items.len() / 2;
    let phase1: Vec<(String, Vec<u8>)> = all.iter().flat_map(|d| skip(d, 0..half(d))).collect();
    publish(port, "devices-1", &phase1);
    // Wait until the first consumer has written rows, then kill it while
    // the next burst is coming in.
    let started = Instant::now();
    while !fleet_store::device_dir(&store, "steps", "sim-0001").exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "no row written");
        std::thread::sleep(Duration::from_millis(50));
    }
    let three_quarters = |d: &Device| d.items.len() * 3 / 4;
    let phase2: Vec<(String, Vec<u8>)> =
        all.iter().flat_map(|d| skip(d, half(d)..three_quarters(d))).collect();
    publish(port, "devices-2", &phase2);
    drop(first); // killed (SIGKILL), whatever it was doing
                 // The devices re-publish from before what the broker acknowledged, as
                 // after a reset: ten items again each, then the rest.
    let phase3: Vec<(String, Vec<u8>)> =
        all.iter().flat_map(|d| skip(d, three_quarters(d) - 10..d.items.len())).collect();
    publish(port, "devices-3", &phase3);
    let second = Consumer::start(
        port,
        &store,
        "fleet-restart",
        &[
            "--idle-exit",
            "20",
            "--until",
            until(&dir, &all).to_str().unwrap(),
            "--summary-json",
            dir.join("summary.json").to_str().unwrap(),
        ],
    );
    let (code, out, err) = second.finish(Duration::from_secs(120));
    broker.stop().expect("mosquitto stops");
    assert_eq!(code, Some(1), "two logs refused\n{out}\n{err}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["failed"], 2, "{summary}");
    assert!(summary["duplicates"].as_u64().unwrap() >= 20, "the re-published items: {summary}");
    let failures = &summary["failures"];
    let tamper_says = format!(
        "item {tampered}: the device decided {{\"time\":true,\"tasks\":true}}, but the replay decides {{\"time\":true}}"
    );
    assert_eq!(failures["sim-0003"], tamper_says.as_str(), "{summary}");
    assert_eq!(
        failures["sim-0004"], "item 30 is missing (item 31 came after item 29)",
        "{summary}"
    );
    assert!(
        err.contains(&format!("fleet: device sim-0003: refused from here on: {tamper_says}")),
        "{err}"
    );

    for d in &devices {
        let rows = stored(&store, &d.id);
        // The steps before the bad item, and for the good logs all of them.
        let limit = match d.id.as_str() {
            "sim-0003" => tampered,
            "sim-0004" => gap as u32,
            _ => u32::MAX,
        };
        let expected: Vec<&Step> = d.steps.iter().filter(|s| s.number < limit).collect();
        assert_eq!(rows.len(), expected.len(), "{}", d.id);
        for (row, step) in rows.iter().zip(expected) {
            assert_row_is_the_step(&d.id, row, step);
        }
    }
}

#[test]
fn the_consumer_rides_out_a_broker_restart_and_gets_what_the_broker_kept() {
    let Some(mosquitto) = mosquitto() else { return };
    let dir = tmp("outage");
    let options = xtask::mqtt::Options { persistence: true, ..xtask::mqtt::Options::default() };
    let mut broker = start_broker(&mosquitto, &dir, &options);
    let port = broker.port();
    let devices: Vec<Device> = (1..=3).map(|i| device(i, 30)).collect();
    let all: Vec<&Device> = devices.iter().collect();
    open_session(port, "fleet-outage");
    let store = dir.join("store");
    let consumer = Consumer::start(
        port,
        &store,
        "fleet-outage",
        &[
            "--idle-exit",
            "20",
            "--until",
            until(&dir, &all).to_str().unwrap(),
            "--summary-json",
            dir.join("summary.json").to_str().unwrap(),
        ],
    );
    let half = |d: &Device| d.items.len() / 2;
    publish(port, "devices-before", &interleaved(&all, |d| 0..half(d)));
    // The broker goes down (it saves its sessions and queues) and comes
    // back on the same port; the devices publish the rest after.
    broker.restart().expect("mosquitto restarts");
    publish(port, "devices-after", &interleaved(&all, |d| half(d) - 3..d.items.len()));
    let (code, out, err) = consumer.finish(Duration::from_secs(120));
    broker.stop().expect("mosquitto stops");
    assert_eq!(code, Some(0), "{out}\n{err}");
    // It lost the broker, and found its session again.
    assert!(err.contains("(session kept: true)"), "{err}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let items: usize = devices.iter().map(|d| d.items.len()).sum();
    assert_eq!(summary["kept"], items, "{summary}");
    assert!(summary["duplicates"].as_u64().unwrap() >= 9, "{summary}");
    for d in &devices {
        let rows = stored(&store, &d.id);
        assert_eq!(rows.len(), d.steps.len(), "{}", d.id);
        for (row, step) in rows.iter().zip(&d.steps) {
            assert_row_is_the_step(&d.id, row, step);
        }
    }
}

#[test]
fn duckdb_answers_the_fleet_queries_as_the_sessions_and_the_replay_count() {
    let Some(run) = shared_run() else { return };
    let python = xtask::needs::reference_python().and_then(|p| {
        let has =
            Command::new(&p).args(["-c", "import duckdb"]).status().is_ok_and(|s| s.success());
        if has {
            Ok(p)
        } else {
            Err(format!("no duckdb in {}", p.display()))
        }
    });
    let Some(python) = xtask::needs::or_skip(python) else { return };
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let out = Command::new(&python)
        .arg(workspace.join("tests/reference/fleet_sql.py"))
        .arg(workspace.join("docs/fleet.sql"))
        .arg(&run.store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answers: Value = serde_json::from_slice(&out.stdout).unwrap();
    std::fs::write(run.dir.join("answers.json"), &out.stdout).unwrap();

    // Per device and dimension, the hints: as the sessions counted them,
    // and as the replay of the items kept counts them.
    let per_device = answers["hints_per_device_and_dimension"].as_array().unwrap();
    assert_eq!(per_device.len(), run.devices.len());
    for (row, d) in per_device.iter().zip(&run.devices) {
        assert_eq!(row["device"], d.id.as_str());
        let hints = d.steps.iter().filter(|s| s.hint.is_some()).count();
        assert_eq!(row["hints"], hints, "{row}");
        let counted = ["time", "tasks", "context_length", "tool_error", "watch"]
            .map(|k| row[k].as_u64().unwrap() as usize);
        let sessions = [0, 1, 2, 3, 4]
            .map(|k| d.steps.iter().filter(|s| s.hint.is_some() && s.dims[k]).count());
        assert_eq!(counted, sessions, "{}", d.id);
        let log = run.store.join("items").join(format!("{}.log", d.id));
        assert_eq!(counted, replay_counts(&log), "{}", d.id);
    }

    // The devices whose tool-error hint fired.
    let failing: Vec<&str> = answers["tool_error_devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["device"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = run
        .devices
        .iter()
        .filter(|d| d.steps.iter().any(|s| s.dims[3]))
        .map(|d| d.id.as_str())
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(failing, expected);

    // From the first reading above 28 °C to the first hint after it.
    let crossings = answers["above_to_told"].as_array().unwrap();
    let mut expected = BTreeMap::new();
    for d in &run.devices {
        let Some(i) = d.steps.iter().position(|s| s.temperature > ABOVE) else { continue };
        let told = d.steps[i..].iter().find(|s| s.hint.is_some()).map(|s| s.at.unix_micros());
        let seconds = told.map(|t| (t - d.steps[i].at.unix_micros()) as f64 / 1e6);
        expected.insert(d.id.clone(), seconds);
    }
    assert!(expected.len() >= 3, "{expected:?}");
    assert!(
        expected.values().any(|s| s.is_some_and(|s| s > 0.0)),
        "a crossing told later: {expected:?}"
    );
    let answered: BTreeMap<String, Option<f64>> = crossings
        .iter()
        .map(|r| (r["device"].as_str().unwrap().to_string(), r["seconds"].as_f64()))
        .collect();
    assert_eq!(answered, expected);
}

/// `envaware-sim devices`: its summary JSON, once it ended (exit 0).
fn run_devices(port: u16, dir: &Path, name: &str, extra: &[&str]) -> Value {
    let summary = dir.join(format!("{name}.json"));
    let out = Command::new(SIM)
        .args(["devices", "--broker", &format!("127.0.0.1:{port}"), "--summary-json"])
        .arg(&summary)
        .args(extra)
        .output()
        .expect("start envaware-sim devices");
    let say = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{say}");
    serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap()
}

/// The numbers a device's summary says its log dropped undelivered.
fn lost_numbers(device: &Value) -> BTreeSet<u32> {
    let ranges = device["lost_ranges"].as_array().unwrap();
    ranges
        .iter()
        .flat_map(|r| r[0].as_u64().unwrap() as u32..r[1].as_u64().unwrap() as u32)
        .collect()
}

#[test]
fn simulated_devices_publish_through_the_outbox_and_a_region_filled_offline_is_declared_lost() {
    let Some(mosquitto) = mosquitto() else { return };
    let dir = tmp("devices");
    let broker = start_broker(&mosquitto, &dir, &xtask::mqtt::Options::default());
    let port = broker.port();
    open_session(port, "fleet-devices");
    let store = dir.join("store");
    let consumer = Consumer::start(
        port,
        &store,
        "fleet-devices",
        &["--idle-exit", "3", "--summary-json", dir.join("summary.json").to_str().unwrap()],
    );
    let steps = 240;
    // Two devices whose link is up: every item delivered. Two whose link
    // is down from step 20 to 200: their 10 KiB regions fill with
    // undelivered items and drop the oldest, then tell the fleet.
    let steps_arg = steps.to_string();
    let whole = run_devices(
        port,
        &dir,
        "whole",
        &["--count", "2", "--steps", &steps_arg, "--id-prefix", "whole-", "--step-ms", "1"],
    );
    let offline = run_devices(
        port,
        &dir,
        "offline",
        &[
            "--count",
            "2",
            "--steps",
            &steps_arg,
            "--id-prefix",
            "offline-",
            "--step-ms",
            "1",
            "--outage",
            "20:200",
        ],
    );
    let (code, out, err) = consumer.finish(Duration::from_secs(60));
    broker.stop().expect("mosquitto stops");
    assert_eq!(code, Some(0), "{out}\n{err}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["failed"], 0, "{summary}");
    assert_eq!(whole["lost"], 0, "{whole}");
    assert!(offline["lost"].as_u64().unwrap() > 100, "{offline}");
    assert_eq!(summary["lost"], offline["lost"], "{summary}");

    let devices = whole["per_device"]
        .as_array()
        .unwrap()
        .iter()
        .chain(offline["per_device"].as_array().unwrap());
    for (k, d) in devices.enumerate() {
        let id = d["id"].as_str().unwrap();
        // The same session as the tests' generator makes (device 1 or 2).
        let session = device(1 + k as u32 % 2, steps);
        let lost = lost_numbers(d);
        assert_eq!(
            d["items"].as_u64().unwrap(),
            d["delivered"].as_u64().unwrap() + lost.len() as u64,
            "{d}"
        );
        let items: Vec<&Value> = d["step_items"].as_array().unwrap().iter().collect();
        assert_eq!(items.len(), steps);
        if !lost.is_empty() {
            // The fleet holds the loss as the device declared it.
            let gaps = &summary["lost_per_device"][id]["gaps"];
            let declared: BTreeSet<u32> = gaps
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|g| g[0].as_u64().unwrap() as u32..g[1].as_u64().unwrap() as u32)
                .collect();
            assert_eq!(declared, lost, "{id}: {summary}");
            assert_eq!(summary["lost_per_device"][id]["replays_resumed"], 1, "{summary}");
        }
        // A row per step the log did not drop: the step the device took.
        let rows = stored(&store, id);
        let kept: Vec<(usize, u32)> = items
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s[0].as_u64().unwrap() as u32))
            .filter(|(_, n)| !lost.contains(n))
            .collect();
        assert_eq!(rows.len(), kept.len(), "{id}");
        assert_eq!(kept.len() as u64, steps as u64 - d["steps_lost"].as_u64().unwrap());
        let gap_end = lost.last().map(|l| l + 1);
        let mut counts = [0u64; 5];
        for (row, &(i, number)) in rows.iter().zip(&kept) {
            let step = &session.steps[i];
            assert_eq!(row.number, number, "{id}");
            assert_eq!(row.instant, Some(step.at.unix_micros()), "{id} step {i}");
            assert_eq!(row.hint, step.hint, "{id} step {i}");
            let dims = [row.time, row.tasks, row.context_length, row.tool_error, row.watch];
            assert_eq!(dims, step.dims, "{id} step {i}");
            let bits = dims.iter().enumerate().map(|(k, &f)| u64::from(f) << k).sum::<u64>();
            assert_eq!(items[i][3].as_u64(), step.hint.as_ref().map(|_| bits), "{id} step {i}");
            for (k, fired) in dims.into_iter().enumerate() {
                counts[k] += u64::from(fired && row.hint.is_some());
            }
            // Decided again, but for the steps after the gap that come
            // before the next header with the settings.
            if gap_end.is_none_or(|end| number < end) {
                assert!(row.checked, "{id} item {number}");
            }
        }
        assert!(rows.last().unwrap().checked, "{id}: checked again after the gap");
        let hints = &d["hints"];
        let told = ["time", "tasks", "context_length", "tool_error", "watch"]
            .map(|k| hints[k].as_u64().unwrap());
        assert_eq!(counts, told, "{id}");
    }
}

#[test]
fn chromium_renders_the_fleet_view_with_a_title_per_hint_and_each_dimension_s_colour() {
    let Some(run) = shared_run() else { return };
    let Some(chromium) = xtask::needs::or_skip(xtask::chromium::find()) else { return };
    let svg = run.dir.join("fleet.svg");
    let out = Command::new(SIM)
        .args(["fleet", "--store"])
        .arg(&run.store)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    let hints: usize =
        run.devices.iter().map(|d| d.steps.iter().filter(|s| s.hint.is_some()).count()).sum();
    let marks: usize = run
        .devices
        .iter()
        .flat_map(|d| &d.steps)
        .filter(|s| s.hint.is_some())
        .map(|s| s.dims.iter().filter(|&&f| f).count())
        .sum();
    assert_eq!(text.matches("<title>").count(), hints);
    assert_eq!(text.matches("<circle ").count(), marks);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains(&format!("6 devices, {hints} hints, {marks} marks")));

    let url = format!("file://{}", svg.display());
    let run_chromium = |args: &[String], profile: &str| {
        xtask::chromium::run(&chromium, args, &url, &run.dir.join(profile))
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let dom =
        String::from_utf8_lossy(&run_chromium(&["--dump-dom".into()], "profile-dom")).into_owned();
    assert!(!dom.contains("parsererror"), "the browser could not parse the SVG");
    assert_eq!(dom.matches("<title>").count(), hints, "a title per hint in the browser's DOM");
    let png = run.dir.join("fleet.png");
    let height = text.split("height=\"").nth(1).and_then(|h| h.split('"').next()).unwrap();
    run_chromium(
        &[format!("--screenshot={}", png.display()), format!("--window-size=1200,{height}")],
        "profile-shot",
    );
    for colour in ["1f77b4", "2ca02c", "ff7f0e", "d62728", "bcbd22"] {
        let rgb = [0, 2, 4].map(|i| u8::from_str_radix(&colour[i..i + 2], 16).unwrap());
        let (width, h, matching, _) = count_colour(&png, rgb);
        assert_eq!((width, h.to_string()), (1200, height.to_string()));
        assert!(matching >= 20, "only {matching} pixels of #{colour}");
    }
}

/// A number from the environment, else `default`.
fn env_number(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The consumer under load: `ENVAWARE_FLEET_DEVICES` devices (100) of
/// `ENVAWARE_FLEET_STEPS` steps (1000) each, published by
/// `ENVAWARE_FLEET_PUBLISHERS` clients (4) at once, every twentieth
/// message twice, as fast as the broker takes them or at
/// `ENVAWARE_FLEET_RATE` messages a second in all, the consumer writing
/// rows every `ENVAWARE_FLEET_FLUSH` seconds (1). Prints the consumer's
/// summary line, and publish → row (the publisher's clock before
/// `publish`, the row's `written_at`).
/// docs/fleet.md has its figures:
///
/// ```sh
/// cargo test --release -p envaware-sim --test fleet load -- --ignored --nocapture
/// ```
#[test]
#[ignore = "a load run of a minute or more: see its docs"]
fn load() {
    let mosquitto = xtask::mqtt::find().expect("mosquitto");
    let (count, steps) =
        (env_number("ENVAWARE_FLEET_DEVICES", 100), env_number("ENVAWARE_FLEET_STEPS", 1000));
    let publishers = env_number("ENVAWARE_FLEET_PUBLISHERS", 4).max(1) as usize;
    let rate = std::env::var("ENVAWARE_FLEET_RATE").ok().and_then(|r| r.parse::<u32>().ok());
    let each = rate.map(|r| r.div_ceil(publishers as u32));
    let flush = std::env::var("ENVAWARE_FLEET_FLUSH").unwrap_or_else(|_| "1".into());
    let dir = tmp("load");
    let started = Instant::now();
    let devices: Vec<Device> = (1..=count).map(|i| device(i, steps as usize)).collect();
    let items: usize = devices.iter().map(|d| d.items.len()).sum();
    eprintln!(
        "load: {count} devices, {steps} steps, {items} items made in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let broker = start_broker(&mosquitto, &dir, &xtask::mqtt::Options::default());
    open_session(broker.port(), "fleet-load");
    let store = dir.join("store");
    let all: Vec<&Device> = devices.iter().collect();
    let consumer = Consumer::start(
        broker.port(),
        &store,
        "fleet-load",
        &[
            "--idle-exit",
            "30",
            "--flush-secs",
            &flush,
            "--until",
            until(&dir, &all).to_str().unwrap(),
            "--summary-json",
            dir.join("summary.json").to_str().unwrap(),
        ],
    );
    // Each publisher its share of the devices, interleaved, with repeats.
    let sent = std::sync::Mutex::new(BTreeMap::<(String, u32), i64>::new());
    let publish_started = Instant::now();
    std::thread::scope(|scope| {
        for p in 0..publishers {
            let mine: Vec<&Device> = all.iter().copied().skip(p).step_by(publishers).collect();
            let (port, sent) = (broker.port(), &sent);
            scope.spawn(move || {
                let mut messages = interleaved(&mine, |d| 0..d.items.len());
                let again: Vec<(String, Vec<u8>)> = messages.iter().step_by(20).cloned().collect();
                messages.extend(again);
                let times = publish_at(port, &format!("devices-load-{p}"), &messages, each);
                let mut sent = sent.lock().unwrap();
                for ((topic, payload), at) in messages.iter().zip(times) {
                    let id =
                        topic.trim_start_matches("envaware/").trim_end_matches("/log").to_string();
                    let number = u32::from_le_bytes(payload[..4].try_into().unwrap());
                    sent.entry((id, number)).or_insert(at);
                }
            });
        }
    });
    let published = publish_started.elapsed();
    let (code, out, err) = consumer.finish(Duration::from_secs(1800));
    broker.stop().expect("mosquitto stops");
    assert_eq!(code, Some(0), "{out}\n{err}");
    let sent = sent.into_inner().unwrap();
    let mut latencies = Vec::new();
    let mut rows = 0;
    let replayed = Instant::now();
    for d in &devices {
        let stored = stored(&store, &d.id);
        assert_eq!(stored.len(), d.steps.len(), "{}", d.id);
        rows += stored.len();
        // Each device's counts per dimension: the rows', and the replay's
        // of the items the consumer kept.
        let mut counts = [0; 5];
        for (row, step) in stored.iter().zip(&d.steps) {
            assert_row_is_the_step(&d.id, row, step);
            let dims = [row.time, row.tasks, row.context_length, row.tool_error, row.watch];
            for (k, fired) in dims.into_iter().enumerate() {
                counts[k] += usize::from(fired && row.hint.is_some());
            }
            let at = sent[&(d.id.clone(), row.number)];
            latencies.push((row.written_at.unwrap() - at) as f64 / 1e3);
        }
        let log = store.join("items").join(format!("{}.log", d.id));
        assert_eq!(counts, replay_counts(&log), "{}", d.id);
    }
    eprintln!(
        "load: every row is its step, each device's counts per dimension the replay's ({:.1} s to check)",
        replayed.elapsed().as_secs_f64()
    );
    latencies.sort_by(f64::total_cmp);
    let q = |q: f64| {
        latencies[((q * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len()) - 1]
    };
    println!("{}", out.trim());
    println!(
        "load: {count} devices x {steps} steps, {items} items, {rows} rows, published in {:.1} s by {publishers} clients{}; publish -> row p50 {:.0} ms, p99 {:.0} ms",
        published.as_secs_f64(),
        rate.map_or(String::new(), |r| format!(" at {r} messages/s")),
        q(0.5),
        q(0.99)
    );
    println!("load: the store is {}", store.display());
}

/// The wall clock, µs since the epoch.
fn device_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64
}
