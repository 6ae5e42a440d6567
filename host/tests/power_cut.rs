//! A power cut at every byte of a session's file: generated sessions are
//! logged by their owner (`envaware::journal::Session`) into a `FileLog`;
//! for every length `L` from 0 to the file's, a copy cut to `L` bytes is
//! opened, and
//!
//! - the items read back are exactly the first `k` items written (`k`
//!   whole records fit in `L` bytes; no damaged item is ever applied), the
//!   torn tail cut is `L` less the end of the `k`th record, and the file
//!   is cut to that end;
//! - the `k` items restore (`Session::restore`) into the messages the live
//!   session held after its `k`th item, each hint rendered again from its
//!   step item byte for byte as the device appended it;
//! - the restored session goes on from the first event it lost, appending
//!   to the same file, beside the session that never went through the cut:
//!   every later decision and hint must be the same, and the file then
//!   reopens whole and restores the same context.
//!
//! Every cut that reads back the same `k` items leaves the same file and
//! the same items (both checked byte for byte for every cut), which are all
//! that a restore reads: so by default the restore and the continuation run
//! once per `k` (the first cut that reads back `k` items), and with
//! `ENVAWARE_HOST_POWER_CUT_RESTORE_EVERY_CUT` set the restore runs for
//! every cut (over ten times slower).
//!
//! Run with `--nocapture` for the figures; `ENVAWARE_HOST_POWER_CUT_SESSIONS`
//! sets how many sessions (4 by default). The cut copies go to `/dev/shm`
//! where it exists (opening a torn copy fsyncs its cut).

use std::fs;
use std::path::{Path, PathBuf};

use envaware::journal::{Event, Session, SessionError};
use envaware::{
    AgentContext, Block, Config, Decision, Engine, Message as _, StepInput, TaskCounts, Timestamp,
    ToolResultState,
};
use envaware_host::{block_on, FileLog, FileLogError, Sync};

const AGENT: &str = "rover";
type Context<'a> = AgentContext<'a, 8, 32, 2048>;
type Logged<'a> = Session<'a, 8, 32, 2048>;

/// The file's header: its magic and salt.
const HEADER: u64 = envaware_host::MAGIC.len() as u64 + 12;

