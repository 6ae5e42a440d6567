//! Power cuts at every flash write and erase of a session: the journal
//! (`envaware::journal`) in the session log the firmware ships
//! (`envaware_flashlog::SessionLog`: `append`, `restore`, `clear`, and its
//! policy that makes room, `make_room`) over sequential-storage's mock
//! flash, wrapped so that power fails at a chosen operation, before it or
//! half way through it (the mock leaves the rest of the operation undone).
//!
//! For each cut: the device boots on what the flash holds, restores its
//! context, and goes on with the session from the event it lost; a context
//! that never went through a reset (the same events applied directly,
//! without the journal) goes on alongside. The restored context must be
//! exactly the one after some item the device wrote (nothing torn, nothing
//! half-applied), and every later decision must be the same. After the
//! session the device boots once more from its log, which must still hold
//! the same context.
//!
//! Run with `--nocapture` to see the figures (sessions, cuts, contexts
//! restored, torn events, differing decisions) and the wear per step.

use std::ops::Range;

use embassy_futures::block_on;
use embedded_storage_async::nor_flash::{ErrorType, MultiwriteNorFlash, NorFlash, ReadNorFlash};
use envaware::journal::{
    decode, Entry, Event, ItemKind, ItemReader, ItemStore, LogError, Session, SessionError,
    MAX_EVENT_BLOCKS,
};
use envaware::{
    AgentContext, Block, Config, Decision, Engine, HintText, LiveFields, Message as _, Role,
    StepInput, TaskCounts, Timestamp, ToolResultState,
};
use envaware_flashlog::{AppendError, RestoreError, SessionLog, StorageError, MAX_ITEM, WORD};
use sequential_storage::mock_flash::{MockFlashBase, MockFlashError, WriteCountCheck};

const AGENT: &str = "Friday";
/// The firmware's page (1 KiB pages of 4-byte words, as the LM3S6965's
/// flash), as the flash operations count it.
const PAGE: u32 = envaware_flashlog::PAGE as u32;
type Context<'a> = AgentContext<'a, 6, 32, 2048>;
type Mock<const PAGES: usize> = MockFlashBase<PAGES, WORD, { envaware_flashlog::PAGE / WORD }>;
type Log<const PAGES: usize> = SessionLog<CutFlash<PAGES>>;

/// An erased mock flash. Items are pushed from any byte of the caller's
/// buffer (a step's items lie back to back), so the mock's check that a
/// write's source is word-aligned is off. A pop writes its item's header a
/// second time (NOR flash: bits only cleared), as the queue's
/// `MultiwriteNorFlash` bound says.
fn fresh<const PAGES: usize>() -> Mock<PAGES> {
    Mock::new(WriteCountCheck::Twice, None, false)
}

/// The mock flash with power that fails at operation `cut` (writes and
/// erases counted from 0): before it (`half: false`) or half way through
/// it. After the cut every operation fails: the power is off.
#[derive(Debug)]
struct CutFlash<const PAGES: usize> {
    mock: Mock<PAGES>,
    operations: u64,
    /// Wear: pages erased and bytes written.
    erased: u64,
    written: u64,
    cut: Option<(u64, bool)>,
    off: bool,
}

impl<const PAGES: usize> CutFlash<PAGES> {
    fn new(mock: Mock<PAGES>, cut: Option<(u64, bool)>) -> Self {
        CutFlash { mock, operations: 0, erased: 0, written: 0, cut, off: false }
    }

    /// Counts an operation of `units` (the mock's shutoff counts bytes), and
    /// arms the mock's shutoff if this is the one to cut.
    fn operation(&mut self, units: usize) -> Result<(), MockFlashError> {
        if self.off {
            return Err(MockFlashError::EarlyShutoff(
                0,
                sequential_storage::mock_flash::Operation::Write,
            ));
        }
        if let Some((at, half)) = self.cut.filter(|(at, _)| *at == self.operations) {
            self.off = true;
            self.mock.bytes_until_shutoff = Some(if half { (units / 2) as u32 } else { 0 });
            let _ = at;
        }
        self.operations += 1;
        Ok(())
    }
}

impl<const PAGES: usize> ErrorType for CutFlash<PAGES> {
    type Error = MockFlashError;
}

impl<const PAGES: usize> ReadNorFlash for CutFlash<PAGES> {
    const READ_SIZE: usize = WORD;

    async fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), Self::Error> {
        self.mock.read(offset, bytes).await
    }

    fn capacity(&self) -> usize {
        self.mock.capacity()
    }
}

impl<const PAGES: usize> NorFlash for CutFlash<PAGES> {
    const WRITE_SIZE: usize = WORD;
    const ERASE_SIZE: usize = envaware_flashlog::PAGE;

    async fn erase(&mut self, from: u32, to: u32) -> Result<(), Self::Error> {
        self.operation((to - from) as usize)?;
        self.erased += u64::from((to - from) / PAGE);
        self.mock.erase(from, to).await
    }

    async fn write(&mut self, offset: u32, bytes: &[u8]) -> Result<(), Self::Error> {
        self.operation(bytes.len())?;
        self.written += bytes.len() as u64;
        self.mock.write(offset, bytes).await
    }
}

