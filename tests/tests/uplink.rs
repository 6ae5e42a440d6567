//! Issue 37, the device side: the QEMU firmware publishes its session log
//! over UART2 to a real Mosquitto (`-chardev socket,…,reconnect=1`), and
//! `envaware-sim fleet` stores a row per step. Needs QEMU, `defmt-print`,
//! the release image, Mosquitto and the sim (`cargo xtask test` provides
//! them all; plain `cargo test` skips with a message).
//!
//! - every item the board logged reaches the consumer, byte for byte (the
//!   consumer's item log against the board's flash image), and the store
//!   holds one row per step the board took;
//! - with the broker restarted while the board runs, and the board reset
//!   after step 4: still every item, no row twice, nothing lost.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use xtask::mqtt::{self, Broker, Options};
use xtask::needs;
use xtask::qemu::{self, RunOptions, RunResult, EPOCH, TEMPERATURES};

struct Needs {
    qemu: PathBuf,
    defmt_print: PathBuf,
    elf: PathBuf,
    mosquitto: PathBuf,
    sim: PathBuf,
}

fn needs() -> Option<Needs> {
    let elf = needs::or_skip(needs::built_file(
        "ENVAWARE_FIRMWARE_ELF",
        "firmware/target/thumbv7m-none-eabi/release/envaware-firmware",
    ))?;
    Some(Needs {
        qemu: needs::or_skip(needs::tool("ENVAWARE_QEMU", "qemu-system-arm"))?,
        defmt_print: needs::or_skip(needs::tool("ENVAWARE_DEFMT_PRINT", "defmt-print"))?,
        elf,
        mosquitto: needs::or_skip(mqtt::find())?,
        sim: needs::or_skip(needs::sim_binary())?,
    })
}

/// The consumer, a child process killed if still running when dropped,
/// and its standard error as it comes.
struct Consumer(Child, std::sync::Arc<std::sync::Mutex<String>>);

