//! `envaware-sim devices`: simulated devices that publish their session
//! logs as the firmware does (issue 37). Each device runs a generated
//! greenhouse session ([`envaware_sim::greenhouse`]) through
//! `envaware::journal::Session` into a `SessionLog::with_outbox` over a
//! flash region in RAM the size of the board's, compacted with
//! `make_room_for` before each event and step as the firmware compacts it,
//! and `envaware_uplink::run` publishes the log over a TCP socket to the
//! broker: the outbox code the board runs, not a stand-in.
//!
//! A device is a thread with a single-threaded tokio runtime: the agent's
//! loop and the uplink run joined on it, sharing the log through embassy's
//! mutex. A device stops once its steps are logged and every item is
//! delivered (or reported lost), or at `--timeout`.

use std::cell::{Cell, RefCell};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use embassy_futures::join::join;
use embassy_futures::select::{select, Either};
use embassy_sync::blocking_mutex::raw::NoopRawMutex;
use embassy_sync::mutex::Mutex;
use envaware::journal::ItemStore;
use envaware::{ConfigBuf, Engine, TimeDecision};
use envaware_flashlog::{RamFlash, SessionLog, PAGE};
use envaware_sim::greenhouse::{self, Greenhouse, TurnEvent};
use envaware_uplink::{Link, Stats, Timing};

use super::device::now_micros;
use super::quantile;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// `envaware-sim devices`' arguments.
#[derive(clap::Args, Debug)]
pub struct DevicesArgs {
    /// The broker, HOST:PORT (loopback in the tests).
    #[arg(long, value_name = "HOST:PORT")]
    broker: String,
    /// How many devices.
    #[arg(long, value_name = "N", default_value = "1", value_parser = crate::in_range::<1, 10_000>)]
    count: u64,
    /// Steps each device logs.
    #[arg(long, value_name = "S", value_parser = crate::in_range::<1, 1_000_000>)]
    steps: u64,
    /// Device ids are PREFIX then a 4-digit index (`sim-0001`); an id is
    /// `[a-z0-9-]{1,32}`.
    #[arg(long, value_name = "PREFIX", default_value = "sim-")]
    id_prefix: String,
    /// The first device's index (the fleet's tests number theirs from 1).
    #[arg(long, value_name = "N", default_value = "1", value_parser = crate::in_range::<0, 1_000_000>)]
    first_index: u64,
    /// The generator's seed: device `i` of seed `K` takes the same steps on
    /// every run (the fleet's tests use 24301, 0x5EED).
    #[arg(long, value_name = "K", default_value_t = greenhouse::SEED)]
    seed: u64,
    /// Host time between a device's steps, in milliseconds (0: as fast as
    /// the uplink lets it; a device that outruns its uplink fills its
    /// region and drops undelivered items).
    #[arg(long, value_name = "MS", default_value = "0", value_parser = crate::in_range::<0, 3_600_000>)]
    step_ms: u64,
    /// The session log's flash region per device, in KiB (the board's is 10).
    #[arg(long, value_name = "KIB", default_value = "10", value_parser = crate::in_range::<8, 1024>)]
    region_kib: u64,
    /// The device's link is down (connections refused, the open one cut)
    /// from step FROM until step TO is logged: what a device sees of a
    /// broker that is away. `FROM:TO`, steps counted from 0.
    #[arg(long, value_name = "FROM:TO", value_parser = outage)]
    outage: Option<(u64, u64)>,
    /// Give up after SECS seconds, delivered or not (the summary says which).
    #[arg(long, value_name = "SECS", default_value = "3600", value_parser = crate::in_range::<1, 86_400>)]
    timeout: u64,
    /// Also write the summary as JSON to FILE: per device its steps, items,
    /// delivered, lost (and which numbers), its hints per dimension, and
    /// when each step item was logged and acknowledged.
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,
}