impl<const PAGES: usize> MultiwriteNorFlash for CutFlash<PAGES> {}

/// What a session does. Strings are owned: the sessions are generated.
#[derive(Debug, Clone)]
enum Op {
    User,
    Observe {
        name: &'static str,
        hint: String,
    },
    Agent(Vec<String>),
    Call {
        id: String,
        tool: &'static str,
        input: String,
    },
    Result {
        id: String,
        tool: &'static str,
        state: ToolResultState,
    },
    Reply,
    Compress(usize),
    /// The operator's message, with its text (empty: none).
    Operator(String),
    /// A block the store keeps no text of (the firmware's `Block::Other`).
    Other,
    /// The model's reply, one event: its text (none when empty) and the
    /// tool calls it asks for (id, tool, arguments).
    Replied(String, Vec<(String, String, String)>),
    /// The results of the tools a reply called, one event, as the firmware
    /// logs them: id, tool, state, output.
    Ran(Vec<(String, String, ToolResultState, &'static str)>),
    /// A step `ms` milliseconds into the session, with the live fields
    /// its hint tells (`None`: none).
    Step {
        ms: i64,
        cur_iter: u64,
        tasks: TaskCounts,
        tokens: i64,
        live: Option<Fields>,
    },
}

/// Live fields as the firmware's: the watched temperature and the uptime.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fields {
    temperature: String,
    uptime: String,
}

impl LiveFields for Fields {
    fn len(&self) -> usize {
        2
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        [("temperature", self.temperature.as_str()), ("uptime", self.uptime.as_str())]
            .get(i)
            .copied()
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const TOOLS: [&str; 3] = ["OpenVent", "Water", "TaskUpdate"];
const ARGS: [&str; 4] = [
    "{\"vent\": 2, \"angle\": 45}",
    "{\"angle\":45,\"vent\":2}",
    " {\"row\": \"3\\n\"} ",
    "{\"note\": \"é😀 \\\"x\\\"\"}",
];

/// A session of about `length` operations: user turns, tool calls that
/// fail in a row, foreign hints, compressions, and steps minutes apart
/// (each advance drawn from `advances`).
fn session(seed: u64, length: usize, advances: &[i64]) -> Vec<Op> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut ops = vec![Op::User];
    let (mut minutes, mut cur_iter, mut call) = (0i64, 0u64, 0u32);
    let mut tasks = TaskCounts::default();
    while ops.len() < length {
        let op = match rng.below(20) {
            0..=1 => {
                cur_iter = 0;
                Op::User
            }
            2..=5 => {
                call += 1;
                let (tool, args) = (rng.below(2) as usize, rng.below(ARGS.len() as u64) as usize);
                let id = format!("c{call}");
                ops.push(Op::Call {
                    id: id.clone(),
                    tool: TOOLS[tool],
                    input: ARGS[args].to_string(),
                });
                let state =
                    [ToolResultState::Error, ToolResultState::Error, ToolResultState::Success]
                        [rng.below(3) as usize];
                Op::Result { id, tool: TOOLS[tool], state }
            }
            6 => Op::Observe {
                name: "Scout",
                hint: format!("<current-time>2026-07-22 0{}:00:00</current-time>", rng.below(9)),
            },
            7 => Op::Agent(vec![
                format!("<tasks>{}</tasks>", rng.below(3)),
                "part \"two\"".to_string(),
            ]),
            8 => Op::Reply,
            9 => Op::Compress(rng.below(4) as usize),
            10 => {
                tasks = TaskCounts { pending: rng.below(3), in_progress: rng.below(2) };
                continue;
            }
            _ => {
                minutes += advances[rng.below(advances.len() as u64) as usize];
                let tokens = [900, 3000, 7000][rng.below(3) as usize];
                cur_iter += 1;
                Op::Step { ms: 60_000 * minutes, cur_iter: cur_iter - 1, tasks, tokens, live: None }
            }
        };
        ops.push(op);
    }
    ops
}

fn step(cur_iter: u64, tasks: TaskCounts, tokens: i64) -> StepInput {
    StepInput { tasks, cur_iter, input_tokens: tokens, context_size: 8192 }
}

fn now(ms: i64) -> Option<Timestamp> {
    Some(Timestamp::from_unix_micros((1_784_687_400_000 + ms) * 1000))
}

/// The device: its context and journal (a `Session`, as the firmware's)
/// and its log (the firmware's).
struct Device<'e, const PAGES: usize> {
    session: Logged<'e>,
    log: Log<PAGES>,
}

/// The firmware's owner of its context and log, in this test's capacities.
type Logged<'e> = Session<'e, 6, 32, 2048>;

/// What the device wrote: each item, and the context just after it.
#[derive(Default)]
struct Written<'e> {
    items: Vec<(Vec<u8>, Context<'e>)>,
}

#[derive(Debug)]
enum DeviceError {
    /// The flash failed (the power is off), or the queue is damaged.
    Flash,
    /// The log's region cannot hold the items the context needs.
    LogFull,
}

impl From<AppendError> for DeviceError {
    fn from(e: AppendError) -> Self {
        match e {
            AppendError::Full => DeviceError::LogFull,
            AppendError::Storage => DeviceError::Flash,
        }
    }
}

impl From<StorageError> for DeviceError {
    fn from(_: StorageError) -> Self {
        DeviceError::Flash
    }
}

/// The log, keeping a copy of each item it took: what one call of the
/// session appended.
struct Recording<'l, const PAGES: usize> {
    log: &'l mut Log<PAGES>,
    items: Vec<Vec<u8>>,
}

