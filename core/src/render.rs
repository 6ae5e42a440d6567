//! Rendering: the hint text, written into a caller-sized buffer.
//!
//! The fields are `<key>value</key>` lines in the reference's dict order:
//! `current-time`, `timezone`, `tasks`, `context-length`, `tool-error`, then
//! the extra fields with `dict.update` semantics (a colliding key keeps its
//! place and takes the new value). Every `{runtime_state}` in the template is
//! replaced, and the tool-error hint is `hint.replace("{tool_name}",
//! name).replace("{count}", count)`, all streamed: nothing is materialized.

use core::fmt::{self, Write};

use crate::clock::Timestamp;
use crate::config::{is_builtin_key, FieldList, ValidConfig, RUNTIME_STATE_PLACEHOLDER};
use crate::rules::{ContextLength, Decision, TaskCounts, TimeDecision};
use crate::text::{push_escaped, ByteWriter, Bytes, Escaped, Replace};
use crate::time;

/// The reference's name for its compression tool, quoted in `<context-length>`.
pub const COMPRESSION_TOOL_NAME: &str = "CompressContext";

/// Fields whose values are read when an injection fires: sensor readings,
/// uptime, anything live. Attached to a hint, never a trigger by themselves.
pub trait LiveFields {
    /// Called once when an injection fires, before any field is read; read
    /// sensors here, so that nothing is read for a step that injects nothing.
    fn refresh(&mut self) {}
    /// How many fields there are.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Field `i` as `(key, value)`.
    fn field(&self, i: usize) -> Option<(&str, &str)>;
}

impl LiveFields for FieldList<'_> {
    fn len(&self) -> usize {
        FieldList::len(self)
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        self.get(i)
    }
}

/// No live fields.
impl LiveFields for () {
    fn len(&self) -> usize {
        0
    }
    fn field(&self, _: usize) -> Option<(&str, &str)> {
        None
    }
}

/// The hint did not fit the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub struct HintTooLong {
    /// Bytes the hint needs.
    pub needed: usize,
    /// Bytes the buffer holds.
    pub capacity: usize,
}

impl fmt::Display for HintTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the hint needs {} bytes but the buffer holds {}", self.needed, self.capacity)
    }
}

impl core::error::Error for HintTooLong {}

#[derive(Clone, Copy)]
enum Value<'a> {
    Time(Timestamp),
    Text(&'a str),
    Tasks(TaskCounts),
    Context(ContextLength),
    ToolError(&'a str, u64),
}

/// The injection's fields before `dict.update` is applied: the built-in
/// ones that fired, then the configured extras, then the live ones.
struct Entries<'a, L: ?Sized> {
    builtin: heapless::Vec<(&'a str, Value<'a>), 5>,
    extra: FieldList<'a>,
    live: &'a L,
    strict: bool,
}

impl<'a, L: LiveFields + ?Sized> Entries<'a, L> {
    fn len(&self) -> usize {
        self.builtin.len() + self.extra.len() + self.live.len()
    }

    fn get(&self, i: usize) -> Option<(&'a str, Value<'a>)> {
        if let Some(e) = self.builtin.get(i) {
            return Some(*e);
        }
        let i = i - self.builtin.len();
        if let Some((k, v)) = self.extra.get(i) {
            return Some((k, Value::Text(v)));
        }
        let (k, v) = self.live.field(i - self.extra.len())?;
        if self.strict && is_builtin_key(k) {
            return None;
        }
        Some((k, Value::Text(v)))
    }

    /// `"\n".join(f"<{k}>{v}</{k}>" ...)` over the dict these entries build.
    fn write_state(&self, cfg: &ValidConfig<'_>, w: &mut ByteWriter<'_>) {
        let n = self.len();
        let mut first = true;
        for i in 0..n {
            let Some((key, _)) = self.get(i) else { continue };
            if (0..i).any(|j| self.get(j).is_some_and(|(k, _)| k == key)) {
                continue; // already written at its first position
            }
            let value = (i..n).rev().find_map(|j| self.get(j).filter(|(k, _)| *k == key)).map(|(_, v)| v);
            let Some(value) = value else { continue };
            if !first {
                w.push(b"\n");
            }
            first = false;
            // Strict mode: a live key or value cannot open or close a tag
            // (configured ones hold no '<' or '>', so escaping leaves them).
            let write_key = |w: &mut ByteWriter<'_>| match self.strict {
                true => push_escaped(w, key.as_bytes()),
                false => w.push(key.as_bytes()),
            };
            w.push(b"<");
            write_key(w);
            w.push(b">");
            write_value(cfg, value, w);
            w.push(b"</");
            write_key(w);
            w.push(b">");
        }
    }
}

