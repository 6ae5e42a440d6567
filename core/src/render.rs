//! Rendering: the hint text, written into a caller-sized buffer.

use core::fmt::{self, Write};

use crate::clock::Timestamp;
use crate::config::{is_builtin_key, ExtraFields, RUNTIME_STATE_PLACEHOLDER};
use crate::live::LiveFields;
use crate::rules::compiled::ValidConfig;
use crate::rules::{ContextLength, Decision, TaskCounts, TimeDecision};
use crate::text::{find_bytes, push_escaped, u64_str, ByteWriter, Bytes, Escaped, Replace};
use crate::time;

/// The reference's name for its compression tool, quoted in `<context-length>`.
pub const COMPRESSION_TOOL_NAME: &str = "CompressContext";

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
    extra: ExtraFields<'a>,
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
            let value =
                (i..n).rev().find_map(|j| self.get(j).filter(|(k, _)| *k == key)).map(|(_, v)| v);
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
        Value::Time(now) => time::push_time(w, inj.time_format, now, cfg.zone),
        Value::Text(s) if inj.strict => Escaped(&mut *w).write_str(s),
        Value::Text(s) => w.write_str(s),
        Value::Tasks(t) => {
            w.push(b"You have ");
            write_u64(w, t.in_progress);
            w.push(b" in-progress tasks and ");
            write_u64(w, t.pending);
            w.push(b" pending tasks. Use `TaskList` to view them if you don't know.");
            Ok(())
        }
        Value::Context(c) => {
            w.push(b"Your current context contains ");
            write_i64(w, c.input_tokens);
            w.push(b" tokens. When reaching ");
            write_i64(w, c.trigger_tokens);
            w.push(b" tokens, your context will be compressed.");
            if c.suggest_compression {
                w.push(b" No task is in progress, so judge by yourself whether the context should be compressed now by calling `");
                w.push(COMPRESSION_TOOL_NAME.as_bytes());
                w.push(b"`.");
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

fn write_u64(w: &mut ByteWriter<'_>, n: u64) {
    let mut digits = [0u8; 20];
    w.push(u64_str(n, &mut digits).as_bytes());
}

/// `n` as Python's `str(int)`: a minus sign, then the digits.
fn write_i64(w: &mut ByteWriter<'_>, n: i64) {
    if n < 0 {
        w.push(b"-");
    }
    write_u64(w, n.unsigned_abs());
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
    // `template.replace("{runtime_state}", state)`, the state written in
    // place; where the first placeholder stands was found at validation.
    let placeholder = RUNTIME_STATE_PLACEHOLDER.as_bytes();
    let (mut at, mut rest) = (Some(cfg.state_start), inj.template.as_bytes());
    while let Some(i) = at {
        w.push(rest.get(..i).unwrap_or(&[]));
        entries.write_state(cfg, &mut w);
        rest = rest.get(i + placeholder.len()..).unwrap_or(&[]);
        at = find_bytes(rest, placeholder);
    }
    w.push(rest);
    let capacity = w.capacity();
    w.finish().map(Some).map_err(|needed| HintTooLong { needed, capacity })
}

/// Whether a live field would be dropped in strict mode (a built-in key).
pub(crate) fn drops_live_field<L: LiveFields + ?Sized>(cfg: &ValidConfig<'_>, live: &L) -> bool {
    cfg.config.injection.strict
        && (0..live.len()).any(|i| live.field(i).is_some_and(|(k, _)| is_builtin_key(k)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, InjectionConfig};
    use crate::rules::{Decision, ToolError, Warnings};
    use std::string::ToString;

    const NOW: i64 = 1_784_687_400; // 2026-07-22T02:30:00Z

    fn valid(f: impl FnOnce(&mut InjectionConfig<'static>)) -> ValidConfig<'static> {
        let mut injection =
            InjectionConfig { template: "A{runtime_state}B{runtime_state}C", ..Default::default() };
        f(&mut injection);
        Config { injection, ..Default::default() }.validate().unwrap()
    }

    fn everything() -> Decision {
        Decision {
            time: TimeDecision::Inject(Timestamp::from_unix_seconds(NOW)),
            tasks: Some(TaskCounts { pending: 2, in_progress: 1 }),
            context: Some(ContextLength {
                input_tokens: 601,
                trigger_tokens: 800,
                suggest_compression: true,
            }),
            tool_error: Some(ToolError { count: 10, result: 0 }),
            watch: crate::rules::watch::WatchSet::EMPTY,
            warnings: Warnings::default(),
            now: Some(Timestamp::from_unix_seconds(NOW)),
        }
    }

    fn rendered<L: LiveFields + ?Sized>(
        cfg: &ValidConfig<'_>,
        d: &Decision,
        tool: &str,
        live: &L,
    ) -> std::string::String {
        let mut out = [0u8; 2048];
        render(cfg, d, tool, live, &mut out).unwrap().unwrap().into()
    }

    #[test]
    fn every_field_in_the_reference_s_order_with_dict_update_for_extra_and_live_keys() {
        const EXTRA: [(&str, &str); 2] = [("timezone", "Mars"), ("robot", "R2")];
        let cfg = valid(|i| {
            (i.extra_fields, i.tool_retries_hint) =
                (ExtraFields::Slice(&EXTRA), "{count}x '{tool_name}' {count}")
        });
        let live = ExtraFields::Slice(&[("robot", "R3"), ("temp", "<21>")]);
        let state = "<current-time>2026-07-22T02:30:00</current-time>\n\
            <timezone>Mars</timezone>\n\
            <tasks>You have 1 in-progress tasks and 2 pending tasks. Use `TaskList` to view them if you don't know.</tasks>\n\
            <context-length>Your current context contains 601 tokens. When reaching 800 tokens, your context will be compressed. \
            No task is in progress, so judge by yourself whether the context should be compressed now by calling `CompressContext`.</context-length>\n\
            <tool-error>10x 'Dr10ive' 10</tool-error>\n\
            <robot>R3</robot>\n\
            <temp><21></temp>";
        // `{tool_name}` is replaced first: a `{count}` in the name is replaced too, as Python's chained replace does.
        assert_eq!(
            rendered(&cfg, &everything(), "Dr{count}ive", &live),
            std::format!("A{state}B{state}C")
        );
    }

    #[test]
    fn only_the_fired_dimensions_are_written() {
        let cfg = valid(|_| {});
        let tasks_only =
            Decision { tasks: Some(TaskCounts { pending: 0, in_progress: 0 }), ..Decision::NONE };
        let text = "<tasks>You have 0 in-progress tasks and 0 pending tasks. Use `TaskList` to view them if you don't know.</tasks>";
        assert_eq!(rendered(&cfg, &tasks_only, "", &()), std::format!("A{text}B{text}C"));
        let context = Decision {
            context: Some(ContextLength {
                input_tokens: 0,
                trigger_tokens: 7,
                suggest_compression: false,
            }),
            ..Decision::NONE
        };
        let text = "<context-length>Your current context contains 0 tokens. When reaching 7 tokens, your context will be compressed.</context-length>";
        assert_eq!(rendered(&cfg, &context, "", &()), std::format!("A{text}B{text}C"));
        let mut out = [0u8; 64];
        assert_eq!(render(&cfg, &Decision::NONE, "x", &(), &mut out), Ok(None));
        // Live fields alone never fire.
        assert_eq!(
            render(&cfg, &Decision::NONE, "x", &ExtraFields::Slice(&[("a", "b")]), &mut out),
            Ok(None)
        );
    }

    #[test]
    fn strict_mode_escapes_what_it_did_not_write_itself() {
        let cfg = valid(|i| (i.strict, i.tool_retries_hint) = (true, "<b>{tool_name}</b> {count}"));
        let d = Decision { tool_error: Some(ToolError { count: 3, result: 0 }), ..Decision::NONE };
        let live = ExtraFields::Slice(&[("<k>", "<v>"), ("tasks", "spoofed")]);
        let state = "<tool-error><b>&lt;T&gt;</b> 3</tool-error>\n<&lt;k&gt;>&lt;v&gt;</&lt;k&gt;>";
        assert_eq!(rendered(&cfg, &d, "<T>", &live), std::format!("A{state}B{state}C"));
        assert!(drops_live_field(&cfg, &live));
        assert!(!drops_live_field(&cfg, &ExtraFields::Slice(&[("robot", "x")])));
        assert!(!drops_live_field(&valid(|_| {}), &live));
    }

    #[test]
    fn counts_are_written_in_full() {
        let mut digits = [0u8; 20];
        for n in [0, 7, 10, 1_000_000_007, u64::MAX] {
            assert_eq!(u64_str(n, &mut digits), n.to_string());
        }
    }

    #[test]
    fn a_hint_too_long_says_what_it_needs_and_fits_with_that() {
        let cfg = valid(|_| {});
        let mut small = [0u8; 8];
        let err = render(&cfg, &everything(), "Drive", &(), &mut small).unwrap_err();
        assert_eq!(err.capacity, 8);
        assert_eq!(
            err.to_string(),
            std::format!("the hint needs {} bytes but the buffer holds 8", err.needed)
        );
        let mut exact = std::vec![0u8; err.needed];
        assert_eq!(
            render(&cfg, &everything(), "Drive", &(), &mut exact).unwrap().map(str::len),
            Some(err.needed)
        );
        let mut short = std::vec![0u8; err.needed - 1];
        assert!(render(&cfg, &everything(), "Drive", &(), &mut short).is_err());
    }

    #[test]
    fn live_field_sources_report_their_fields() {
        assert_eq!((LiveFields::len(&()), ().field(0), LiveFields::is_empty(&())), (0, None, true));
        let list = ExtraFields::Slice(&[("a", "1"), ("b", "2")]);
        assert_eq!(
            (LiveFields::len(&list), list.field(1), list.field(2), LiveFields::is_empty(&list)),
            (2, Some(("b", "2")), None, false)
        );
    }
}