impl<const PAGES: usize> ItemStore for Recording<'_, PAGES> {
    type Error = AppendError;
    async fn append(&mut self, item: &[u8]) -> Result<(), AppendError> {
        self.log.append(item).await?;
        self.items.push(item.to_vec());
        Ok(())
    }
}

/// A store that takes every item: where a compaction's header is foretold.
struct Kept(Vec<Vec<u8>>);

impl ItemStore for Kept {
    type Error = ();
    async fn append(&mut self, item: &[u8]) -> Result<(), ()> {
        self.0.push(item.to_vec());
        Ok(())
    }
}

impl<'e, const PAGES: usize> Device<'e, PAGES> {
    /// Boots on `flash`: restores the log if it holds one (else starts one).
    /// Returns the device, the events restored, and the error that made it
    /// start empty, if any.
    fn boot(
        engine: &'e Engine<'e>,
        flash: CutFlash<PAGES>,
    ) -> Result<(Self, u32, Option<LogError>), DeviceError> {
        let mut device =
            Device { session: Logged::new(engine, AGENT), log: SessionLog::new(flash) };
        let (mut buf, mut scratch) = ([0u8; MAX_ITEM], [0u8; MAX_ITEM]);
        let restored = block_on(device.log.restore_session(
            &mut device.session,
            &mut buf,
            &mut scratch,
            |_, _| {},
        ));
        let error = match restored {
            Ok(()) => None,
            Err(RestoreError::Storage) => return Err(DeviceError::Flash),
            // An empty log: a first boot.
            Err(RestoreError::Item(LogError {
                index: 0,
                kind: envaware::journal::ItemError::MissingHeader,
            })) => {
                device.session = Logged::new(engine, AGENT);
                None
            }
            Err(RestoreError::Item(e)) => {
                device.session = Logged::new(engine, AGENT);
                Some(e)
            }
        };
        if device.session.journal().items() == 0 {
            block_on(device.log.clear())?;
            match block_on(device.session.start(&mut buf, &mut device.log)) {
                Ok(()) => {}
                Err(SessionError::Append(e)) => return Err(e.into()),
                Err(SessionError::Record(e)) => panic!("a header fits: {e}"),
            }
        }
        let restored = device.session.journal().restored_events();
        Ok((device, restored, error))
    }

    /// Before an operation's items are numbered: the firmware's policy
    /// (`SessionLog::make_room_for`) compacts the log when its region
    /// fills, so that the compaction's header and the operation's items
    /// fit. The header it appends is recorded in `written`, with the
    /// context at that point: the session's next header, foretold on a copy
    /// of the session (the torn check compares it with the item the log
    /// holds).
    fn make_room(&mut self, written: &mut Written<'e>) -> Result<(), DeviceError> {
        let mut header = [0u8; MAX_ITEM];
        let mut foretold = Kept(Vec::new());
        block_on(self.session.clone().compaction_header(&mut header, &mut foretold))
            .expect("a header fits");
        let mut buf = [0u8; MAX_ITEM];
        match block_on(self.log.make_room_for(&mut self.session, &mut buf)) {
            Ok(0) => {}
            Ok(_) => written.items.push((foretold.0.remove(0), self.session.context().clone())),
            Err(_) => return Err(DeviceError::Flash),
        }
        Ok(())
    }

    /// One operation, logged; a step returns its decision and hint. An
    /// event the context refuses is not logged, as it is not applied.
    fn run(&mut self, op: &Op, written: &mut Written<'e>) -> Result<Option<Stepped>, DeviceError> {
        self.make_room(written)?;
        let mut buf = [0u8; 2 * PAGE as usize];
        let mut log = Recording { log: &mut self.log, items: Vec::new() };
        let result = if let Op::Step { ms, cur_iter, tasks, tokens, live } = op {
            let mut hint = [0u8; 1024];
            let step = step(*cur_iter, *tasks, *tokens);
            let mut fields = live.clone();
            let stepped = match fields.as_mut() {
                Some(fields) => block_on(self.session.step(
                    &step,
                    now(*ms),
                    fields,
                    &mut hint,
                    &mut buf,
                    &mut log,
                )),
                None => block_on(self.session.step(
                    &step,
                    now(*ms),
                    &mut (),
                    &mut hint,
                    &mut buf,
                    &mut log,
                )),
            };
            match stepped {
                Ok(outcome) => Some(Ok((outcome.decision, outcome.hint.map(str::to_string)))),
                Err(SessionError::Append(e)) => return Err(e.into()),
                Err(SessionError::Record(e)) => return Ok(Some(Err(e.to_string()))),
            }
        } else {
            match with_event(op, |event| block_on(self.session.record(event, &mut buf, &mut log))) {
                Ok(()) | Err(SessionError::Record(_)) => None,
                Err(SessionError::Append(e)) => return Err(e.into()),
            }
        };
        // An item is applied once appended: the context after it is the
        // context after the operation (a `compress` note that may follow
        // changes no message).
        for item in log.items {
            written.items.push((item, self.session.context().clone()));
        }
        Ok(result)
    }
}