fn write_value(cfg: &ValidConfig<'_>, value: Value<'_>, w: &mut ByteWriter<'_>) {
    let inj = &cfg.config.injection;
    // ByteWriter never fails; overflow is reported by `finish`.
    let _ = match value {
        Value::Time(now) => time::format_time(w, inj.time_format, now, cfg.zone),
        Value::Text(s) if inj.strict => Escaped(&mut *w).write_str(s),
        Value::Text(s) => w.write_str(s),
        Value::Tasks(t) => write!(
            w,
            "You have {} in-progress tasks and {} pending tasks. Use `TaskList` to view them if you don't know.",
            t.in_progress, t.pending
        ),
        Value::Context(c) => {
            let _ = write!(
                w,
                "Your current context contains {} tokens. When reaching {} tokens, your context will be compressed.",
                c.input_tokens, c.trigger_tokens
            );
            if c.suggest_compression {
                let _ = write!(
                    w,
                    " No task is in progress, so judge by yourself whether the context should be compressed now by calling `{COMPRESSION_TOOL_NAME}`."
                );
            }
            Ok(())
        }
        Value::ToolError(name, count) => {
            let mut digits = [0u8; 20];
            let count = u64_str(count, &mut digits);
            let by_count = Replace::new(&mut *w, "{count}", count);
            let mut by_name = Replace::new(by_count, "{tool_name}", name);
            if inj.strict {
                // The tool name is the model's text, not the operator's.
                by_name = by_name.escaping_replacement();
            }
            by_name.push(inj.tool_retries_hint.as_bytes());
            by_name.finish().finish();
            Ok(())
        }
    };
}

fn u64_str(mut n: u64, buf: &mut [u8; 20]) -> &str {
    // u64::MAX has 20 digits: the loop ends with n == 0 before the start.
    let mut i = buf.len();
    for slot in buf.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        i -= 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.get(i..).and_then(|d| core::str::from_utf8(d).ok()).unwrap_or("0")
}

/// Renders the hint for `decision` into `out`. `tool_name` is the failing
/// tool when the tool-error dimension fired. Returns `None` when nothing
/// fires.
pub(crate) fn render<'b, L: LiveFields + ?Sized>(
    cfg: &ValidConfig<'_>,
    decision: &Decision,
    tool_name: &str,
    live: &L,
    out: &'b mut [u8],
) -> Result<Option<&'b str>, HintTooLong> {
    if !decision.fires() {
        return Ok(None);
    }
    let inj = &cfg.config.injection;
    let mut builtin = heapless::Vec::new();
    // Five slots for five built-in fields: pushes cannot fail.
    if let TimeDecision::Inject(now) = decision.time {
        let _ = builtin.push(("current-time", Value::Time(now)));
        let _ = builtin.push(("timezone", Value::Text(inj.timezone)));
    }
    if let Some(t) = decision.tasks {
        let _ = builtin.push(("tasks", Value::Tasks(t)));
    }
    if let Some(c) = decision.context {
        let _ = builtin.push(("context-length", Value::Context(c)));
    }
    if let Some(e) = decision.tool_error {
        let _ = builtin.push(("tool-error", Value::ToolError(tool_name, e.count)));
    }
    let entries = Entries { builtin, extra: inj.extra_fields, live, strict: inj.strict };
    let mut w = ByteWriter::new(out);
    let mut segments = inj.template.split(RUNTIME_STATE_PLACEHOLDER);
    if let Some(first) = segments.next() {
        w.push(first.as_bytes());
    }
    for segment in segments {
        entries.write_state(cfg, &mut w);
        w.push(segment.as_bytes());
    }
    let capacity = w.capacity();
    w.finish().map(Some).map_err(|needed| HintTooLong { needed, capacity })
}

/// Whether a live field would be dropped in strict mode (a built-in key).
pub(crate) fn drops_live_field<L: LiveFields + ?Sized>(cfg: &ValidConfig<'_>, live: &L) -> bool {
    cfg.config.injection.strict && (0..live.len()).any(|i| live.field(i).is_some_and(|(k, _)| is_builtin_key(k)))
}
