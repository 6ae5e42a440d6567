//! `envaware-sim replay` on a device's session log (`envaware::journal`'s
//! items, in a host's log file or a flash image): every step is decided
//! again and must give what the device decided; the replay prints the
//! hints, which are the device's.

use std::path::{Path, PathBuf};
use std::process::Command;

use envaware::journal::{Event, Journal};
use envaware::{AgentContext, Config, Engine, StepInput, TaskCounts, Timestamp, ToolResultState};
use serde_json::Value;

const SIM: &str = env!("CARGO_BIN_EXE_envaware-sim");
type Context<'a> = AgentContext<'a, 6, 32, 2048>;

/// A device session: the log's items, and each step's hint.
fn device_session(compact_after: Option<usize>) -> (Vec<Vec<u8>>, Vec<Option<String>>) {
    let engine = Engine::new(Config::default()).unwrap();
    let mut context = Context::new(&engine, "Sprout");
    let mut journal = Journal::new(&context);
    let (mut buf, mut hint) = ([0u8; 2048], [0u8; 1024]);
    let n = journal.start(&context, &mut buf).unwrap();
    let mut log = vec![buf[..n].to_vec()];
    let mut hints = Vec::new();
    for round in 0..12u32 {
        record(&mut context, &mut journal, &mut log, Event::User { name: "operator", text: "" });
        for (i, state) in [ToolResultState::Error, ToolResultState::Error, ToolResultState::Error]
            .into_iter()
            .enumerate()
        {
            let input = ["{\"vent\": 2}", "{\"vent\":2}", " {\"vent\": 2}"][i];
            let id = format!("c{round}.{i}");
            record(
                &mut context,
                &mut journal,
                &mut log,
                Event::ToolCall { id: &id, name: "OpenVent", input },
            );
            record(
                &mut context,
                &mut journal,
                &mut log,
                Event::ToolResult { id: &id, name: "OpenVent", state },
            );
            let step = StepInput {
                tasks: TaskCounts { pending: u64::from(round % 3), in_progress: 0 },
                cur_iter: i as u64,
                input_tokens: [900, 7000, 120_000][i],
                context_size: 128_000,
            };
            let now = Some(Timestamp::from_unix_seconds(
                1_784_687_400 + 600 * i64::from(round) + 60 * i as i64,
            ));
            let (outcome, items) =
                journal.step(&mut context, &step, now, &mut (), &mut hint, &mut buf).unwrap();
            hints.push(outcome.hint.map(str::to_string));
            log.extend(items.iter(&buf).map(<[u8]>::to_vec));
        }
        if round % 4 == 3 {
            record(&mut context, &mut journal, &mut log, Event::Compress { keep: 1 });
        }
        if compact_after == Some(round as usize) {
            // As the device does when its region fills: a header, then the
            // items the context no longer needs are popped.
            let dead = journal.dead_items() as usize;
            let n = journal.compaction_header(&context, &mut buf).unwrap();
            log.push(buf[..n].to_vec());
            log.drain(..dead);
            journal.popped(dead as u32);
        }
    }
    (log, hints)
}

fn record(
    context: &mut Context<'_>,
    journal: &mut Journal<6>,
    log: &mut Vec<Vec<u8>>,
    event: Event<'_>,
) {
    let mut buf = [0u8; 512];
    let items = journal.record(context, &event, &mut buf).unwrap();
    log.extend(items.iter(&buf).map(<[u8]>::to_vec));
}

/// The items in a host's log file (`envaware_host::FileLog`), as a host
/// device keeps its session.
fn write_log(name: &str, log: &[Vec<u8>]) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_file(&path);
    let (mut file, _) = envaware_host::FileLog::open(&path, envaware_host::Sync::Never).unwrap();
    log.iter().for_each(|item| file.append(item).unwrap());
    path
}

fn replay(path: &Path) -> std::process::Output {
    Command::new(SIM)
        .args(["replay", "--json", path.to_str().unwrap()])
        .output()
        .expect("run envaware-sim")
}