/// A step's decision and hint, or its error.
type Stepped = Result<(Decision, Option<String>), String>;

/// The journal's event for `op` (not a step).
fn with_event<R>(op: &Op, f: impl FnOnce(&Event<'_>) -> R) -> R {
    match op {
        Op::User => f(&Event::User { name: "operator", text: "" }),
        Op::Observe { name, hint } => {
            let blocks = [
                Block::Hint {
                    source: Some("runtime"),
                    text: HintText::Single(hint),
                    created_at: None,
                },
                Block::Other,
            ];
            f(&Event::Message { role: Role::Assistant, name, blocks: &blocks })
        }
        Op::Agent(parts) => {
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            let blocks = [
                Block::Hint { source: None, text: HintText::Parts(&parts), created_at: None },
                Block::Other,
            ];
            f(&Event::Assistant(&blocks))
        }
        Op::Call { id, tool, input } => f(&Event::ToolCall { id, name: tool, input }),
        Op::Result { id, tool, state } => f(&Event::ToolResult { id, name: tool, state: *state }),
        Op::Reply => f(&Event::Reply),
        Op::Compress(keep) => f(&Event::Compress { keep: *keep }),
        Op::Operator(text) => f(&Event::User { name: "operator", text }),
        Op::Other => f(&Event::Assistant(&[Block::Other])),
        Op::Replied(text, calls) => f(&Event::Assistant(&reply_blocks(text, calls))),
        Op::Ran(results) => f(&Event::Assistant(&result_blocks(results))),
        Op::Step { .. } => unreachable!("steps go through Session::step"),
    }
}

/// A reply's text (none when empty) and tool calls, as blocks.
fn reply_blocks<'a>(text: &'a str, calls: &'a [(String, String, String)]) -> Vec<Block<'a>> {
    let text = (!text.is_empty()).then_some(Block::Text(text));
    let calls = calls.iter().map(|(id, name, input)| Block::ToolCall { id, name, input });
    text.into_iter().chain(calls).collect()
}

/// Tool results, as blocks.
fn result_blocks<'a>(
    results: &'a [(String, String, ToolResultState, &'static str)],
) -> Vec<Block<'a>> {
    results
        .iter()
        .map(|(id, name, state, output)| Block::ToolResult { id, name, state: *state, output })
        .collect()
}

/// The same operation on a context without a journal (the uninterrupted
/// reference): the context's own methods.
fn run_plain(context: &mut Context<'_>, op: &Op) -> Option<Stepped> {
    match op {
        Op::User => {
            let _ = context.user("operator");
        }
        Op::Observe { name, hint } => {
            let blocks = [
                Block::Hint {
                    source: Some("runtime"),
                    text: HintText::Single(hint),
                    created_at: None,
                },
                Block::Other,
            ];
            let _ = context.observe(Role::Assistant, name, &blocks);
        }
        Op::Agent(parts) => {
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            let _ = context.agent(&[
                Block::Hint { source: None, text: HintText::Parts(&parts), created_at: None },
                Block::Other,
            ]);
        }
        Op::Call { id, tool, input } => {
            let _ = context.tool_call(id, tool, input);
        }
        Op::Result { id, tool, state } => {
            let _ = context.tool_result(id, tool, *state);
        }
        Op::Reply => context.new_reply(),
        Op::Compress(keep) => {
            context.compress(*keep);
        }
        Op::Operator(text) => {
            let _ = context.observe(Role::User, "operator", &[Block::Text(text)]);
        }
        Op::Other => {
            let _ = context.agent(&[Block::Other]);
        }
        Op::Replied(text, calls) => {
            let _ = context.agent(&reply_blocks(text, calls));
        }
        Op::Ran(results) => {
            let _ = context.agent(&result_blocks(results));
        }
        Op::Step { ms, cur_iter, tasks, tokens, live } => {
            let mut hint = [0u8; 1024];
            let mut clock = envaware::FixedClock(now(*ms));
            let step = step(*cur_iter, *tasks, *tokens);
            let outcome = match live.clone().as_mut() {
                Some(fields) => context.step(&step, &mut clock, fields, &mut hint),
                None => context.step(&step, &mut clock, &mut (), &mut hint),
            };
            return Some(
                outcome
                    .map(|o| (o.decision, o.hint.map(str::to_string)))
                    .map_err(|e| e.to_string()),
            );
        }
    }
    None
}

/// The messages a context holds, as text.
fn messages(context: &Context<'_>) -> Vec<String> {
    (0..context.len()).map(|i| format!("{:?}", context.newest(i))).collect()
}