impl Consumer {
    /// Started before the board; it stops once the items `until` names
    /// (written when the board is done) are in, or after a minute with
    /// nothing (a board that stalled).
    fn start(sim: &Path, port: u16, store: &Path, summary: &Path, until: &Path) -> Consumer {
        let mut child = Command::new(sim)
            .args(["fleet", "--broker", &format!("127.0.0.1:{port}"), "--store"])
            .arg(store)
            .args(["--idle-exit", "60", "--flush-secs", "0.2", "--until"])
            .arg(until)
            .arg("--summary-json")
            .arg(summary)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start envaware-sim fleet");
        let err = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("stderr");
        let into = err.clone();
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                into.lock().expect("stderr").push_str(&(line + "\n"));
            }
        });
        // Its session (the subscription) exists before the board publishes.
        let started = Instant::now();
        while !err.lock().expect("stderr").contains("fleet: subscribed to ") {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "not subscribed: {}",
                err.lock().expect("stderr")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Consumer(child, err)
    }

    /// Its summary JSON, once it stopped by itself, after `device`'s
    /// items up to the last the board logged are in (the board's uplink
    /// line says how many: `items up to X of Y`).
    fn finish(
        mut self,
        summary: &Path,
        until: &Path,
        device: &str,
        run: &RunResult,
    ) -> serde_json::Value {
        let of = uplink_line(run)
            .split(" of ")
            .nth(1)
            .and_then(|t| t.split(')').next()?.parse::<u32>().ok())
            .expect("the board's uplink line");
        let partial = until.with_extension("part");
        std::fs::write(&partial, format!("{device} {}\n", of.saturating_sub(1))).expect("until");
        std::fs::rename(&partial, until).expect("until");
        let started = Instant::now();
        while self.0.try_wait().expect("wait").is_none() {
            assert!(started.elapsed() < Duration::from_secs(120), "the consumer did not stop");
            std::thread::sleep(Duration::from_millis(100));
        }
        let err = self.1.lock().expect("stderr").clone();
        let text = std::fs::read_to_string(summary)
            .unwrap_or_else(|e| panic!("{}: {e}\n{err}", summary.display()));
        serde_json::from_str(&text).expect("the summary's JSON")
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn options(n: &Needs, port: u16, device: &str, reset_after: Option<usize>) -> RunOptions {
    RunOptions {
        qemu: n.qemu.clone(),
        defmt_print: n.defmt_print.clone(),
        elf: n.elf.clone(),
        sensor: true,
        temperatures_milli: TEMPERATURES.to_vec(),
        timeout: Duration::from_secs(300),
        echo: false,
        epoch: Some(EPOCH),
        reset_after,
        environment_milli: Vec::new(),
        model_port: None,
        model_stream: false,
        broker_port: Some(port),
        device: Some(device.to_string()),
        steps: None,
        live: None,
    }
}

/// The steps the board took: scripted and environment steps, from its log.
fn board_steps(run: &RunResult) -> usize {
    run.log
        .lines()
        .filter(|l| l.starts_with("=== step") || l.starts_with("=== environment"))
        .count()
}

/// The items of the board's flash image, oldest first (the queue's).
fn flash_items(image: &[u8]) -> Vec<Vec<u8>> {
    let region = envaware_flashlog::queue_region(image).to_vec();
    let mut region = region;
    let mut log = envaware_flashlog::SessionLog::new(envaware_flashlog::RamFlash(&mut region[..]));
    let mut items = Vec::new();
    let mut buf = [0u8; envaware_flashlog::MAX_ITEM];
    embassy_futures::block_on(log.read_items(&mut buf, |item| {
        items.push(item.to_vec());
        Ok::<(), ()>(())
    }))
    .expect("the flash image reads");
    items
}

/// The consumer's copy of `device`'s items (its `FileLog`).
fn consumer_items(store: &Path, device: &str) -> Vec<Vec<u8>> {
    let path = store.join("items").join(format!("{device}.log"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let records = envaware_host::read_records(&bytes).expect("the consumer's item log");
    records.items.iter().map(|r| bytes[r.clone()].to_vec()).collect()
}

/// The uplink's report at the end of the board's log: delivered up to, of.
fn uplink_line(run: &RunResult) -> &str {
    run.log.lines().find(|l| l.contains("uplink: ") && l.contains("items delivered")).unwrap_or("")
}

#[test]
fn the_board_publishes_its_log_and_the_fleet_stores_a_row_per_step() {
    let Some(n) = needs() else { return };
    let dir = needs::workspace().join("tests/out/uplink-plain");
    let _ = std::fs::remove_dir_all(&dir);
    let broker = Broker::start(&n.mosquitto, &dir.join("broker"), &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let (store, summary, until) = (dir.join("store"), dir.join("summary.json"), dir.join("until"));
    let consumer = Consumer::start(&n.sim, broker.port(), &store, &summary, &until);
    let run = qemu::run(&options(&n, broker.port(), "qemu-1", None)).expect("the QEMU run");
    assert_eq!(run.status, Some(0), "{}", run.log);
    let summary = consumer.finish(&summary, &until, "qemu-1", &run);
    let steps = board_steps(&run);
    let line = uplink_line(&run);
    assert!(line.contains(" 0 lost"), "{line}\n{}", run.log);
    // Every item the board logged, byte for byte, in the consumer's log.
    let image = run.flash_log.as_deref().expect("the board's flash image");
    let board = flash_items(image);
    let kept = consumer_items(&store, "qemu-1");
    assert_eq!(kept, board, "{summary}");
    assert_eq!(summary["rows"], steps as u64, "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    assert!(line.contains(&format!("items up to {} of {}", board.len(), board.len())), "{line}");
    eprintln!("{line}");
}

#[test]
fn a_broker_restart_and_a_board_reset_lose_nothing_and_store_no_row_twice() {
    let Some(n) = needs() else { return };
    let dir = needs::workspace().join("tests/out/uplink-faults");
    let _ = std::fs::remove_dir_all(&dir);
    let persist = Options { persistence: true, autosave_secs: 1, ..Options::default() };
    let mut broker = Broker::start(&n.mosquitto, &dir.join("broker"), &persist)
        .unwrap_or_else(|e| panic!("{e}"));
    let (store, summary, until) = (dir.join("store"), dir.join("summary.json"), dir.join("until"));
    let consumer = Consumer::start(&n.sim, broker.port(), &store, &summary, &until);
    let opts = options(&n, broker.port(), "qemu-2", Some(4));
    let board = std::thread::spawn(move || qemu::run(&opts));
    // The broker goes away while the board runs, and comes back on its port.
    std::thread::sleep(Duration::from_secs(4));
    broker.restart().unwrap_or_else(|e| panic!("{e}"));
    let run = board.join().expect("the board's thread").expect("the QEMU run");
    assert_eq!(run.status, Some(0), "{}", run.log);
    assert!(run.log.contains("resetting the MCU after step 4"), "{}", run.log);
    let summary = consumer.finish(&summary, &until, "qemu-2", &run);
    let line = uplink_line(&run);
    assert!(line.contains(" 0 lost"), "{line}");
    let image = run.flash_log.as_deref().expect("the board's flash image");
    let kept = consumer_items(&store, "qemu-2");
    assert_eq!(kept, flash_items(image), "{summary}");
    // A row per step: the steps before the reset and after it.
    assert_eq!(summary["rows"], board_steps(&run) as u64, "{summary}\n{}", run.log);
    assert_eq!(summary["failed"], 0, "{summary}");
    eprintln!("{line}; consumer: {summary}");
}