/// One event of a generated session.
#[derive(Debug, Clone)]
enum Op {
    User,
    Call { id: String, tool: &'static str, input: &'static str },
    Result { id: String, tool: &'static str, state: ToolResultState },
    Reply,
    Compress(usize),
    Step { seconds: i64, cur_iter: u64, tasks: TaskCounts, tokens: i64 },
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

const TOOLS: [&str; 2] = ["OpenVent", "Water"];
const ARGS: [&str; 3] =
    ["{\"vent\": 2, \"angle\": 45}", "{\"angle\":45,\"vent\":2}", " {\"row\": 3} "];

/// About `length` events: user turns, tool calls (runs of failing calls
/// with the same arguments among them, so that the tool-error hint fires),
/// replies, compressions, and steps a few minutes apart.
fn session(seed: u64, length: usize) -> Vec<Op> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut ops = vec![Op::User];
    let (mut seconds, mut cur_iter, mut call) = (0i64, 0u64, 0u32);
    let mut tasks = TaskCounts::default();
    let mut step = |ops: &mut Vec<Op>, rng: &mut Rng, cur_iter: &mut u64, tasks: TaskCounts| {
        seconds += 60 * [1, 2, 5, 30][rng.below(4) as usize];
        let tokens = [900, 3000, 7500][rng.below(3) as usize];
        ops.push(Op::Step { seconds, cur_iter: *cur_iter, tasks, tokens });
        *cur_iter += 1;
    };
    while ops.len() < length {
        match rng.below(12) {
            0 => {
                ops.push(Op::User);
                cur_iter = 0;
            }
            1..=2 => {
                // A run of calls of one tool with one argument text, failing
                // (`ARGS[0]` and `ARGS[1]` are the same arguments, written
                // differently), a step after each.
                let tool = TOOLS[rng.below(2) as usize];
                for _ in 0..3 + rng.below(2) {
                    call += 1;
                    let id = format!("c{call}");
                    let input = ARGS[rng.below(2) as usize];
                    ops.push(Op::Call { id: id.clone(), tool, input });
                    ops.push(Op::Result { id, tool, state: ToolResultState::Error });
                    step(&mut ops, &mut rng, &mut cur_iter, tasks);
                }
            }
            3..=4 => {
                call += 1;
                let id = format!("c{call}");
                let (tool, input) = (TOOLS[rng.below(2) as usize], ARGS[rng.below(3) as usize]);
                ops.push(Op::Call { id: id.clone(), tool, input });
                let state =
                    [ToolResultState::Error, ToolResultState::Success][rng.below(2) as usize];
                ops.push(Op::Result { id, tool, state });
            }
            5 => {
                ops.push(Op::Reply);
                cur_iter = 0;
            }
            6 => ops.push(Op::Compress(1 + rng.below(4) as usize)),
            7 => tasks = TaskCounts { pending: rng.below(3), in_progress: rng.below(2) },
            _ => step(&mut ops, &mut rng, &mut cur_iter, tasks),
        }
    }
    ops
}

/// A step's decision and hint, or its error.
type Stepped = Result<(Decision, Option<String>), String>;

fn now(seconds: i64) -> Option<Timestamp> {
    Some(Timestamp::from_unix_seconds(1_784_687_400 + seconds))
}

/// Runs `op` through `session` into `log`: a step's outcome (an event the
/// context refuses is not logged, and is not an error here).
fn run(session: &mut Logged<'_>, op: &Op, log: &mut FileLog) -> Option<Stepped> {
    let mut buf = [0u8; 4096];
    if let Op::Step { seconds, cur_iter, tasks, tokens } = *op {
        let mut hint = [0u8; 1024];
        let step = StepInput { tasks, cur_iter, input_tokens: tokens, context_size: 8192 };
        let stepped =
            block_on(session.step(&step, now(seconds), &mut (), &mut hint, &mut buf, log));
        return Some(
            stepped
                .map(|outcome| (outcome.decision, outcome.hint.map(str::to_string)))
                .map_err(|e| e.to_string()),
        );
    }
    let event = match op {
        Op::User => Event::User { name: "operator", text: "" },
        Op::Call { id, tool, input } => Event::ToolCall { id, name: tool, input },
        Op::Result { id, tool, state } => Event::ToolResult { id, name: tool, state: *state },
        Op::Reply => Event::Reply,
        Op::Compress(keep) => Event::Compress { keep: *keep },
        Op::Step { .. } => unreachable!("above"),
    };
    match block_on(session.record(&event, &mut buf, log)) {
        Ok(()) | Err(SessionError::Record(_)) => None,
        Err(e @ SessionError::Append(_)) => panic!("the file refused an item: {e}"),
    }
}

/// The messages a context holds, as text (hints included).
fn messages(context: &Context<'_>) -> Vec<String> {
    (0..context.len()).map(|i| format!("{:?}", context.newest(i))).collect()
}

/// The hints of ours a context holds, their text.
fn own_hints(context: &Context<'_>, source: &str) -> Vec<String> {
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

/// The session as it ran without a cut.
struct Live<'e> {
    ops: Vec<Op>,
    /// After each item written: the context.
    after: Vec<Context<'e>>,
    /// For each event: the number of items in the log once it was logged
    /// (it is lost when the log holds fewer).
    effects: Vec<usize>,
    /// For each event: a step's outcome.
    outcomes: Vec<Option<Stepped>>,
    /// The file's bytes, and the end of each record in it.
    bytes: Vec<u8>,
    ends: Vec<u64>,
}

fn live<'e>(engine: &'e Engine<'e>, ops: Vec<Op>, path: &Path) -> Live<'e> {
    let _ = fs::remove_file(path);
    let (mut log, _) = FileLog::open(path, Sync::EveryItem).expect("creates the log");
    let header = log.file_len();
    let mut session = Logged::new(engine, AGENT);
    let mut buf = [0u8; 1024];
    block_on(session.start(&mut buf, &mut log)).expect("a header fits");
    let mut after = vec![session.context().clone()];
    let (mut effects, mut outcomes) = (Vec::new(), Vec::new());
    for op in &ops {
        let before = log.len();
        outcomes.push(run(&mut session, op, &mut log));
        // An event and its `compress` note: the note changes no message.
        after.resize(log.len(), session.context().clone());
        effects.push(if log.len() > before { before + 1 } else { before });
    }
    drop(log);
    let bytes = fs::read(path).expect("reads the log");
    let (log, _) = FileLog::open(path, Sync::Never).expect("reopens");
    let ends = log
        .items()
        .scan(header, |end, item| {
            *end += item.len() as u64 + 8;
            Some(*end)
        })
        .collect();
    Live { ops, after, effects, outcomes, bytes, ends }
}

#[derive(Debug, Default)]
struct Figures {
    sessions: usize,
    items: usize,
    bytes: u64,
    cuts: usize,
    restored: usize,
    events_restored: u64,
    torn_tails: usize,
    corrupt_refusals: usize,
    corrupt_applied: usize,
    prefixes_continued: usize,
    steps_compared: usize,
    tool_error_hints: usize,
    hints_restored: usize,
    hints_differing: usize,
    differing: usize,
}

/// Restores the session from `log`'s items; `None` for an empty log.
fn restore<'e>(engine: &'e Engine<'e>, log: &FileLog) -> Option<(Logged<'e>, u32)> {
    let mut scratch = [0u8; 4096];
    match Logged::restore(engine, AGENT, log.items(), &mut scratch) {
        Ok(session) => {
            let events = session.journal().restored_events();
            Some((session, events))
        }
        Err(e) if log.is_empty() => {
            assert_eq!(e.kind, envaware::journal::ItemError::MissingHeader);
            None
        }
        Err(e) => panic!("every item read back restores: {e}"),
    }
}