/// `FROM:TO`, FROM before TO.
fn outage(text: &str) -> Result<(u64, u64), String> {
    let (from, to) = text.split_once(':').ok_or("expected FROM:TO (steps)")?;
    match (from.trim().parse::<u64>(), to.trim().parse::<u64>()) {
        (Ok(from), Ok(to)) if from < to => Ok((from, to)),
        _ => Err("expected FROM:TO, two step numbers, FROM below TO".into()),
    }
}

/// How the simulated devices' uplinks wait: 5 s for an answer, 0.5 s
/// before connecting again, and while everything is delivered until the
/// agent logs again (the idle wait, 1 s, is cut short then).
const TIMING: Timing = Timing { answer_ms: 5_000, retry_ms: 500, idle_ms: 1_000 };

/// What one device did.
#[derive(Debug, Default)]
struct Report {
    id: String,
    steps: u64,
    /// The log's next item number: items 0..next were logged.
    next: u32,
    uplink: Stats,
    /// The numbers the log dropped undelivered, `from..to` each.
    lost: Vec<(u32, u32)>,
    /// Compactions of the log.
    compactions: u32,
    /// Events or steps the session could not log (the region full).
    refused: u32,
    /// Per step: its item's number, when it was logged and when its
    /// PUBACK came (µs since the epoch), and the dimensions its hint told.
    step_items: Vec<StepItem>,
    /// Whether the device gave up at `--timeout`.
    timed_out: bool,
}

#[derive(Debug, Clone, Copy)]
struct StepItem {
    number: u32,
    logged_at: i64,
    acked_at: Option<i64>,
    /// time, tasks, context length, tool error, watch (told in a hint).
    hint: Option<[bool; 5]>,
}

/// What the agent and the uplink of one device share (one thread).
struct Shared {
    /// The link is down (an outage).
    down: Cell<bool>,
    /// The agent's log moved: the uplink's idle wait ends.
    logged: Notify,
    /// Set when the agent logged its last step: the log's next number.
    done: Cell<Option<u32>>,
    steps: RefCell<Vec<StepItem>>,
    /// Step items up to this index have their PUBACK time.
    acked: Cell<usize>,
    lost: RefCell<Vec<(u32, u32)>>,
    stats: Cell<Stats>,
}

/// A TCP connection per `connect`, tokio's timer for `sleep_ms`.
struct TcpLink<'s> {
    broker: SocketAddr,
    shared: &'s Shared,
}

/// The socket as an `embedded-io-async` stream; fails while the link is
/// down.
struct Tcp<'s> {
    stream: TcpStream,
    shared: &'s Shared,
}

impl<'s> Link for TcpLink<'s> {
    type Transport = Tcp<'s>;

    async fn connect(&mut self) -> Option<Tcp<'s>> {
        if self.shared.down.get() {
            return None;
        }
        let connecting =
            tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(self.broker));
        let stream = connecting.await.ok()?.ok()?;
        let _ = stream.set_nodelay(true);
        Some(Tcp { stream, shared: self.shared })
    }

    async fn sleep_ms(&mut self, ms: u32) {
        let sleep = tokio::time::sleep(Duration::from_millis(u64::from(ms)));
        // The idle wait (everything delivered) ends when the agent logs.
        if ms == TIMING.idle_ms {
            select(sleep, self.shared.logged.notified()).await;
        } else {
            sleep.await;
        }
    }
}

impl embedded_io_async::ErrorType for Tcp<'_> {
    type Error = std::io::Error;
}

impl embedded_io_async::Read for Tcp<'_> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, std::io::Error> {
        match select(self.stream.read(buf), link_down(self.shared)).await {
            Either::First(read) => read,
            Either::Second(e) => Err(e),
        }
    }
}

impl embedded_io_async::Write for Tcp<'_> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, std::io::Error> {
        if self.shared.down.get() {
            return Err(link_down(self.shared).await);
        }
        self.stream.write(buf).await
    }

    async fn flush(&mut self) -> Result<(), std::io::Error> {
        self.stream.flush().await
    }
}

