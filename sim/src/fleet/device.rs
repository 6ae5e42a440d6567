//! One device as the consumer follows it: its items kept in order (a
//! duplicate recognised, a gap refused unless the device declared it
//! lost), each verified by the replay as it comes, and the rows of its
//! steps waiting to be written.

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
    /// The device declared items lost, but items before them never came:
    /// the first and last missing, and the declared numbers `from..to`.
    GapBeforeLoss { first: u32, last: u32, from: u32, to: u32 },
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
            Failure::GapBeforeLoss { first, last, from, to } => write!(
                f,
                "items {first} to {last} are missing before the items {from} to {} the device declared lost",
                to.wrapping_sub(1)
            ),
            Failure::Earlier(why) => f.write_str(why),
        }
    }
}

/// Numbers the device declared lost (`envaware/<device>/lost`), that
/// this consumer never kept: `from..to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// The first number lost.
    pub from: u32,
    /// The number after the last lost.
    pub to: u32,
}

impl Gap {
    /// How many numbers it holds.
    pub fn len(&self) -> u32 {
        self.to.wrapping_sub(self.from)
    }
}

/// What became of a declared loss.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declared {
    /// Numbers no item of which was kept: lost, the gap accepted.
    Lost(u32),
    /// Nothing new (declared before, or every item of it kept).
    Known,
    /// The device's log is refused (already, or now: items before the
    /// declared ones never came).
    Refused,
}

