//! One device as the consumer follows it: its items kept in order (a
//! duplicate recognised, a gap refused), each verified by the replay as it
//! comes, and the rows of its steps waiting to be written.

use std::path::{Path, PathBuf};
use std::time::Instant;

use envaware::journal::{ItemKind, ItemReader};
use envaware_host::{FileLog, Sync};
use envaware_sim::device_log::ItemLines;

use crate::record::{self, StepRecord};
use crate::replay::DeviceReplay;
use envaware_sim::fleet_store::{self as store, Reading, StepRow};

/// When an item came: the monotonic clock (for the latency) and the wall
/// clock in microseconds since the epoch (the row's `received_at`).
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// When it came, on the monotonic clock.
    pub at: Instant,
    /// When it came, on the wall clock.
    pub wall: i64,
}

impl Arrival {
    /// Now.
    pub fn now() -> Self {
        Arrival { at: Instant::now(), wall: now_micros() }
    }
}

/// What became of an item received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// The next item: kept (appended to the device's item log, not yet
    /// synced).
    Kept,
    /// An item kept before, the same bytes again: dropped.
    Duplicate,
    /// Not kept: the device's log is refused from here on (its reason is
    /// [`Device::failed`]).
    Refused,
}

/// Why a device's items stopped being kept or its steps stopped being
/// stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Items are missing: the first and last missing numbers, and the one
    /// received after the last kept.
    Gap { first: u32, last: u32, received: u32 },
    /// An item number came again with other bytes.
    Changed { number: u32 },
    /// The item's own number (its low 16 bits, a header's whole) is not the
    /// message's.
    Misnumbered { number: u32, found: String },
    /// The replay refused an item (verification): the item and why.
    Replay { number: u32, message: String },
    /// An earlier run refused the log (`items/<device>.refused` says why).
    Earlier(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Gap { first, last, received } if first == last => write!(
                f,
                "item {first} is missing (item {received} came after item {})",
                first.wrapping_sub(1)
            ),
            Failure::Gap { first, last, received } => write!(
                f,
                "items {first} to {last} are missing (item {received} came after item {})",
                first.wrapping_sub(1)
            ),
            Failure::Changed { number } => {
                write!(f, "item {number} came again with other bytes than the item kept")
            }
            Failure::Misnumbered { number, found } => {
                write!(f, "the message says item {number}, but the item says {found}")
            }
            Failure::Replay { number, message } => write!(f, "item {number}: {message}"),
            Failure::Earlier(why) => f.write_str(why),
        }
    }
}

/// A device followed by the consumer.
#[derive(Debug)]
pub struct Device {
    id: String,
    /// The items kept, oldest first (`first` is the first's number).
    log: FileLog,
    first: Option<u32>,
    /// Where the first item's number is kept.
    first_path: PathBuf,
    lines: ItemLines,
    replay: DeviceReplay,
    /// Set once the device's log is refused: nothing after it is kept or
    /// stored.
    failed: Option<Failure>,
    /// The last step item the store holds.
    committed: Option<u32>,
    /// Kept items not yet through the replay: number, and when it came
    /// (`None` for items read back at start).
    unread: Vec<(u32, Option<Arrival>)>,
    /// Rows waiting to be written, in order, and when each one's item came.
    pending: Vec<StepRow>,
    arrivals: Vec<Option<Instant>>,
    /// Whether items were appended since the last sync.
    unsynced: bool,
}

/// What opening a device found.
#[derive(Debug, Default, Clone, Copy)]
pub struct Reopened {
    /// Items read back from its item log.
    pub items: usize,
    /// Bytes of a torn tail cut from its item log.
    pub torn: u64,
    /// Rows the store already held.
    pub committed: Option<u32>,
    /// Unfinished files a stopped run left, removed.
    pub removed: usize,
}