/// Goes on from the first event the `k` items read back lost, appending to
/// `log`; counts the decisions that differ from the uninterrupted session.
fn continue_session(
    engine: &Engine<'_>,
    live: &Live<'_>,
    mut log: FileLog,
    figures: &mut Figures,
) -> Result<(), FileLogError> {
    let path = log.path().to_path_buf();
    let k = log.len();
    let mut session = match restore(engine, &log) {
        Some((session, _)) => session,
        None => {
            let mut session = Logged::new(engine, AGENT);
            let mut buf = [0u8; 1024];
            block_on(session.start(&mut buf, &mut log)).expect("a header fits");
            session
        }
    };
    let next = live.effects.iter().position(|&effect| effect > k).unwrap_or(live.ops.len());
    for (op, want) in live.ops[next..].iter().zip(&live.outcomes[next..]) {
        let got = run(&mut session, op, &mut log);
        figures.steps_compared += usize::from(want.is_some());
        figures.differing += usize::from(&got != want);
    }
    drop(log);
    // The continued file reopens whole and restores the uninterrupted context.
    let (log, opened) = FileLog::open(&path, Sync::Never)?;
    assert_eq!(opened.torn, None);
    let (again, _) = restore(engine, &log).expect("a header");
    let end = live.after.last().expect("a header");
    figures.differing += usize::from(messages(again.context()) != messages(end));
    figures.prefixes_continued += 1;
    Ok(())
}