/// Once the link goes down (looked at every 50 ms): the error a read
/// fails with then.
async fn link_down(shared: &Shared) -> std::io::Error {
    while !shared.down.get() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::io::Error::new(std::io::ErrorKind::NotConnected, "the device's link is down")
}

/// One device's plan.
#[derive(Debug, Clone)]
struct Plan {
    id: String,
    index: u32,
    seed: u64,
    steps: u64,
    step_ms: u64,
    region: usize,
    outage: Option<(u64, u64)>,
    broker: SocketAddr,
    timeout: Duration,
}

type Log = Mutex<NoopRawMutex, SessionLog<RamFlash<Vec<u8>>>>;

/// Runs one device to its end (its own thread, its own runtime).
fn run_device(plan: &Plan, progress: &Progress) -> Result<Report, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("{}: a runtime: {e}", plan.id))?;
    runtime.block_on(device(plan, progress))
}

async fn device(plan: &Plan, progress: &Progress) -> Result<Report, String> {
    let mut config = Box::new(ConfigBuf::<4096, 8, 8>::with_capacity());
    let loaded = config
        .load_session(greenhouse::CONFIG)
        .map_err(|e| format!("the devices' configuration: {e}"))?;
    let engine = Engine::new(loaded.config).map_err(|e| format!("the configuration: {e}"))?;
    let log: Log = Mutex::new(SessionLog::with_outbox(RamFlash(vec![0xFF; plan.region])));
    let shared = Shared {
        down: Cell::new(false),
        logged: Notify::new(),
        done: Cell::new(None),
        steps: RefCell::new(Vec::with_capacity(plan.steps as usize)),
        acked: Cell::new(0),
        lost: RefCell::new(Vec::new()),
        stats: Cell::new(Stats::default()),
    };
    let mut report = Report { id: plan.id.clone(), ..Report::default() };
    let agent = agent(plan, &engine, loaded.agent_name, &log, &shared, progress);
    let mut link = TcpLink { broker: plan.broker, shared: &shared };
    let mut payload = vec![0u8; envaware_uplink::MAX_PAYLOAD];
    let keep_going = |stats: &Stats| {
        shared.stats.set(*stats);
        let Ok(log) = log.try_lock() else { return true };
        let mark = log.delivered().unwrap_or(0);
        let all_lost_told = log.lost() == stats.lost;
        drop(log);
        // The step items now delivered: their PUBACK came now.
        let now = now_micros();
        let mut steps = shared.steps.borrow_mut();
        let mut at = shared.acked.get();
        while let Some(step) = steps.get_mut(at).filter(|s| s.number < mark) {
            step.acked_at.get_or_insert(now);
            at += 1;
        }
        shared.acked.set(at);
        !(shared.done.get().is_some_and(|next| mark >= next) && all_lost_told)
    };
    let uplink = envaware_uplink::run(&log, &mut link, &plan.id, TIMING, &mut payload, keep_going);
    let limit = tokio::time::sleep(plan.timeout);
    match select(join(agent, uplink), limit).await {
        Either::First((agent, stats)) => {
            let (compactions, refused) = agent?;
            report.uplink = stats;
            report.compactions = compactions;
            report.refused = refused;
        }
        Either::Second(()) => {
            report.timed_out = true;
            report.uplink = shared.stats.get();
        }
    }
    report.next = shared.done.get().unwrap_or(0);
    report.steps = shared.steps.borrow().len() as u64;
    report.lost = shared.lost.take();
    report.step_items = shared.steps.take();
    Ok(report)
}