#[derive(Debug, Default)]
struct Figures {
    sessions: usize,
    cuts: usize,
    restored: usize,
    events_restored: u64,
    torn: usize,
    differing: usize,
    compactions: usize,
    /// Hints of ours the restored contexts hold, each rendered again from
    /// its step item, and those not byte for byte the device's.
    hints_restored: usize,
    hints_differing: usize,
}

/// The text of each hint of ours `context` holds.
fn own_hints(context: &Context<'_>) -> Vec<String> {
    let source = context.engine().config().config().injection.injection_source;
    (0..context.len())
        .filter_map(|i| context.newest(i))
        .flat_map(|m| {
            (0..m.block_count()).filter_map(move |b| match m.block(b) {
                Some(Block::Hint { source: Some(s), text, .. }) if s == source => {
                    Some(text.parts().concat())
                }
                _ => None,
            })
        })
        .collect()
}

/// The device just before an operation of the uninterrupted run.
struct Snapshot<'e, const PAGES: usize> {
    mock: Mock<PAGES>,
    operations: u64,
    session: Logged<'e>,
}

impl<'e, const PAGES: usize> Device<'e, PAGES> {
    fn snapshot(&mut self) -> Snapshot<'e, PAGES> {
        let flash = self.log.flash();
        Snapshot {
            mock: flash.mock.clone(),
            operations: flash.operations,
            session: self.session.clone(),
        }
    }

    /// The device of `snapshot`, its power to fail at `cut` (the log
    /// keeps no cache, so a new log over the same flash is the same).
    fn resume(snapshot: &Snapshot<'e, PAGES>, cut: (u64, bool)) -> Self {
        let mut flash = CutFlash::new(snapshot.mock.clone(), Some(cut));
        flash.operations = snapshot.operations;
        Device { session: snapshot.session.clone(), log: SessionLog::new(flash) }
    }
}

/// The uninterrupted run: the items written (with the context after each),
/// for each operation the item after which it is done, and the device
/// before each operation (the last: after the session).
struct Reference<'e, const PAGES: usize> {
    written: Written<'e>,
    effects: Vec<u32>,
    snapshots: Vec<Snapshot<'e, PAGES>>,
}

fn reference<'e, const PAGES: usize>(engine: &'e Engine<'e>, ops: &[Op]) -> Reference<'e, PAGES> {
    let (mut device, _, _) =
        Device::<PAGES>::boot(engine, CutFlash::new(fresh(), None)).expect("boots");
    let mut written = Written::default();
    let header = read_back_items(&mut device).remove(0).1;
    written.items.push((header, device.session.context().clone()));
    let mut effects = Vec::new();
    let mut snapshots = Vec::new();
    for op in ops {
        snapshots.push(device.snapshot());
        let first = written.items.len();
        device.run(op, &mut written).expect("the uninterrupted session runs");
        // The item that applies the operation: not a compaction's header;
        // the `compress` that may follow changes nothing more. An operation
        // the context refused wrote none.
        let effect =
            (first..written.items.len()).find(|&i| kind(&written.items[i].0) != ItemKind::Header);
        effects.push(effect.unwrap_or(first.saturating_sub(1)) as u32);
    }
    snapshots.push(device.snapshot());
    Reference { written, effects, snapshots }
}

/// Cuts the session at flash operation `cut`, boots, goes on, and counts.
fn cut_and_check<'e, const PAGES: usize>(
    engine: &'e Engine<'e>,
    ops: &[Op],
    cut: (u64, bool),
    reference: &Reference<'e, PAGES>,
    figures: &mut Figures,
) {
    let Reference { written: written_before, effects, snapshots } = reference;
    // From the operation in which the cut falls (or the boot's header).
    let first = snapshots.iter().rposition(|s| s.operations <= cut.0);
    let mut device = match first {
        Some(i) => Device::resume(&snapshots[i], cut),
        None => match Device::<PAGES>::boot(engine, CutFlash::new(fresh(), Some(cut))) {
            Ok((device, _, _)) => device,
            // The cut came while the first header was written: nothing to lose.
            Err(_) => Device::<PAGES>::boot(engine, CutFlash::new(fresh(), None)).expect("boots").0,
        },
    };
    let mut scrap = Written::default();
    for op in &ops[first.unwrap_or(0).min(ops.len())..] {
        if device.run(op, &mut scrap).is_err() {
            break;
        }
    }
    figures.cuts += 1;
    let flash = std::mem::replace(&mut device.log.flash().mock, fresh());
    let (mut restored, events, error) =
        Device::<PAGES>::boot(engine, CutFlash::new(flash, None)).expect("boots after the cut");
    assert_eq!(error, None, "cut {cut:?}: the log restores");
    figures.restored += 1;
    figures.events_restored += u64::from(events);
    // The item the restored context stopped after: the context must be the
    // one the live session had just after writing it.
    let last = last_item_number(&mut restored);
    let expected = &written_before.items[last.unwrap_or(0) as usize].1;
    let torn = last.is_some()
        && !read_back_items(&mut restored)
            .iter()
            .all(|(m, bytes)| &written_before.items[*m as usize].0 == bytes)
        || messages(restored.session.context()) != messages(expected);
    figures.torn += usize::from(torn);
    let (again, appended) = (own_hints(restored.session.context()), own_hints(expected));
    figures.hints_restored += again.len();
    figures.hints_differing += usize::from(again != appended);
    // Go on from the operation that item belongs to (its remaining items
    // were lost with the cut, or it was the last of its operation).
    let next =
        last.map_or(0, |n| effects.iter().position(|&effect| effect > n).unwrap_or(ops.len()));
    let mut uninterrupted = expected.clone();
    let mut written = Written::default();
    for op in &ops[next.min(ops.len())..] {
        let got = restored.run(op, &mut written).expect("the restored device runs");
        let want = run_plain(&mut uninterrupted, op);
        figures.differing += usize::from(got != want);
    }
    // One more reset: the log still holds the context.
    let flash = std::mem::replace(&mut restored.log.flash().mock, fresh());
    let (again, _, error) =
        Device::<PAGES>::boot(engine, CutFlash::new(flash, None)).expect("boots again");
    assert_eq!(error, None);
    figures.torn += usize::from(messages(again.session.context()) != messages(&uninterrupted));
}

