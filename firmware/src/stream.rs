//! The session, streamed as AgentScope JSON: one `envaware-sim replay`
//! trace line per [`Output::stream`] line (on the board, one defmt line
//! each, after [`PREFIX`]).
//!
//! Before each step the device writes its whole context as AgentScope
//! `Msg` objects (`{"context": []}`, then one `{"message": Msg}` per
//! message, oldest first, through the core's `wire` writer), the clock the
//! decision reads (`set_clock`) and the plan (`tasks`). After rendering it
//! writes the configuration with its temperature watch (a `config` event),
//! the live values it read (a `read` event: the watched temperature,
//! read before deciding, and the uptime) and the `step` with its
//! `cur_iter` and token count. An environment step (the sensor task woke
//! the agent) is preceded by `{"reply": {}}` and `{"woken": {"temperature":
//! …}}`.
//! `cargo xtask demo` saves the lines to `target/firmware-session.trace.jsonl`;
//! `envaware-sim replay` on that file must give the device's hints, and
//! AgentScope 2.0.11 agrees on the scenarios it emits (`tests/tests/firmware.rs`).
//!
//! The whole context is written at every step rather than only what
//! changed: the replay then decides on exactly the device's context, hint
//! blocks included, at the cost of a few hundred bytes of output per
//! message per step. It is a debugging stream, not what a product would
//! send to its model.

use core::fmt::{self, Write as _};

use envaware::wire::{self, IsoTime, MessageMeta, Rfc3339};
use envaware::Message as _;
use envaware::Zone;
use envaware::{LiveFields, TaskCounts, Timestamp, WatchList};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::agent::{Context, Output, AGENT, CONTEXT_SIZE, TIMEZONE, TIME_INTERVAL_HOURS};

/// What starts each streamed line in the log.
pub const PREFIX: &str = "agentscope> ";

/// Messages whose creation time is remembered: the context's capacity.
const MESSAGES: usize = 16;

/// The streamer: a line buffer, and each live message's creation time.
pub struct Stream {
    buf: [u8; 4096],
    /// Creation times by sequence number modulo [`MESSAGES`].
    created: [Timestamp; MESSAGES],
    /// Messages given a creation time so far.
    stamped: u64,
    zone: Zone,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream").field("stamped", &self.stamped).finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct ConfigLine<'a> {
    config: StartConfig<'a>,
}

#[derive(Serialize)]
struct StartConfig<'a> {
    agent_name: &'a str,
    context_config: ContextConfigOut,
    context_size: i64,
}

#[derive(Serialize)]
struct ContextConfigOut {
    compression_tool_enabled: bool,
}

#[derive(Serialize)]
struct StepConfigLine<'a> {
    config: StepConfig<'a>,
}

#[derive(Serialize)]
struct StepConfig<'a> {
    injection_config: InjectionOut<'a>,
}

#[derive(Serialize)]
struct InjectionOut<'a> {
    timezone: &'a str,
    time_interval: f64,
    watch: Watches<'a>,
}

/// The watches as JSON: each value a decimal string.
struct Watches<'a>(WatchList<'a>);

impl Serialize for Watches<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (name, w) in self.0.iter() {
            m.serialize_entry(name, &WatchOut(w))?;
        }
        m.end()
    }
}

struct WatchOut(envaware::Watch);

impl Serialize for WatchOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let w = &self.0;
        let values = [
            ("change", w.change),
            ("above", w.above),
            ("below", w.below),
            ("hysteresis", Some(w.hysteresis)),
        ];
        let mut m = s.serialize_map(None)?;
        for (key, value) in values {
            if let Some(v) = value {
                m.serialize_entry(key, &Decimal(v))?;
            }
        }
        let intervals = [("min_interval", w.min_interval), ("max_interval", w.max_interval)];
        for (key, value) in intervals {
            if let Some(i) = value {
                m.serialize_entry(key, &Seconds(i))?;
            }
        }
        m.end()
    }
}

/// An interval as its exact text in seconds.
struct Seconds(envaware::Interval);

impl Serialize for Seconds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A decimal as its exact text.
struct Decimal(envaware::Decimal);

impl Serialize for Decimal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

#[derive(Serialize)]
#[serde(bound = "L: LiveFields")]
struct ReadLine<'a, L: LiveFields> {
    read: Fields<'a, L>,
}

/// The live fields as a JSON object.
struct Fields<'a, L>(&'a L);

impl<L: LiveFields> Serialize for Fields<'_, L> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for i in 0..self.0.len() {
            if let Some((k, v)) = self.0.field(i) {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

#[derive(Serialize)]
struct ReplyLine {
    reply: Empty,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
struct WokenLine<'a> {
    woken: WokenOut<'a>,
}

#[derive(Serialize)]
struct WokenOut<'a> {
    temperature: &'a str,
}

#[derive(Serialize)]
struct ClockLine {
    set_clock: Option<Rfc3339>,
}

#[derive(Serialize)]
struct TasksLine {
    tasks: Tasks,
}

/// The plan as task states: the in-progress tasks, then the pending ones.
struct Tasks(TaskCounts);