/// The agent's loop: the generated session, step by step, each event and
/// step logged after `make_room_for` (as the firmware does); returns the
/// compactions and the events or steps the log refused.
async fn agent(
    plan: &Plan,
    engine: &Engine<'_>,
    agent_name: &str,
    log: &Log,
    shared: &Shared,
    progress: &Progress,
) -> Result<(u32, u32), String> {
    let mut session = greenhouse::Context::new(engine, agent_name);
    let (mut buf, mut hint) = (vec![0u8; 4096], vec![0u8; 2048]);
    let (mut compactions, mut refused) = (0u32, 0u32);
    session
        .start(&mut buf, &mut *log.lock().await)
        .await
        .map_err(|e| format!("{}: the log's header: {e}", plan.id))?;
    shared.logged.notify_one();
    let mut greenhouse = Greenhouse::new(plan.index, plan.seed);
    for n in 0..plan.steps {
        if let Some((from, to)) = plan.outage {
            shared.down.set((from..to).contains(&n));
        }
        let turn = greenhouse.next_turn();
        let mut log = log.lock().await;
        // Before each event and the step, room is made as the board makes it.
        for event in turn.events.iter().flat_map(TurnEvent::events) {
            compactions += make_room(&mut session, &mut log, &mut buf, shared).await;
            if session.record(&event, &mut buf, &mut *log).await.is_err() {
                refused += 1;
            }
        }
        compactions += make_room(&mut session, &mut log, &mut buf, shared).await;
        let mut live = turn.readings();
        let before = session.journal().next_number();
        let mut store = Kinds { log: &mut log, kinds: Vec::new() };
        let outcome = session
            .step(&turn.input, Some(turn.at), &mut live, &mut hint, &mut buf, &mut store)
            .await;
        // The step's item: a `compress` note the step owed may come before
        // it, and one its hint's eviction owes after it.
        let step_item = store.kinds.iter().position(|&k| k == STEP_KIND);
        drop(log);
        match (outcome, step_item) {
            (Ok(outcome), Some(at)) => {
                let d = &outcome.decision;
                let dims = [
                    matches!(d.time, TimeDecision::Inject(_)),
                    d.tasks.is_some(),
                    d.context.is_some(),
                    d.tool_error.is_some(),
                    d.watch.contains(0),
                ];
                let hint = outcome.hint.is_some().then_some(dims);
                shared.steps.borrow_mut().push(StepItem {
                    number: before + at as u32,
                    logged_at: now_micros(),
                    acked_at: None,
                    hint,
                });
            }
            _ => refused += 1,
        }
        shared.logged.notify_one();
        progress.step();
        match plan.step_ms {
            0 => tokio::task::yield_now().await,
            ms => tokio::time::sleep(Duration::from_millis(ms)).await,
        }
    }
    shared.down.set(false);
    shared.done.set(Some(session.journal().next_number()));
    shared.logged.notify_one();
    Ok((compactions, refused))
}

/// The first byte of a step item (`ItemKind::Step`).
const STEP_KIND: u8 = 9;

/// The log, noting the kind of each item appended through it.
struct Kinds<'l> {
    log: &'l mut SessionLog<RamFlash<Vec<u8>>>,
    kinds: Vec<u8>,
}

impl ItemStore for Kinds<'_> {
    type Error = envaware_flashlog::AppendError;

    async fn append(&mut self, item: &[u8]) -> Result<(), Self::Error> {
        self.log.append(item).await?;
        self.kinds.push(item.first().copied().unwrap_or(0));
        Ok(())
    }

    fn delivered(&self) -> Option<u32> {
        self.log.delivered()
    }
}

/// Compacts the log when its region fills (`make_room_for`, as the
/// board), noting the numbers it dropped undelivered; 1 when it compacted.
async fn make_room(
    session: &mut greenhouse::Context<'_>,
    log: &mut SessionLog<RamFlash<Vec<u8>>>,
    buf: &mut [u8],
    shared: &Shared,
) -> u32 {
    let (lost, mark) = (log.lost(), log.delivered().unwrap_or(0));
    let popped = log.make_room_for(session, buf).await;
    if log.lost() > lost {
        // The mark moved past the items dropped undelivered.
        let to = log.delivered().unwrap_or(mark);
        shared.lost.borrow_mut().push((to - (log.lost() - lost), to));
    }
    u32::from(matches!(popped, Ok(p) if p > 0))
}

/// Steps logged across the devices, for the progress lines.
#[derive(Debug, Default)]
struct Progress {
    logged: AtomicU64,
}