/// The items the log holds, with their numbers (each item carries its
/// number's low 16 bits; a header the whole number, which the reader
/// counts from).
fn read_back_items<const PAGES: usize>(device: &mut Device<'_, PAGES>) -> Vec<(u32, Vec<u8>)> {
    let mut buf = [0u8; MAX_ITEM];
    let mut items = Vec::new();
    let mut reader = ItemReader::new();
    let read = device.log.read_items(&mut buf, |item| {
        reader.read(item).expect("an item of the journal's");
        items.push(item.to_vec());
        Ok::<(), ()>(())
    });
    block_on(read).expect("reads");
    let first = reader.first_number().expect("the log holds a header");
    items.into_iter().enumerate().map(|(i, item)| (first + i as u32, item)).collect()
}

/// The kind of an item.
fn kind(item: &[u8]) -> ItemKind {
    ItemReader::new().read(item).expect("an item of the journal's").kind
}

fn last_item_number<const PAGES: usize>(device: &mut Device<'_, PAGES>) -> Option<u32> {
    read_back_items(device).last().map(|(n, _)| *n)
}

fn run_sessions<const PAGES: usize>(seeds: Range<u64>, length: usize, stride: u64) -> Figures {
    let engine = Engine::new(Config::default()).unwrap();
    let engine: &'static Engine<'static> = Box::leak(Box::new(engine));
    let mut figures = Figures::default();
    for seed in seeds {
        let ops = session(seed, length, &[0, 1, 5, 20, 45]);
        let reference = reference::<PAGES>(engine, &ops);
        figures.sessions += 1;
        // Headers after the first are compactions.
        figures.compactions += reference.written.items[1..]
            .iter()
            .filter(|(bytes, _)| kind(bytes) == ItemKind::Header)
            .count();
        let mut cut = seed % stride;
        let operations = reference.snapshots.last().map_or(0, |s| s.operations);
        while cut < operations {
            for half in [false, true] {
                cut_and_check::<PAGES>(engine, &ops, (cut, half), &reference, &mut figures);
            }
            cut += stride;
        }
    }
    figures
}