fn printed_hints(out: &std::process::Output) -> Vec<Option<String>> {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["hint"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_replay_of_a_device_log_decides_the_hints_the_device_appended() {
    let (log, hints) = device_session(None);
    assert!(hints.iter().filter(|h| h.is_some()).count() >= 12, "{hints:?}");
    let printed = printed_hints(&replay(&write_log("device.log", &log)));
    assert_eq!(printed, hints);
}

#[test]
fn a_compacted_log_replays_and_its_steps_after_the_header_are_checked() {
    let (log, hints) = device_session(Some(7));
    let printed = printed_hints(&replay(&write_log("compacted.log", &log)));
    // The log starts at the oldest message the context held: its steps are
    // the session's last ones.
    assert!(printed.len() < hints.len() && printed.len() >= 12, "{}", printed.len());
    assert_eq!(printed, hints[hints.len() - printed.len()..]);
}

#[test]
fn a_decision_the_replay_would_not_make_is_an_error_naming_the_line() {
    let (mut log, _) = device_session(None);
    // A step that told the time alone, with no live field (it ends with
    // its `decided` bits, 1, and no field told): logged as if the tasks
    // had fired too.
    let step = log.iter().rposition(|item| item[0] == 9 && item.ends_with(&[0b01, 0])).unwrap();
    let at = log[step].len() - 2;
    log[step][at] = 0b11;
    let out = replay(&write_log("tampered.log", &log));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#": the device decided {"time":true,"tasks":true}, but the replay decides {"time":true}"#),
        "{err}"
    );
    assert!(err.starts_with("envaware-sim replay: line "), "{err}");
    // A torn tail (a power cut in the last append) is left out, said so.
    let path = write_log("torn.log", &log[..step]);
    let len = std::fs::metadata(&path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len - 3).unwrap();
    let out = replay(&path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bytes are a torn tail"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `log` pushed into sequential-storage's queue over a `pages`-KiB region,
/// as the firmware keeps it; the region's bytes.
fn flash_image(log: &[Vec<u8>], pages: usize) -> Vec<u8> {
    use sequential_storage::cache::Cache;
    use sequential_storage::queue::{QueueConfig, QueueStorage};
    let end = (pages * 1024) as u32;
    let mut queue = QueueStorage::new(
        envaware_sim::flash::RamFlash(vec![0xFF; pages * 1024]),
        QueueConfig::new(0..end),
        Cache::new_uncached(),
    );
    for item in log {
        embassy_futures::block_on(queue.push(item, false)).expect("the region holds the log");
    }
    queue.flash().0.clone()
}

/// issue 21: `replay --flash` reads the log from a raw image of the
/// device's region, as `cargo xtask demo` saves it.
#[test]
fn a_raw_flash_image_of_the_log_replays_to_the_devices_hints() {
    let (log, hints) = device_session(None);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("device-flash.bin");
    std::fs::write(&path, flash_image(&log, 32)).unwrap();
    let out = Command::new(SIM).args(["replay", "--json", "--flash"]).arg(&path).output().unwrap();
    assert_eq!(printed_hints(&out), hints);
    assert!(hints.iter().flatten().count() >= 10);

    // A region that is not whole pages, and one whose queue is damaged.
    std::fs::write(&path, vec![0xFF; 1000]).unwrap();
    let out =
        Command::new(SIM).args(["replay", "--flash", path.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("a flash image of 1000 bytes: expected a whole number of 1024-byte pages"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A flipped byte in item 5: its CRC fails, the queue skips it, and
    // the numbers show the gap.
    let mut damaged = flash_image(&log, 32);
    let at = damaged.windows(log[5].len()).position(|w| w == log[5]).unwrap() + 3;
    damaged[at] ^= 0x01;
    std::fs::write(&path, &damaged).unwrap();
    let out =
        Command::new(SIM).args(["replay", "--flash", path.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("the flash image's item 5: item number 6, expected 5: an item was lost"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The fleet consumer reads a device's items as they arrive
/// (`ItemLines`): item by item, the lines are those of the whole log; a
/// compacted log's items before its header wait for the header's settings.
#[test]
fn items_read_one_by_one_give_the_lines_of_the_whole_log() {
    use envaware_sim::device_log::{trace_lines, ItemLines};
    for compact in [None, Some(7)] {
        let (log, _) = device_session(compact);
        let whole = trace_lines(&log, None).unwrap();
        let mut reader = ItemLines::new();
        let (mut lines, mut most_held) = (String::new(), 0);
        for item in &log {
            lines.push_str(&reader.push(item).unwrap());
            most_held = most_held.max(reader.held());
        }
        assert_eq!(lines, whole, "compacted after round {compact:?}");
        assert_eq!(reader.held(), 0);
        assert_eq!(most_held > 0, compact.is_some(), "{most_held} items held");
    }
    // A lost item is the journal reader's gap, at its position.
    let (mut log, _) = device_session(None);
    log.remove(5);
    let mut reader = ItemLines::new();
    let err = log.iter().map(|item| reader.push(item)).find_map(Result::err).unwrap();
    assert_eq!(err.to_string(), "the log's item 5: item number 6, expected 5: an item was lost");
}