fn cut_every_byte(
    engine: &Engine<'_>,
    seed: u64,
    dir: &Path,
    every_cut: bool,
    figures: &mut Figures,
) {
    let full = dir.join(format!("session-{seed}.log"));
    let live = live(engine, session(seed, 60), &full);
    let (bytes, ends) = (&live.bytes, &live.ends);
    assert_eq!(ends.last().copied(), Some(bytes.len() as u64));
    let (written, _) = FileLog::open(&full, Sync::Never).expect("reopens");
    let source = engine.config().config().injection.injection_source;
    figures.sessions += 1;
    figures.tool_error_hints += (live.outcomes.iter().flatten().flatten())
        .filter(|(decision, hint)| decision.tool_error.is_some() && hint.is_some())
        .count();
    figures.items += written.len();
    figures.bytes += bytes.len() as u64;
    let cut = dir.join(format!("cut-{seed}.log"));
    let mut continued = vec![false; written.len() + 1];
    for len in 0..=bytes.len() {
        fs::write(&cut, &bytes[..len]).expect("writes the cut copy");
        figures.cuts += 1;
        let (log, opened) = match FileLog::open(&cut, Sync::Never) {
            Ok(opened) => opened,
            Err(e) => {
                figures.corrupt_refusals += 1;
                eprintln!("cut at {len}: {e}");
                continue;
            }
        };
        if len < HEADER as usize {
            // Cut while the file was made: an empty log, its header written again.
            assert_eq!((opened.items, opened.torn), (0, None), "cut at {len}");
            continue;
        }
        let k = ends.iter().take_while(|&&end| end <= len as u64).count();
        let kept = k.checked_sub(1).map_or(HEADER, |i| ends[i]);
        figures.corrupt_applied +=
            log.items().zip(written.items()).filter(|(read, written)| read != written).count()
                + log.len().abs_diff(k);
        assert_eq!(opened.items, k, "cut at {len}");
        assert_eq!(opened.torn.map_or(0, |t| t.dropped_bytes), len as u64 - kept, "cut at {len}");
        assert_eq!(opened.torn.map(|t| t.offset), (kept != len as u64).then_some(kept));
        figures.torn_tails += usize::from(opened.torn.is_some());
        // The file is cut to the `k` records: the same bytes for every cut
        // that reads back `k` items.
        assert_eq!(fs::read(&cut).expect("reads"), bytes[..kept as usize], "cut at {len}");
        if continued[k] && !every_cut {
            continue;
        }
        let restored = restore(engine, &log);
        let expected = k.checked_sub(1).map_or(Vec::new(), |i| messages(&live.after[i]));
        let got = restored.as_ref().map_or(Vec::new(), |(s, _)| messages(s.context()));
        figures.corrupt_applied += usize::from(got != expected);
        if let (Some((session, events)), Some(i)) = (&restored, k.checked_sub(1)) {
            // Each hint rendered again from its step item is the one the
            // device appended, byte for byte.
            let (again, appended) =
                (own_hints(session.context(), source), own_hints(&live.after[i], source));
            figures.hints_restored += again.len();
            figures.hints_differing += usize::from(again != appended);
            figures.events_restored += u64::from(*events);
        }
        figures.restored += 1;
        if !continued[k] {
            continued[k] = true;
            continue_session(engine, &live, log, figures).expect("the continued file reopens");
        }
    }
}

#[test]
fn a_power_cut_at_any_byte_loses_at_most_the_record_in_flight() {
    let sessions: u64 = std::env::var("ENVAWARE_HOST_POWER_CUT_SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4);
    let every_cut = std::env::var_os("ENVAWARE_HOST_POWER_CUT_RESTORE_EVERY_CUT").is_some();
    // Opening a torn copy fsyncs its cut: tens of thousands of fsyncs, so
    // the copies go to a RAM file system where there is one.
    let shm = Path::new("/dev/shm");
    let tmp = if shm.is_dir() { shm.into() } else { PathBuf::from(env!("CARGO_TARGET_TMPDIR")) };
    let dir = tmp.join(format!("envaware-host-power-cut-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("a temporary directory");
    let engine = Engine::new(Config::default()).expect("the default configuration");
    let mut figures = Figures::default();
    for seed in 1..=sessions {
        cut_every_byte(&engine, seed, &dir, every_cut, &mut figures);
    }
    let f = &figures;
    println!(
        "sessions {}, items {}, bytes {}, cuts {}, restored {}, events restored {}, torn tails \
         cut {}, corrupt refusals {}, corrupt items applied {}, prefixes continued {}, steps \
         compared {}, tool-error hints {}, hints restored {}, restored hints differing {}, \
         differing decisions {}",
        f.sessions,
        f.items,
        f.bytes,
        f.cuts,
        f.restored,
        f.events_restored,
        f.torn_tails,
        f.corrupt_refusals,
        f.corrupt_applied,
        f.prefixes_continued,
        f.steps_compared,
        f.tool_error_hints,
        f.hints_restored,
        f.hints_differing,
        f.differing
    );
    assert_eq!((f.corrupt_refusals, f.corrupt_applied, f.differing), (0, 0, 0));
    assert_eq!(f.hints_differing, 0);
    assert!(f.hints_restored > 100, "{}", f.hints_restored);
    if every_cut {
        assert_eq!(f.restored, f.cuts);
    }
    assert!(f.tool_error_hints > 0, "the sessions make the tool-error hint fire");
    let _ = fs::remove_dir_all(&dir);
}