/// Sessions to cut: `ENVAWARE_POWER_CUT_SESSIONS` (4 unless set; the
/// figures in docs/reboot.md are from 12).
fn sessions() -> u64 {
    std::env::var("ENVAWARE_POWER_CUT_SESSIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(4)
}

#[test]
fn a_power_cut_at_any_write_or_erase_loses_at_most_the_event_in_flight() {
    // 3 KiB of log (two pages kept free) for a context of 6 messages:
    // compactions come often.
    let figures = run_sessions::<3>(0..sessions(), 120, 1);
    println!("power cuts: {figures:?}");
    assert!(figures.compactions >= 2 * figures.sessions, "{figures:?}");
    assert!(figures.events_restored > 100 * figures.cuts as u64 / 10, "{figures:?}");
    assert_eq!((figures.torn, figures.differing), (0, 0), "{figures:?}");
    assert_eq!(figures.restored, figures.cuts);
    assert_eq!(figures.hints_differing, 0, "{figures:?}");
    assert!(figures.hints_restored > figures.cuts, "{figures:?}");
}

/// Runs `ops` in a 64 KiB region (64 pages of 1 KiB) and prints the wear
/// per step: bytes written, pages erased, and the lifetime of 10,000-cycle
/// pages at one step a minute (the queue writes its pages in turn, so every
/// page wears alike). Returns (steps, bytes written, pages erased).
fn wear<const M: usize, const B: usize, const T: usize>(
    name: &str,
    engine: &Engine<'_>,
    ops: &[Op],
) -> (u64, u64, u64) {
    let steps = ops.iter().filter(|op| matches!(op, Op::Step { .. })).count() as u64;
    let mut log: Log<64> = SessionLog::new(CutFlash::new(fresh(), None));
    let mut session: Session<'_, M, B, T> = Session::new(engine, AGENT);
    let (mut buf, mut hint) = ([0u8; MAX_ITEM], [0u8; 1024]);
    let mut items = Recording { log: &mut log, items: Vec::new() };
    block_on(session.start(&mut buf, &mut items)).expect("a header fits");
    // The first quarter fills the region once (a fresh region needs no
    // erase): the wear is counted from there on.
    let warm = ops.len() / 4;
    let mut from = (0, 0, 0);
    for (i, op) in ops.iter().enumerate() {
        if i == warm {
            let flash = items.log.flash();
            let done = ops[..warm].iter().filter(|op| matches!(op, Op::Step { .. })).count();
            from = (done as u64, flash.written, flash.erased);
        }
        // The firmware's policy: compact when the region fills.
        block_on(items.log.make_room_for(&mut session, &mut buf)).expect("compacts");
        let logged = match op {
            Op::Step { ms, cur_iter, tasks, tokens, live } => {
                let step = step(*cur_iter, *tasks, *tokens);
                let mut fields = live.clone();
                match fields.as_mut() {
                    Some(f) => {
                        block_on(session.step(&step, now(*ms), f, &mut hint, &mut buf, &mut items))
                    }
                    None => block_on(session.step(
                        &step,
                        now(*ms),
                        &mut (),
                        &mut hint,
                        &mut buf,
                        &mut items,
                    )),
                }
                .map(drop)
            }
            op => with_event(op, |event| block_on(session.record(event, &mut buf, &mut items))),
        };
        match logged {
            Ok(()) | Err(SessionError::Record(_)) => {}
            Err(e) => panic!("{name}: the log refused an item: {e:?}"),
        }
    }
    // The items' own bytes, by event (a compaction's header is written by
    // the policy, past the recording).
    let mut by_event = std::collections::BTreeMap::<String, (usize, usize)>::new();
    let watches = engine.config().config().injection.watch;
    for item in &items.items {
        let mut blocks = [Block::Other; MAX_EVENT_BLOCKS];
        let key = match decode(item, &watches, &mut blocks).expect("an item of the journal's").1 {
            Entry::Step(step) if step.decided.is_some_and(|d| d.fires()) => "step with a hint",
            _ => kind(item).name(),
        };
        let entry = by_event.entry(key.to_string()).or_default();
        *entry = (entry.0 + 1, entry.1 + item.len());
    }
    println!("wear, {name}: items by event (count, bytes): {by_event:?}");
    let count = items.items.len();
    let flash = log.flash();
    let (counted, written, erased) =
        (steps - from.0, flash.written - from.1, flash.erased - from.2);
    let (bytes, erases) = (written as f64 / counted as f64, erased as f64 / counted as f64);
    let years = 64.0 * 10_000.0 / erases / (60.0 * 24.0 * 365.25);
    println!(
        "wear, {name}: {steps} steps, {count} items; over the last {counted} steps {written} bytes written, {erased} pages erased: \
         {bytes:.0} bytes and {erases:.4} erases per step; 64 KiB of 10,000-cycle pages at a step a minute: {years:.1} years",
    );
    (counted, written, erased)
}

/// A long generated session, a step a minute.
#[test]
fn wear_per_step_of_a_long_session() {
    let engine = Engine::new(Config::default()).unwrap();
    let (steps, written, erased) =
        wear::<6, 32, 2048>("long generated session", &engine, &session(7, 6000, &[1]));
    // The log wrapped around the region again and again, and each step
    // wrote at least its `step` item.
    assert!(erased > 64, "{erased}");
    assert!(written > 40 * steps, "{written}");
}

/// The engine of the firmware's session configuration
/// (`firmware/session-config.json`: its zone, time interval, compression
/// tool and temperature watch with its time rules).
fn demo_engine() -> &'static Engine<'static> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../firmware/session-config.json"
    ))
    .expect("firmware/session-config.json");
    let buf: &'static mut envaware::ConfigBuf = Box::leak(Box::new(envaware::ConfigBuf::new()));
    let loaded =
        buf.load_session(Box::leak(text.into_boxed_str())).expect("the firmware's configuration");
    Box::leak(Box::new(Engine::new(loaded.config).expect("valid")))
}