impl Progress {
    fn step(&self) {
        self.logged.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `envaware-sim devices`: exit 0 when every device logged its steps
/// and its every item was delivered or reported lost, 1 when one timed out
/// or could not log, 2 on a bad argument.
pub fn main(args: DevicesArgs) -> ExitCode {
    let fail = |what: String| {
        eprintln!("envaware-sim devices: {what}");
        ExitCode::from(2)
    };
    let broker = match args.broker.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(addr)) => addr,
        _ => return fail(format!("--broker {:?}: expected HOST:PORT", args.broker)),
    };
    let last = args.first_index + args.count - 1;
    let longest = greenhouse::device_id(&args.id_prefix, last as u32);
    if last > u64::from(u32::MAX) || !super::valid_id(&longest) {
        return fail(format!(
            "--id-prefix {:?}: device ids ({longest}) must be [a-z0-9-]{{1,32}}",
            args.id_prefix
        ));
    }
    // Whole KiB: whole pages of the board's flash.
    let region = args.region_kib as usize * PAGE;
    let plans: Vec<Plan> = (args.first_index..=last)
        .map(|index| Plan {
            id: greenhouse::device_id(&args.id_prefix, index as u32),
            index: index as u32,
            seed: args.seed,
            steps: args.steps,
            step_ms: args.step_ms,
            region,
            outage: args.outage,
            broker,
            timeout: Duration::from_secs(args.timeout),
        })
        .collect();
    let started = Instant::now();
    let progress = Arc::new(Progress::default());
    let total = args.count * args.steps;
    let reports: Vec<Result<Report, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = plans
            .iter()
            .map(|plan| {
                let progress = Arc::clone(&progress);
                std::thread::Builder::new()
                    .name(plan.id.clone())
                    .stack_size(1 << 20)
                    .spawn_scoped(scope, move || run_device(plan, &progress))
            })
            .collect();
        // Progress on standard error: every 10 s, and at each tenth.
        let mut said = (Instant::now(), 0);
        while handles.iter().any(|h| h.as_ref().is_ok_and(|h| !h.is_finished())) {
            std::thread::sleep(Duration::from_millis(200));
            let logged = progress.logged.load(Ordering::Relaxed);
            let tenth = logged * 10 / total.max(1);
            if said.0.elapsed() >= Duration::from_secs(10) || tenth > said.1 {
                eprintln!(
                    "devices: {logged} of {total} steps logged ({:.0} s)",
                    started.elapsed().as_secs_f64()
                );
                said = (Instant::now(), tenth);
            }
        }
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|_| Err("a device's thread panicked".into())),
                Err(e) => Err(format!("a device's thread: {e}")),
            })
            .collect()
    });
    let elapsed = started.elapsed();
    let mut devices = Vec::new();
    for report in reports {
        match report {
            Ok(r) => devices.push(r),
            Err(e) => return fail(e),
        }
    }
    let summary = summary(&devices, args.steps, elapsed);
    println!("{}", summary.line);
    if let Some(path) = &args.summary_json {
        if let Err(e) = std::fs::write(path, format!("{}\n", summary.json)) {
            return fail(format!("{}: {e}", path.display()));
        }
    }
    let complete = devices.iter().all(|d| {
        !d.timed_out
            && d.refused == 0
            && d.steps == args.steps
            && u64::from(d.uplink.delivered) + u64::from(d.uplink.lost) == u64::from(d.next)
    });
    if complete {
        ExitCode::SUCCESS
    } else {
        for d in devices.iter().filter(|d| d.timed_out || d.refused > 0) {
            eprintln!(
                "devices: {}: {} steps, {} of {} items delivered, {} refused{}",
                d.id,
                d.steps,
                d.uplink.delivered,
                d.next,
                d.refused,
                if d.timed_out { ", timed out" } else { "" }
            );
        }
        ExitCode::FAILURE
    }
}

struct Summary {
    line: String,
    json: serde_json::Value,
}

