//! What a replay records of each step, shared by the replay that fills
//! the records ([`crate::replay`]) and the picture that draws them
//! ([`crate::plot`]): neither imports the other.

use envaware::Timestamp;

use crate::scenario::OwnedBlock;

/// What the replay knows about one step, for the picture.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepRecord {
    /// The step's number, from 1.
    pub step: usize,
    /// The trace line of the step (0 for a dump).
    pub line: usize,
    /// The step's `cur_iter`: 0 starts a reply (AgentScope's count of the
    /// reasoning steps of the current reply).
    pub cur_iter: u64,
    /// The agent's name at the step.
    pub agent: String,
    /// The core's hash of the configuration and the agent's name
    /// (`journal::Header::for_session` with no capacities): the same
    /// configuration gives the same hash whatever the input was.
    pub config_hash: u64,
    /// The clock at the step; `None` when unset.
    pub clock: Option<Timestamp>,
    /// Whether a `set_clock` event came since the previous step.
    pub clock_set: bool,
    /// The configured zone's name.
    pub zone: String,
    /// The time dimension fired.
    pub time: bool,
    /// The time dimension was skipped (the clock is unset).
    pub time_skipped: bool,
    /// The tasks dimension fired: pending and in-progress counts.
    pub tasks: Option<(u64, u64)>,
    /// The context-length dimension fired.
    pub context_length: bool,
    /// The tool-error dimension fired: the failures in a row.
    pub tool_error: Option<u64>,
    /// The hint text (also when it did not fit the buffer).
    pub hint: Option<String>,
    /// The hint did not fit: bytes needed and the buffer's capacity.
    pub too_long: Option<(usize, usize)>,
    /// Input tokens.
    pub input_tokens: i64,
    /// The context-length reminder's threshold, `(trigger - buffer) * size`.
    pub reminder_tokens: f64,
    /// The compression trigger, `int(trigger * size)`.
    pub trigger_tokens: i64,
    /// `time_interval`, in hours.
    pub time_interval_hours: f64,
    /// When the newest time hint in the context was told, if this replay
    /// told it.
    pub told_at: Option<Timestamp>,
    /// Compressions since the previous step, each described.
    pub compressions: Vec<String>,
    /// Each watched field at this step, in configuration order.
    pub watches: Vec<WatchRecord>,
    /// The model's context size the step decided with, in tokens.
    pub context_size: i64,
    /// The plan's tasks at the step, pending and in progress (told or not).
    pub task_counts: (u64, u64),
    /// The live fields the hint told, name and text, in order (none without
    /// a hint).
    pub told: Vec<(String, String)>,
    /// The step was decided again and compared with what its input
    /// recorded (a device log's decision, a trace step's `hint`); a
    /// compacted log's steps before its header are not.
    pub checked: bool,
}

/// One watched field at one step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchRecord {
    /// The field's name.
    pub field: String,
    /// The reading as rendered (`unavailable` when it has none).
    pub reading: String,
    /// The reading's value (its leading decimal), if any.
    pub value: Option<f64>,
    /// The value the context told before this step, if any.
    pub told: Option<f64>,
    /// `change`.
    pub change: Option<f64>,
    /// `above`.
    pub above: Option<f64>,
    /// `below`.
    pub below: Option<f64>,
    /// `hysteresis`.
    pub hysteresis: f64,
    /// Whether the watch fired (by value or heartbeat).
    pub fired: bool,
    /// Whether it fired by its heartbeat (`max_interval`) only.
    pub heartbeat: bool,
    /// Whether `min_interval` held its change back (it did not fire).
    pub throttled: bool,
    /// `min_interval`, in seconds.
    pub min_interval: Option<f64>,
    /// `max_interval`, in seconds.
    pub max_interval: Option<f64>,
}

/// A decimal, for drawing.
pub fn approx(d: envaware::Decimal) -> f64 {
    d.to_string().parse().unwrap_or(f64::NAN)
}

/// The text of `block` when it is a hint of `source` that tells the time:
/// the newest such block of an assistant message is the one the time rule
/// reads back.
pub fn tells_time<'b>(block: &'b OwnedBlock, source: &str) -> Option<&'b str> {
    match block {
        OwnedBlock::Hint { source: Some(s), text, .. }
            if s == source && text.contains("<current-time>") =>
        {
            Some(text.as_str())
        }
        _ => None,
    }
}

/// An instant as RFC 3339 in UTC, with microseconds only when there are some.
pub fn format_instant(t: Timestamp) -> String {
    match chrono::DateTime::from_timestamp_micros(t.unix_micros()) {
        Some(dt) if dt.timestamp_subsec_micros() == 0 => {
            dt.format("%Y-%m-%dT%H:%M:%SZ").to_string()
        }
        Some(dt) => dt.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        None => format!("@{}us", t.unix_micros()),
    }
}