/// A device followed by the consumer.
#[derive(Debug)]
pub struct Device {
    id: String,
    /// The items kept, oldest first (`first` is the first's number; the
    /// numbers after it run on, but for the gaps).
    log: FileLog,
    first: Option<u32>,
    /// Where the first item's number is kept.
    first_path: PathBuf,
    /// The numbers declared lost that were never kept, in order, each
    /// after the items kept before it (`items/<device>.lost`).
    gaps: Vec<Gap>,
    lines: ItemLines,
    replay: DeviceReplay,
    /// The last item number through the replay: an item after a gap
    /// starts a new replay.
    replayed: Option<u32>,
    /// Steps the replays before the last gap ran.
    steps_before: usize,
    /// Replays started again after a gap.
    resumed: usize,
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
        let first = match log.is_empty() {
            true => None,
            false => read_optional(&first_path)?
                .map(|text| {
                    text.trim().parse::<u32>().map_err(|_| {
                        format!("{}: not an item number: {text:?}", first_path.display())
                    })
                })
                .transpose()?,
        };
        if first.is_none() && !log.is_empty() {
            return Err(format!(
                "{}: {} items and no {} (the first item's number)",
                log.path().display(),
                log.len(),
                first_path.display()
            ));
        }
        let gaps = read_gaps(&first_path.with_extension("lost"))?;
        // Declared lost before any item was kept: the numbers start there.
        let first = first.or(gaps.first().map(|g| g.from));
        let committed = store::committed(store, id).map_err(|e| e.to_string())?;
        let items = log.len();
        let mut device = Device {
            id: id.to_string(),
            log,
            first,
            first_path,
            gaps,
            lines: ItemLines::new(),
            replay: DeviceReplay::new(),
            replayed: None,
            steps_before: 0,
            resumed: 0,
            failed: None,
            committed: committed.last,
            unread: Vec::new(),
            pending: Vec::new(),
            arrivals: Vec::new(),
            unsynced: false,
        };
        device.unread = (0..items).filter_map(|i| Some((device.number_at(i)?, None))).collect();
        // The rows the store lacks, up to where an earlier run refused the
        // log (a replay's refusal is found again; a gap is not).
        device.verify()?;
        let refused = device.first_path.with_extension("refused");
        if device.failed.is_none() {
            if let Some(text) = read_optional(&refused)? {
                device.failed = Some(Failure::Earlier(text.trim().to_string()));
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

    /// The number after the last item kept or declared lost.
    fn next(&self) -> Option<u32> {
        let len = u32::try_from(self.log.len()).ok()?;
        Some(self.first?.wrapping_add(len).wrapping_add(self.lost()))
    }

    /// The number of the last item kept or declared lost.
    pub fn last(&self) -> Option<u32> {
        let (first, next) = (self.first?, self.next()?);
        (next != first).then(|| next.wrapping_sub(1))
    }

    /// Where item `number` is in the item log: `None` before the first,
    /// after the last, or declared lost.
    fn index_of(&self, number: u32) -> Option<usize> {
        let first = self.first?;
        let at = number.wrapping_sub(first);
        let mut lost = 0u32;
        for gap in &self.gaps {
            let (from, to) = (gap.from.wrapping_sub(first), gap.to.wrapping_sub(first));
            if at < from {
                break;
            }
            if at < to {
                return None;
            }
            lost += gap.len();
        }
        usize::try_from(at - lost).ok().filter(|&i| i < self.log.len())
    }

    /// The number of the item at `index` of the item log.
    fn number_at(&self, index: usize) -> Option<u32> {
        let first = self.first?;
        let mut at = u32::try_from(index).ok()?;
        for gap in &self.gaps {
            if at < gap.from.wrapping_sub(first) {
                break;
            }
            at += gap.len();
        }
        Some(first.wrapping_add(at))
    }

    /// Steps replayed so far (this run's and the items read back).
    pub fn steps(&self) -> usize {
        self.steps_before + self.replay.summary().steps
    }

    /// Numbers declared lost that were never kept.
    pub fn lost(&self) -> u32 {
        self.gaps.iter().map(Gap::len).sum()
    }

    /// The gaps declared lost.
    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    /// Replays started again after a gap.
    pub fn resumed(&self) -> usize {
        self.resumed
    }

    /// Takes the device's word that items `from..to` are lost (its log
    /// dropped them undelivered): the numbers from the next expected up
    /// to `to` become a gap the device's items may jump (kept in
    /// `items/<device>.lost`, synced before the message is acknowledged).
    /// Items kept from them stay; an item of a declared gap that comes
    /// anyway is dropped as a duplicate.
    ///
    /// # Errors
    ///
    /// The store cannot be written.
    pub fn declare_lost(&mut self, from: u32, to: u32) -> Result<Declared, String> {
        if self.failed.is_some() {
            return Ok(Declared::Refused);
        }
        let span = to.wrapping_sub(from) as i32;
        if span <= 0 {
            return Ok(Declared::Known);
        }
        let next = match self.next() {
            Some(next) => next,
            None => {
                self.first = Some(from);
                from
            }
        };
        // Numbers count modulo 2^32: "before" is within half of it.
        if (from.wrapping_sub(next) as i32) > 0 {
            let last = from.wrapping_sub(1);
            self.fail(Failure::GapBeforeLoss { first: next, last, from, to })?;
            return Ok(Declared::Refused);
        }
        if (to.wrapping_sub(next) as i32) <= 0 {
            return Ok(Declared::Known);
        }
        let gap = Gap { from: next, to };
        let path = self.first_path.with_extension("lost");
        let line = format!("{} {}\n", gap.from, gap.to);
        let written = std::fs::OpenOptions::new().create(true).append(true).open(&path).and_then(
            |mut file| {
                std::io::Write::write_all(&mut file, line.as_bytes())?;
                file.sync_all()
            },
        );
        written.map_err(|e| format!("{}: {e}", path.display()))?;
        self.gaps.push(gap);
        Ok(Declared::Lost(gap.len()))
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
        if let Some(next) = self.next() {
            // Numbers count modulo 2^32: "before" is within half of it.
            let ahead = number.wrapping_sub(next) as i32;
            if ahead < 0 {
                let kept = self.index_of(number).and_then(|i| self.log.get(i));
                return Ok(match kept {
                    Some(kept) if kept != item => {
                        self.fail(Failure::Changed { number })?;
                        Received::Refused
                    }
                    // Before the first item kept: a device re-publishing
                    // what this consumer never had, dropped as old; or
                    // one the device declared lost.
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
            // Kept before the first item, so that a restart knows the
            // numbers (the first is a declared gap's, if one came first).
            let first = *self.first.get_or_insert(number);
            let text = format!("{first}\n");
            std::fs::write(&self.first_path, text)
                .and_then(|()| std::fs::File::open(&self.first_path)?.sync_all())
                .map_err(|e| format!("{}: {e}", self.first_path.display()))?;
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
        let unread = std::mem::take(&mut self.unread);
        // Items kept before a refusal are good: a gap refuses what follows.
        for (number, received) in unread {
            let Some(item) = self.index_of(number).and_then(|i| self.log.get(i)) else {
                return Ok(());
            };
            // After a declared gap the replay starts again, as on a
            // compacted log: the items before the next header that
            // carries the settings are held, then replayed (their steps
            // not checked), and from that header on every step is.
            if self.replayed.is_some_and(|r| r.wrapping_add(1) != number) {
                self.steps_before += self.replay.summary().steps;
                self.lines = ItemLines::new();
                self.replay = DeviceReplay::new();
                self.resumed += 1;
            }
            self.replayed = Some(number);
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

/// A file's text, `None` when it is absent.
fn read_optional(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Reads a device's declared gaps (`from to` a line, in order); none
/// when the file is absent.
fn read_gaps(path: &Path) -> Result<Vec<Gap>, String> {
    let Some(text) = read_optional(path)? else { return Ok(Vec::new()) };
    let mut gaps = Vec::new();
    for line in text.lines() {
        // A line cut by a kill before its sync: the declaration was not
        // acknowledged, and comes again.
        let Some((from, to)) = line.split_once(' ') else { continue };
        let (Ok(from), Ok(to)) = (from.parse(), to.parse()) else { continue };
        gaps.push(Gap { from, to });
    }
    Ok(gaps)
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

    /// A device's items, by number.
    type ItemsByNumber = std::collections::BTreeMap<u32, Vec<u8>>;

    /// A device's session through a session log that is its outbox, over
    /// an 8 KiB region compacted as the board compacts it, its items
    /// delivered after the steps `delivering` says and not during the
    /// others: its items by number (as each was written), the numbers its
    /// log dropped undelivered (each as `take_lost` reports it), and each
    /// step's item number and hint.
    fn outbox_session(
        steps: u32,
        delivering: impl Fn(u32) -> bool,
    ) -> (ItemsByNumber, Vec<(u32, u32)>, Vec<Steps>) {
        use envaware_flashlog::{Numbered, RamFlash, SessionLog, MAX_ITEM};
        let mut config = ConfigBuf::<2048, 8, 8>::with_capacity();
        let loaded = config
            .load_session(r#"{"agent_name": "Sprout", "injection_config": {"timezone": "UTC", "time_interval": 0.1}}"#)
            .unwrap();
        let engine = Engine::new(loaded.config).unwrap();
        let mut s: Session<'_, 6, 32, 2048> = Session::new(&engine, loaded.agent_name);
        let mut log = SessionLog::with_outbox(RamFlash(vec![0xFF; 8 * 1024]));
        let (mut buf, mut hint, mut read) = ([0u8; 2048], [0u8; 1024], [0u8; MAX_ITEM]);
        let mut items = std::collections::BTreeMap::new();
        let (mut lost, mut out) = (Vec::new(), Vec::new());
        // The items written since the last look, read back by number.
        let mut capture =
            |log: &mut SessionLog<RamFlash<Vec<u8>>>, items: &mut ItemsByNumber, next: u32| {
                let from = items.last_key_value().map_or(0, |(k, _)| k + 1);
                for number in from..next {
                    match block_on(log.read_item(number, &mut read)).unwrap() {
                        Numbered::Found(len) => items.insert(number, read[..len].to_vec()),
                        other => panic!("item {number}: {other:?}"),
                    };
                }
            };
        block_on(s.start(&mut buf, &mut log)).unwrap();
        for n in 0..steps {
            let id = format!("c{n}");
            let state = if n % 8 < 4 { ToolResultState::Error } else { ToolResultState::Success };
            let events = [
                (n % 4 == 0).then_some(Event::User { name: "op", text: "" }),
                Some(Event::ToolCall { id: &id, name: "Drive", input: "{\"m\": 1}" }),
                Some(Event::ToolResult { id: &id, name: "Drive", state }),
            ];
            for event in events.into_iter().flatten() {
                block_on(log.make_room_for(&mut s, &mut buf)).unwrap();
                lost.extend(log.take_lost());
                capture(&mut log, &mut items, s.journal().next_number());
                block_on(s.record(&event, &mut buf, &mut log)).unwrap();
                capture(&mut log, &mut items, s.journal().next_number());
            }
            block_on(log.make_room_for(&mut s, &mut buf)).unwrap();
            lost.extend(log.take_lost());
            capture(&mut log, &mut items, s.journal().next_number());
            let input = StepInput {
                tasks: TaskCounts { pending: u64::from(n / 8 % 2), in_progress: 0 },
                cur_iter: u64::from(n % 4),
                input_tokens: 900,
                context_size: 8192,
            };
            let now = Some(Timestamp::from_unix_seconds(1_796_000_000 + 100 * i64::from(n)));
            let before = s.journal().next_number();
            let outcome =
                block_on(s.step(&input, now, &mut (), &mut hint, &mut buf, &mut log)).unwrap();
            capture(&mut log, &mut items, s.journal().next_number());
            let number = (before..s.journal().next_number()).find(|n| items[n][0] == 9).unwrap();
            out.push((number, outcome.hint.map(str::to_string)));
            if delivering(n) {
                log.set_delivered(s.journal().next_number());
            }
        }
        (items, lost, out)
    }

    /// Feeds `device` the items in order, each loss declared before the
    /// item after it (as the uplink publishes them), committing as it goes.
    fn feed(device: &mut Device, items: &ItemsByNumber, lost: &[(u32, u32)]) -> u32 {
        let mut declared = 0;
        for (&number, item) in items {
            for &(from, to) in lost.iter().filter(|(_, to)| *to == number) {
                match device.declare_lost(from, to).unwrap() {
                    Declared::Lost(n) => declared += n,
                    other => panic!("{from}..{to}: {other:?}"),
                }
            }
            if lost.iter().any(|&(from, to)| (from..to).contains(&number)) {
                continue;
            }
            assert_eq!(device.receive(number, item, Arrival::now()).unwrap(), Received::Kept);
            if number % 7 == 0 {
                device.commit(true).unwrap();
            }
        }
        device.commit(true).unwrap();
        declared
    }

    #[test]
    fn a_declared_loss_is_a_gap_the_log_may_jump_and_the_replay_resumes_after_it() {
        // Delivered for 20 steps, then not for 100 (the region fills and
        // drops what it holds undelivered), then again.
        let (items, lost, steps) = outbox_session(160, |n| !(20..120).contains(&n));
        assert!(!lost.is_empty(), "the region filled while nothing was delivered");
        let dropped: u32 = lost.iter().map(|(f, t)| t - f).sum();
        let in_lost = |n: u32| lost.iter().any(|&(f, t)| (f..t).contains(&n));
        let kept: Vec<Steps> = steps.iter().filter(|(n, _)| !in_lost(*n)).cloned().collect();
        assert!(kept.len() < steps.len() && kept.len() > 40, "{} of {}", kept.len(), steps.len());

        let dir = store("declared");
        let (mut device, _) = Device::open(&dir, "dev-1").unwrap();
        assert_eq!(feed(&mut device, &items, &lost), dropped);
        assert_eq!(device.failed(), None);
        assert_eq!((device.lost(), device.resumed()), (dropped, 1));
        assert_eq!(device.last(), items.last_key_value().map(|(k, _)| *k));
        device.flush(&dir).unwrap();
        let rows = store::read_device(&dir, "dev-1").unwrap();
        assert_eq!(rows.iter().map(|r| (r.number, r.hint.clone())).collect::<Vec<_>>(), kept);
        // Before the gap every step is checked; after it, those before the
        // next header that carries the settings are replayed unchecked.
        let gap_end = lost.last().unwrap().1;
        assert!(rows.iter().filter(|r| r.number < gap_end).all(|r| r.checked));
        assert!(rows.last().unwrap().checked);
        let unchecked: Vec<u32> = rows.iter().filter(|r| !r.checked).map(|r| r.number).collect();
        assert!(unchecked.iter().all(|&n| n > gap_end), "{unchecked:?}");

        // The same loss again, or an item of it, changes nothing; the
        // log's last item again is a duplicate.
        let (from, to) = lost[0];
        assert_eq!(device.declare_lost(from, to).unwrap(), Declared::Known);
        let last = items.last_key_value().unwrap();
        assert_eq!(device.receive(*last.0, last.1, Arrival::now()).unwrap(), Received::Duplicate);
        drop(device);

        // A restarted consumer numbers the items it kept across the gap.
        let (mut again, reopened) = Device::open(&dir, "dev-1").unwrap();
        assert_eq!(reopened.items, items.len() - dropped as usize);
        assert_eq!((again.failed(), again.pending(), again.lost()), (None, 0, dropped));
        assert_eq!(again.steps(), kept.len());
        assert_eq!(again.receive(*last.0, last.1, Arrival::now()).unwrap(), Received::Duplicate);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_loss_before_any_item_numbers_the_log_and_items_missing_before_a_loss_refuse_it() {
        // Nothing delivered for the first 100 steps: the log's first items,
        // its header among them, are dropped before the consumer saw one.
        let (items, lost, steps) = outbox_session(160, |n| n >= 100);
        assert_eq!(lost[0].0, 0, "{lost:?}");
        let in_lost = |n: u32| lost.iter().any(|&(f, t)| (f..t).contains(&n));
        let kept: Vec<Steps> = steps.iter().filter(|(n, _)| !in_lost(*n)).cloned().collect();
        let dir = store("first-lost");
        let (mut device, _) = Device::open(&dir, "dev-2").unwrap();
        feed(&mut device, &items, &lost);
        assert_eq!(device.failed(), None);
        device.flush(&dir).unwrap();
        assert_eq!(stored(&dir, "dev-2"), kept);
        drop(device);
        let (again, _) = Device::open(&dir, "dev-2").unwrap();
        assert_eq!((again.failed(), again.pending(), again.steps()), (None, 0, kept.len()));

        // Items 3 and 4 never came, then 5..9 are declared lost: refused.
        let (mut device, _) = Device::open(&dir, "dev-3").unwrap();
        for n in 0..3 {
            device.receive(n, &items[&n], Arrival::now()).unwrap();
        }
        assert_eq!(device.declare_lost(5, 9).unwrap(), Declared::Refused);
        assert_eq!(
            device.failed().unwrap().to_string(),
            "items 3 to 4 are missing before the items 5 to 8 the device declared lost"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