fn summary(devices: &[Report], steps: u64, elapsed: Duration) -> Summary {
    let sum = |f: &dyn Fn(&Report) -> u64| devices.iter().map(f).sum::<u64>();
    let items = sum(&|d| u64::from(d.next));
    let delivered = sum(&|d| u64::from(d.uplink.delivered));
    let lost = sum(&|d| d.lost.iter().map(|(f, t)| u64::from(t - f)).sum());
    let in_lost = |d: &Report, n: u32| d.lost.iter().any(|&(f, t)| (f..t).contains(&n));
    let steps_lost = sum(&|d| d.step_items.iter().filter(|s| in_lost(d, s.number)).count() as u64);
    let sent = sum(&|d| d.uplink.sent_bytes);
    let connections = sum(&|d| u64::from(d.uplink.connections));
    let failures = sum(&|d| u64::from(d.uplink.failures));
    let timed_out = devices.iter().filter(|d| d.timed_out).count();
    let mut waits: Vec<f64> = devices
        .iter()
        .flat_map(|d| d.step_items.iter())
        .filter_map(|s| Some((s.acked_at? - s.logged_at) as f64 / 1e3))
        .collect();
    waits.sort_by(f64::total_cmp);
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let (p50, p99) = (quantile(&waits, 0.5), quantile(&waits, 0.99));
    let line = format!(
        "devices: {} devices, {steps} steps each, items {items}, delivered {delivered}, lost {lost}, steps lost {steps_lost}, connections {connections}, given up {failures}, bytes sent {sent}, timed out {timed_out}, logged-to-puback p50 {} ms p99 {} ms, {:.1} s",
        devices.len(),
        ms(p50),
        ms(p99),
        elapsed.as_secs_f64()
    );
    let per_device: Vec<serde_json::Value> = devices
        .iter()
        .map(|d| {
            let delivered_steps: Vec<&StepItem> =
                d.step_items.iter().filter(|s| !in_lost(d, s.number)).collect();
            let hints = |k: usize| delivered_steps.iter().filter(|s| s.hint.is_some_and(|h| h[k])).count();
            serde_json::json!({
                "id": d.id,
                "steps": d.steps,
                "items": d.next,
                "delivered": d.uplink.delivered,
                "lost": d.lost.iter().map(|(f, t)| t - f).sum::<u32>(),
                "lost_ranges": d.lost,
                "steps_lost": d.step_items.len() - delivered_steps.len(),
                "connections": d.uplink.connections,
                "given_up": d.uplink.failures,
                "sent_bytes": d.uplink.sent_bytes,
                "received_bytes": d.uplink.received_bytes,
                "compactions": d.compactions,
                "refused": d.refused,
                "timed_out": d.timed_out,
                "hints": {
                    "all": delivered_steps.iter().filter(|s| s.hint.is_some()).count(),
                    "time": hints(0), "tasks": hints(1), "context_length": hints(2),
                    "tool_error": hints(3), "watch": hints(4),
                },
                // Each step item: [number, logged at, PUBACK at (µs), the
                // dimensions its hint told (bits: time 1, tasks 2, context
                // length 4, tool error 8, watch 16) or null without a hint].
                "step_items": d.step_items.iter().map(|s| {
                    let bits = s.hint.map(|h| h.iter().enumerate().map(|(k, &f)| u8::from(f) << k).sum::<u8>());
                    (s.number, s.logged_at, s.acked_at, bits)
                }).collect::<Vec<_>>(),
            })
        })
        .collect();
    let json = serde_json::json!({
        "devices": devices.len(),
        "steps": steps,
        "items": items,
        "delivered": delivered,
        "lost": lost,
        "steps_lost": steps_lost,
        "connections": connections,
        "given_up": failures,
        "sent_bytes": sent,
        "timed_out": timed_out,
        "logged_to_puback_ms": {"p50": p50, "p99": p99},
        "elapsed_seconds": elapsed.as_secs_f64(),
        "per_device": per_device,
    });
    Summary { line, json }
}