impl Device {
    /// Opens (or creates) the device's item log in `store`, finds what the
    /// store holds of its steps, and replays the items kept: rows for the
    /// steps the store lacks are pending after this.
    ///
    /// # Errors
    ///
    /// The item log or the store cannot be read or written.
    pub fn open(store: &Path, id: &str) -> Result<(Device, Reopened), String> {
        let dir = store.join("items");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (log, opened) =
            FileLog::open(dir.join(format!("{id}.log")), Sync::Never).map_err(|e| e.to_string())?;
        let first_path = dir.join(format!("{id}.first"));
        // With no item kept, the number is written again with the first.
        let first =
            match std::fs::read_to_string(&first_path) {
                _ if log.is_empty() => None,
                Ok(text) => Some(text.trim().parse::<u32>().map_err(|_| {
                    format!("{}: not an item number: {text:?}", first_path.display())
                })?),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(format!("{}: {e}", first_path.display())),
            };
        if first.is_none() && !log.is_empty() {
            return Err(format!(
                "{}: {} items and no {} (the first item's number)",
                log.path().display(),
                log.len(),
                first_path.display()
            ));
        }
        let committed = store::committed(store, id).map_err(|e| e.to_string())?;
        let items = log.len();
        let mut device = Device {
            id: id.to_string(),
            log,
            first,
            first_path,
            lines: ItemLines::new(),
            replay: DeviceReplay::new(),
            failed: None,
            committed: committed.last,
            unread: Vec::new(),
            pending: Vec::new(),
            arrivals: Vec::new(),
            unsynced: false,
        };
        let numbers = first.map(|f| (0..items).map(move |i| f.wrapping_add(i as u32)));
        device.unread = numbers.into_iter().flatten().map(|n| (n, None)).collect();
        // The rows the store lacks, up to where an earlier run refused the
        // log (a replay's refusal is found again; a gap is not).
        device.verify()?;
        let refused = device.first_path.with_extension("refused");
        if device.failed.is_none() {
            match std::fs::read_to_string(&refused) {
                Ok(text) => device.failed = Some(Failure::Earlier(text.trim().to_string())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{}: {e}", refused.display())),
            }
        }
        let reopened = Reopened {
            items,
            torn: opened.torn.map_or(0, |t| t.dropped_bytes),
            committed: committed.last,
            removed: committed.removed,
        };
        Ok((device, reopened))
    }

    /// Why its log is refused, if it is.
    pub fn failed(&self) -> Option<&Failure> {
        self.failed.as_ref()
    }

    /// The number of the last item kept.
    pub fn last(&self) -> Option<u32> {
        let first = self.first?;
        let len = u32::try_from(self.log.len()).ok()?;
        (len > 0).then(|| first.wrapping_add(len - 1))
    }

    /// Steps replayed so far (this run's and the items read back).
    pub fn steps(&self) -> usize {
        self.replay.summary().steps
    }

    /// Items held by the replay until a header with the configuration comes.
    pub fn held(&self) -> usize {
        self.lines.held()
    }

    /// Takes item `number` (`received` when it came): kept when it is the
    /// next, dropped when it was kept before, and the log refused on a gap
    /// or an item that is not what it says.
    ///
    /// # Errors
    ///
    /// The item log cannot be written (the consumer cannot go on).
    pub fn receive(
        &mut self,
        number: u32,
        item: &[u8],
        received: Arrival,
    ) -> Result<Received, String> {
        if self.failed.is_some() {
            return Ok(Received::Refused);
        }
        if let (Some(first), Some(last)) = (self.first, self.last()) {
            let next = last.wrapping_add(1);
            // Numbers count modulo 2^32: "before" is within half of it.
            let ahead = number.wrapping_sub(next) as i32;
            if ahead < 0 {
                let kept = self.log.get(number.wrapping_sub(first) as usize);
                return Ok(match kept {
                    Some(kept) if kept != item => {
                        self.fail(Failure::Changed { number })?;
                        Received::Refused
                    }
                    // Before the first item kept: a device re-publishing
                    // what this consumer never had, dropped as old.
                    _ => Received::Duplicate,
                });
            }
            if ahead > 0 {
                let last_missing = number.wrapping_sub(1);
                self.fail(Failure::Gap { first: next, last: last_missing, received: number })?;
                return Ok(Received::Refused);
            }
        }
        if let Some(found) = misnumbered(number, item) {
            self.fail(Failure::Misnumbered { number, found })?;
            return Ok(Received::Refused);
        }
        if self.log.is_empty() {
            // Kept before the first item, so that a restart knows the numbers.
            let text = format!("{number}\n");
            std::fs::write(&self.first_path, text)
                .and_then(|()| std::fs::File::open(&self.first_path)?.sync_all())
                .map_err(|e| format!("{}: {e}", self.first_path.display()))?;
            self.first = Some(number);
        }
        self.log.append(item).map_err(|e| e.to_string())?;
        self.unsynced = true;
        self.unread.push((number, Some(received)));
        Ok(Received::Kept)
    }

    /// Puts the items kept on disk (when `sync`), then replays them: rows
    /// for their steps are pending after this.
    ///
    /// # Errors
    ///
    /// The item log cannot be synced.
    pub fn commit(&mut self, sync: bool) -> Result<(), String> {
        if sync && self.unsynced {
            self.log.sync().map_err(|e| e.to_string())?;
        }
        self.unsynced = false;
        self.verify()
    }

    /// Refuses the device's log from here on, and says so in the store
    /// (`items/<device>.refused`), so that a restarted consumer refuses it
    /// with the same reason, whatever it receives then.
    fn fail(&mut self, failure: Failure) -> Result<(), String> {
        let path = self.first_path.with_extension("refused");
        std::fs::write(&path, format!("{failure}\n"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        self.failed = Some(failure);
        Ok(())
    }

    /// Replays the unread items; on the first the replay refuses, the
    /// device fails there (and the items after it are not replayed).
    fn verify(&mut self) -> Result<(), String> {
        let (Some(first), unread) = (self.first, std::mem::take(&mut self.unread)) else {
            return Ok(());
        };
        // Items kept before a refusal are good: a gap refuses what follows.
        for (number, received) in unread {
            let Some(item) = self.log.get(number.wrapping_sub(first) as usize) else {
                return Ok(());
            };
            let lines = match self.lines.push(item) {
                Ok(lines) => lines,
                Err(e) => return self.fail(Failure::Replay { number, message: e.to_string() }),
            };
            if lines.is_empty() {
                continue;
            }
            let records = match self.replay.feed(&lines) {
                Ok(records) => records,
                Err(e) => {
                    let message = match e {
                        crate::replay::ReplayError::Invalid { message, .. } => message,
                        other => other.to_string(),
                    };
                    return self.fail(Failure::Replay { number, message });
                }
            };
            for (number, record) in records {
                if self.committed.is_some_and(|c| number.wrapping_sub(c) as i32 <= 0) {
                    continue;
                }
                self.pending.push(row(number, &record, received.map(|r| r.wall)));
                self.arrivals.push(received.map(|r| r.at));
            }
        }
        Ok(())
    }

    /// Rows waiting to be written.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Writes the pending rows to the store: the files written, and when
    /// each row's item came (for the latency).
    ///
    /// # Errors
    ///
    /// The store cannot be written (the rows stay pending).
    pub fn flush(&mut self, store: &Path) -> Result<(usize, Vec<Option<Instant>>), String> {
        if self.pending.is_empty() {
            return Ok((0, Vec::new()));
        }
        let files = store::write_rows(store, &self.id, &self.pending, now_micros())
            .map_err(|e| e.to_string())?;
        self.committed = self.pending.last().map(|r| r.number);
        self.pending.clear();
        Ok((files, std::mem::take(&mut self.arrivals)))
    }
}

/// When the item's own number disagrees with the message's: what the item
/// says (its low 16 bits, or a header's whole number), read by the
/// journal's reader of items.
fn misnumbered(number: u32, item: &[u8]) -> Option<String> {
    let head = match ItemReader::new().read(item) {
        Ok(head) => head,
        Err(e) => return Some(format!("no number: {}", e.kind)),
    };
    if head.seq != number as u16 {
        return Some(format!("{} in its low 16 bits", head.seq));
    }
    // A reader's first item that is a header gives its whole number.
    match head.number {
        Some(whole) if head.kind == ItemKind::Header && whole != number => Some(whole.to_string()),
        _ => None,
    }
}

/// Now, in microseconds since the Unix epoch.
pub fn now_micros() -> i64 {
    let since =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}

/// The row of a step the replay ran.
fn row(number: u32, r: &StepRecord, received_at: Option<i64>) -> StepRow {
    let mut readings: Vec<Reading> = r
        .watches
        .iter()
        .map(|w| {
            let known = w.reading != envaware::UNAVAILABLE;
            Reading {
                field: w.field.clone(),
                kind: "read",
                text: known.then(|| w.reading.clone()),
                value: w.value,
                above: w.above,
                below: w.below,
            }
        })
        .collect();
    readings.extend(r.told.iter().map(|(field, text)| {
        let watch = r.watches.iter().find(|w| &w.field == field);
        Reading {
            field: field.clone(),
            kind: "told",
            text: Some(text.clone()),
            value: envaware::Decimal::leading(text.bytes()).map(|(d, _)| record::approx(d)),
            above: watch.and_then(|w| w.above),
            below: watch.and_then(|w| w.below),
        }
    }));
    let watch = r.watches.iter().any(|w| w.fired);
    let watches = r
        .watches
        .iter()
        .filter_map(|w| {
            let why = match (w.fired, w.heartbeat, w.throttled) {
                (true, true, _) => "heartbeat",
                (true, false, _) => "value",
                (false, _, true) => "throttled",
                _ => return None,
            };
            Some(format!("{}:{why}", w.field))
        })
        .collect();
    StepRow {
        number,
        instant: r.clock.map(envaware::Timestamp::unix_micros),
        cur_iter: r.cur_iter,
        input_tokens: r.input_tokens,
        context_size: r.context_size,
        tasks_pending: r.task_counts.0,
        tasks_in_progress: r.task_counts.1,
        time: r.time,
        tasks: r.tasks.is_some(),
        context_length: r.context_length,
        tool_error: r.tool_error.is_some(),
        tool_error_count: r.tool_error,
        watch,
        watches,
        hint: r.hint.clone(),
        checked: r.checked,
        received_at,
        written_at: None,
        readings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envaware::journal::{Event, ItemStore, Session};
    use envaware::{ConfigBuf, Engine, StepInput, TaskCounts, Timestamp, ToolResultState};
    use envaware_host::block_on;

    struct Items(Vec<Vec<u8>>);
    impl ItemStore for Items {
        type Error = core::convert::Infallible;
        async fn append(&mut self, item: &[u8]) -> Result<(), Self::Error> {
            self.0.push(item.to_vec());
            Ok(())
        }
    }

    /// A step's item number and hint.
    type Steps = (u32, Option<String>);

    /// A device's session: its items (item `i` is number `i`), and each
    /// step's item number and hint. Runs of three failed calls make the
    /// tool error fire; a small context makes the log note evictions.
    fn session(steps: u32) -> (Vec<Vec<u8>>, Vec<Steps>) {
        let mut config = ConfigBuf::<2048, 8, 8>::with_capacity();
        let loaded = config
            .load_session(r#"{"agent_name": "Sprout", "injection_config": {"timezone": "UTC", "time_interval": 0.1}}"#)
            .unwrap();
        let engine = Engine::new(loaded.config).unwrap();
        let mut s: Session<'_, 6, 32, 2048> = Session::new(&engine, loaded.agent_name);
        let (mut log, mut buf, mut hint) = (Items(Vec::new()), [0u8; 2048], [0u8; 1024]);
        block_on(s.start(&mut buf, &mut log)).unwrap();
        let mut out = Vec::new();
        for n in 0..steps {
            if n % 4 == 0 {
                block_on(s.record(&Event::User { name: "op", text: "" }, &mut buf, &mut log))
                    .unwrap();
            }
            let id = format!("c{n}");
            let call = Event::ToolCall { id: &id, name: "Drive", input: "{\"m\": 1}" };
            block_on(s.record(&call, &mut buf, &mut log)).unwrap();
            let state = if n % 8 < 4 { ToolResultState::Error } else { ToolResultState::Success };
            let result = Event::ToolResult { id: &id, name: "Drive", state };
            block_on(s.record(&result, &mut buf, &mut log)).unwrap();
            let input = StepInput {
                tasks: TaskCounts { pending: u64::from(n / 8 % 2), in_progress: 0 },
                cur_iter: u64::from(n % 4),
                input_tokens: 900,
                context_size: 8192,
            };
            let now = Some(Timestamp::from_unix_seconds(1_796_000_000 + 100 * i64::from(n)));
            let before = log.0.len();
            let outcome =
                block_on(s.step(&input, now, &mut (), &mut hint, &mut buf, &mut log)).unwrap();
            let number = (before..log.0.len()).find(|&i| log.0[i][0] == 9).unwrap() as u32;
            out.push((number, outcome.hint.map(str::to_string)));
        }
        (log.0, out)
    }

    fn store(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("envaware-fleet-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn stored(store: &Path, id: &str) -> Vec<Steps> {
        let rows = store::read_device(store, id).unwrap();
        rows.into_iter().map(|r| (r.number, r.hint)).collect()
    }

    #[test]
    fn items_in_order_with_duplicates_give_one_row_per_step() {
        let (items, steps) = session(24);
        assert!(
            steps
                .iter()
                .filter(|(_, h)| h.as_deref().is_some_and(|h| h.contains("<tool-error>")))
                .count()
                >= 3
        );
        let dir = store("order");
        let (mut device, _) = Device::open(&dir, "dev-1").unwrap();
        for (i, item) in items.iter().enumerate() {
            let n = i as u32;
            assert_eq!(device.receive(n, item, Arrival::now()).unwrap(), Received::Kept);
            if i % 3 == 0 {
                // Again, as a device re-publishing does, and an old one.
                assert_eq!(device.receive(n, item, Arrival::now()).unwrap(), Received::Duplicate);
                assert_eq!(
                    device.receive(n / 2, &items[i / 2], Arrival::now()).unwrap(),
                    Received::Duplicate
                );
            }
            if i % 10 == 9 {
                device.commit(true).unwrap();
            }
        }
        device.commit(true).unwrap();
        assert_eq!(device.failed(), None);
        assert_eq!(device.pending(), steps.len());
        assert_eq!(device.flush(&dir).unwrap().1.len(), steps.len());
        assert_eq!(stored(&dir, "dev-1"), steps);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_reopened_device_writes_only_the_rows_its_store_lacks() {
        let (items, steps) = session(24);
        let dir = store("reopen");
        let (mut device, _) = Device::open(&dir, "dev-1").unwrap();
        let third = items.len() / 3;
        for (i, item) in items[..third].iter().enumerate() {
            device.receive(i as u32, item, Arrival::now()).unwrap();
        }
        device.commit(true).unwrap();
        let written = device.flush(&dir).unwrap().1.len();
        assert!(written > 0);
        // Kept and replayed, not yet written: a kill loses the rows only.
        for (i, item) in items.iter().enumerate().take(2 * third).skip(third) {
            device.receive(i as u32, item, Arrival::now()).unwrap();
        }
        device.commit(true).unwrap();
        assert!(device.pending() > 0);
        drop(device);

        let (mut device, reopened) = Device::open(&dir, "dev-1").unwrap();
        assert_eq!(reopened.items, 2 * third);
        assert_eq!(reopened.committed, Some(steps[written - 1].0));
        let owed = steps.iter().filter(|(n, _)| (*n as usize) < 2 * third).count() - written;
        assert_eq!(device.pending(), owed);
        // What the broker sends again is recognised; the rest goes on.
        for (i, item) in items.iter().enumerate().skip(third) {
            let expected = if i < 2 * third { Received::Duplicate } else { Received::Kept };
            assert_eq!(
                device.receive(i as u32, item, Arrival::now()).unwrap(),
                expected,
                "item {i}"
            );
        }
        device.commit(true).unwrap();
        device.flush(&dir).unwrap();
        assert_eq!(stored(&dir, "dev-1"), steps);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_gap_a_changed_item_or_a_misnumbered_one_refuses_the_log_and_a_restart_says_so_again() {
        let (items, steps) = session(12);
        let dir = store("refuse");
        let take = |id: &str, plan: &[(u32, &[u8])]| -> Device {
            let (mut device, _) = Device::open(&dir, id).unwrap();
            for (n, item) in plan {
                device.receive(*n, item, Arrival::now()).unwrap();
            }
            device.commit(true).unwrap();
            device.flush(&dir).unwrap();
            device
        };
        let mut plan: Vec<(u32, &[u8])> =
            items.iter().enumerate().map(|(i, b)| (i as u32, &b[..])).collect();
        plan.retain(|(n, _)| !(7..=9).contains(n));
        let gap = take("gap", &plan);
        assert_eq!(
            gap.failed().unwrap().to_string(),
            "items 7 to 9 are missing (item 10 came after item 6)"
        );
        let rows = stored(&dir, "gap");
        assert_eq!(rows, steps.iter().filter(|(n, _)| *n < 7).cloned().collect::<Vec<_>>());

        let mut changed = items[3].clone();
        *changed.last_mut().unwrap() ^= 1;
        let plan: Vec<(u32, &[u8])> =
            vec![(0, &items[0]), (1, &items[1]), (2, &items[2]), (3, &items[3]), (3, &changed)];
        let device = take("changed", &plan);
        assert_eq!(
            device.failed().unwrap().to_string(),
            "item 3 came again with other bytes than the item kept"
        );

        let device = take("misnumbered", &[(0, &items[0]), (1, &items[2])]);
        assert_eq!(
            device.failed().unwrap().to_string(),
            "the message says item 1, but the item says 2 in its low 16 bits"
        );

        // A restart refuses the gap's log for the same reason, whatever comes.
        let (mut again, _) = Device::open(&dir, "gap").unwrap();
        assert_eq!(again.failed().unwrap().to_string(), gap.failed().unwrap().to_string());
        assert_eq!(again.receive(7, &items[7], Arrival::now()).unwrap(), Received::Refused);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