impl Serialize for Tasks {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let TaskCounts { pending, in_progress } = self.0;
        let mut seq = s.serialize_seq(None)?;
        for _ in 0..in_progress {
            seq.serialize_element("in_progress")?;
        }
        for _ in 0..pending {
            seq.serialize_element("pending")?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct StepLine {
    step: StepOut,
}

#[derive(Serialize)]
struct StepOut {
    cur_iter: u64,
    tokens: i64,
}

impl Stream {
    /// A streamer writing creation times in `zone`.
    pub fn new(zone: Zone) -> Self {
        Stream { buf: [0; 4096], created: [Timestamp(0); MESSAGES], stamped: 0, zone }
    }

    fn line(&mut self, out: &mut impl Output, value: &impl Serialize) {
        match serde_json_core::to_slice(value, &mut self.buf) {
            Ok(n) => self.print(out, n),
            Err(_) => error!("stream: a line is longer than {=usize} bytes", self.buf.len()),
        }
    }

    fn print(&self, out: &mut impl Output, n: usize) {
        match core::str::from_utf8(&self.buf[..n]) {
            Ok(text) => out.stream(text),
            Err(_) => error!("stream: not UTF-8"),
        }
    }

    /// The session's configuration: written once, before the first step.
    pub fn start(&mut self, out: &mut impl Output) {
        self.line(
            out,
            &ConfigLine {
                config: StartConfig {
                    agent_name: AGENT,
                    context_config: ContextConfigOut { compression_tool_enabled: true },
                    context_size: CONTEXT_SIZE,
                },
            },
        );
    }

    /// Stamps the messages `context` holds that this stream has not seen
    /// with `stamp`, their `created_at`: the time of the step that first
    /// decided on them. Also called for each step a restore reads back, so
    /// that a restored session streams the times it streamed before.
    pub fn stamp(&mut self, context: &Context<'_>, stamp: Option<Timestamp>) {
        let newest = context.sequence(0).map_or(0, |s| s + 1);
        while self.stamped < newest {
            self.created[(self.stamped % MESSAGES as u64) as usize] = stamp.unwrap_or(Timestamp(0));
            self.stamped += 1;
        }
    }

    /// Forgets the stamps: the context starts again empty.
    pub fn forget(&mut self) {
        self.stamped = 0;
    }

    /// What the step decides on: the whole context, the clock `now` and the
    /// plan. Messages seen for the first time are stamped with `stamp`.
    pub fn before_step(
        &mut self,
        out: &mut impl Output,
        context: &Context<'_>,
        stamp: Option<Timestamp>,
        now: Option<Timestamp>,
        tasks: TaskCounts,
    ) {
        self.stamp(context, stamp);
        self.buf[..14].copy_from_slice(b"{\"context\":[]}");
        self.print(out, 14);
        for index in (0..context.len()).rev() {
            let (Some(msg), Some(seq)) = (context.newest(index), context.sequence(index)) else {
                continue;
            };
            let mut id: heapless::String<24> = heapless::String::new();
            let _ = write!(id, "{}-{}", AGENT, seq);
            let meta = MessageMeta {
                id: &id,
                created_at: IsoTime {
                    at: self.created[(seq % MESSAGES as u64) as usize],
                    zone: self.zone,
                },
            };
            const OPEN: &[u8] = b"{\"message\":";
            self.buf[..OPEN.len()].copy_from_slice(OPEN);
            let written = wire::write_message(&msg, &meta, &mut self.buf[OPEN.len()..]);
            match written {
                Ok(n) if OPEN.len() + n < self.buf.len() => {
                    self.buf[OPEN.len() + n] = b'}';
                    self.print(out, OPEN.len() + n + 1);
                }
                _ => error!(
                    "stream: message {=u64} ({=usize} blocks) is too long",
                    seq,
                    msg.block_count()
                ),
            }
        }
        self.line(out, &ClockLine { set_clock: now.map(Rfc3339) });
        self.line(out, &TasksLine { tasks: Tasks(tasks) });
    }

    /// An environment step begins: a new reply with no user message
    /// (`{"reply": {}}`), started by the reading that would fire the
    /// temperature watch (`{"woken": {"temperature": "31.0 °C"}}`, which
    /// `envaware-sim replay` shows at the step that follows).
    pub fn woken(&mut self, out: &mut impl Output, temperature: &str) {
        self.line(out, &ReplyLine { reply: Empty {} });
        self.line(out, &WokenLine { woken: WokenOut { temperature } });
    }

    /// The step itself, once rendered: the configuration with its watch,
    /// the live values read, then the step.
    pub fn step<L: LiveFields>(
        &mut self,
        out: &mut impl Output,
        live: &L,
        cur_iter: u64,
        tokens: i64,
    ) {
        let watch = Watches(crate::agent::config().injection.watch);
        let injection_config =
            InjectionOut { timezone: TIMEZONE, time_interval: TIME_INTERVAL_HOURS, watch };
        self.line(out, &StepConfigLine { config: StepConfig { injection_config } });
        self.line(out, &ReadLine { read: Fields(live) });
        self.line(out, &StepLine { step: StepOut { cur_iter, tokens } });
    }
}