/// The firmware's demo session, one round of it as `cargo xtask demo` logs
/// it: before each step the operator's messages (`firmware/src/agent/
/// session.rs`'s script), then the step, then the model's reply (the
/// scripted server's, `firmware/model-script.jsonl`, in request order),
/// the results of the tools it calls (`firmware/src/agent/tools.rs`'s
/// outcomes) and, after `CompressContext`, the compression; before steps 4
/// and 6 the environment wakes the agent (a reply with no user message, a
/// step, the model's reply). The instants, temperatures and uptimes are
/// those of a QEMU run. `texts: false` leaves every text out (the
/// operator's and the model's): what the texts cost. One round; `round`
/// moves its clock.
fn demo_round(round: i64, texts: bool) -> Vec<Op> {
    let text = |t: &str| if texts { t.to_string() } else { String::new() };
    let replies: Vec<Op> = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../firmware/model-script.jsonl"
    ))
    .expect("firmware/model-script.jsonl")
    .lines()
    .map(|line| {
        let v: serde_json::Value = serde_json::from_str(line).expect("a reply line");
        let calls = v["tool_calls"].as_array().cloned().unwrap_or_default();
        let field = |c: &serde_json::Value, k: &str| c[k].as_str().expect(k).to_string();
        Op::Replied(
            text(v["content"].as_str().unwrap_or_default()),
            calls
                .iter()
                .map(|c| (field(c, "id"), field(c, "name"), field(c, "arguments")))
                .collect(),
        )
    })
    .collect();
    // The device's tools (`firmware/src/agent/tools.rs`): vent 2's motor
    // is jammed; `CompressContext` keeps the newest message.
    let outcome = |tool: &str| match tool {
        "TaskList" => (ToolResultState::Success, "3 tasks"),
        "TaskUpdate" => (ToolResultState::Success, "updated"),
        "OpenVent" => (ToolResultState::Error, "motor jammed"),
        "Water" => (ToolResultState::Success, "2 L on bed A"),
        "ReadLog" => (ToolResultState::Success, "humidity 61-78 %"),
        "Dock" => (ToolResultState::Success, "docked"),
        "CompressContext" => (ToolResultState::Success, "compressed"),
        other => panic!("no tool {other} on the device"),
    };
    let tasks = |pending, in_progress| TaskCounts { pending, in_progress };
    let operator = |t: &str| Op::Operator(text(t));
    // ms into the round, temperature, uptime; the script's tasks, cur_iter, tokens.
    let step = |ms: i64, t: &str, up: &str, tasks, cur_iter, tokens| Op::Step {
        ms: round * 120_000 + ms,
        cur_iter,
        tasks,
        tokens,
        live: Some(Fields { temperature: format!("{t} °C"), uptime: format!("{up} s") }),
    };
    let mut replies = replies.into_iter();
    let mut ops = Vec::new();
    let mut push = |events: Vec<Op>, ops: &mut Vec<Op>| {
        ops.extend(events);
        let Some(Op::Replied(said, calls)) = replies.next() else { panic!("a reply per request") };
        let ran = calls
            .iter()
            .map(|(id, tool, _)| {
                let (state, output) = outcome(tool);
                (id.clone(), tool.clone(), state, output)
            })
            .collect::<Vec<_>>();
        let compress = calls.iter().any(|(_, tool, _)| tool == "CompressContext");
        ops.push(Op::Replied(said, calls));
        if !ran.is_empty() {
            ops.push(Op::Ran(ran));
        }
        if compress {
            ops.push(Op::Compress(1));
        }
    };
    let first = operator("Good morning. Please check the greenhouse.");
    push(vec![first, step(0, "21.5", "0.075", tasks(0, 0), 0, 900)], &mut ops);
    let schedule = operator("Water bed A, open vent 2, then dock.");
    push(vec![Op::Other, schedule, step(1_836, "22.25", "1.929", tasks(3, 0), 0, 1_100)], &mut ops);
    push(vec![step(4_689, "23.0", "4.782", tasks(2, 1), 1, 1_300)], &mut ops);
    push(vec![step(7_050, "24.5", "7.143", tasks(2, 1), 2, 1_400)], &mut ops);
    push(vec![Op::Reply, step(7_937, "24.5", "8.047", tasks(2, 1), 0, 1_400)], &mut ops);
    push(vec![step(9_416, "26.0", "9.509", tasks(2, 1), 3, 1_500)], &mut ops);
    push(vec![step(11_788, "27.75", "11.881", tasks(2, 1), 4, 1_600)], &mut ops);
    push(vec![Op::Reply, step(14_436, "33.0", "14.558", tasks(2, 1), 0, 1_600)], &mut ops);
    let status = operator("How is bed A?");
    push(vec![status, step(52_665, "29.5", "52.799", tasks(1, 1), 0, 2_000)], &mut ops);
    let odd = operator("Anything odd in the humidity?");
    push(vec![odd, step(56_566, "27.0", "56.718", tasks(1, 1), 0, 2_600)], &mut ops);
    push(vec![step(59_483, "25.25", "59.571", tasks(1, 1), 1, 700)], &mut ops);
    push(vec![step(72_337, "23.5", "72.438", tasks(0, 0), 2, 800)], &mut ops);
    assert!(replies.next().is_none(), "a request per reply");
    ops
}

/// The firmware's demo session as `cargo xtask demo` logs it (the model's
/// replies and the live fields included), round after round: 12 steps a
/// round, two minutes apart.
#[test]
fn wear_per_step_of_the_demo_session() {
    let engine = demo_engine();
    let ops: Vec<Op> = (0..200).flat_map(|round| demo_round(round, true)).collect();
    // The firmware's context: 16 messages, 48 blocks, 4 KiB of text.
    let (steps, written, erased) = wear::<16, 48, 4096>("demo session", engine, &ops);
    assert_eq!(steps, 1800);
    assert!(erased > 3 * 64 && written > 40 * steps, "{written} {erased}");
    // Without the texts (the operator's and the model's): what they cost.
    let ops: Vec<Op> = (0..200).flat_map(|round| demo_round(round, false)).collect();
    let (steps, ..) = wear::<16, 48, 4096>("demo session without its texts", engine, &ops);
    assert_eq!(steps, 1800);
}
