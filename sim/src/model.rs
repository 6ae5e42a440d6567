//! An independent reference model of the injection rules, for `fuzz`.
//!
//! Plain `std` Rust written directly from AgentScope 2.0.11's
//! `Agent._inject_runtime_state` and `_get_repeated_tool_error` (and the
//! docs/differences.md for envaware's `strict` mode). It shares no code with the core:
//! its own context types, its own scan, its own time handling (chrono's
//! `strftime`/parser and chrono-tz, with each zone's final rule past 2099
//! in `zone`, where the core has its own Python-exact implementation), `json.dumps(sort_keys=True)` over
//! serde_json from the `pyjson` crate (shared with the `args` fuzz target,
//! not with the core), its own rendering. It covers what the fuzzer generates, not
//! everything the core does: the time formats in [`FORMATS`], arguments
//! made of integers, a few floats, strings, booleans, null, arrays and
//! objects.
//!
//! envaware's watches are modelled from `../shared/scenario-format.md` the
//! same way, time rules included: the model reads a hint's `created_at`
//! itself (an instant with `Z` or an offset, or a wall time of the
//! configured zone, subtracted as Python subtracts datetimes sharing one
//! tzinfo), parses the intervals from their configured texts, and says why
//! each watch fired ([`Dims::heartbeat`]) or was held back
//! ([`Dims::throttled`]).
//!
//! [`Model::broken`] variants break one rule on purpose, to show the fuzzer
//! catches it.

use std::collections::BTreeSet;

use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone, Utc};
use serde_json::Value;

mod zone;
use zone::ModelTz;

/// The time formats the fuzzer generates, all readable back by Python's
/// `strptime` and by chrono's parser alike.
pub const FORMATS: &[&str] = &[
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M:%S%z",
    "%d/%m/%Y %I:%M:%S %p",
    "%a %b %d %H:%M:%S %Y",
    "%Y-%m-%d %H:%M:%S.%f",
];

/// The zones the fuzzer generates: DST in both hemispheres, a half-hour
/// DST (Lord Howe), fixed offsets, and names that are no zone at all.
pub const ZONES: &[&str] = &[
    "UTC",
    "Asia/Shanghai",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Mars/Olympus_Mons",
    "Nowhere",
];

/// A content block, as the model reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum MBlock {
    /// A text block (never read).
    Text(String),
    /// A hint block.
    Hint {
        /// Its source.
        source: Option<String>,
        /// Its text.
        text: String,
        /// Its `created_at`, as written (any text; `None`: missing).
        created_at: Option<String>,
    },
    /// A tool call.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Raw arguments.
        input: String,
    },
    /// A tool result.
    ToolResult {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// `success`, `error`, `interrupted`, `denied` or `running`.
        state: &'static str,
    },
}

/// A message, as the model reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct MMsg {
    /// `user`, `assistant` or `system`.
    pub role: &'static str,
    /// Sender name.
    pub name: String,
    /// Content blocks, oldest first.
    pub blocks: Vec<MBlock>,
}

/// The configuration, as the model reads it (AgentScope field names).
#[derive(Debug, Clone, PartialEq)]
pub struct MConfig {
    /// `injection_config.inject_runtime_state`: whether anything is injected.
    pub inject_runtime_state: bool,
    /// `injection_config.timezone`, an IANA name.
    pub timezone: String,
    /// `injection_config.time_format`, a strftime format.
    pub time_format: String,
    /// `injection_config.time_interval`, in hours.
    pub time_interval: f64,
    /// The deprecated `injection_config.context_buffer_ratio`.
    pub injection_buffer_ratio: Option<f64>,
    /// `injection_config.tool_retries_limit`: identical failures before the hint.
    pub tool_retries_limit: u64,
    /// `injection_config.tool_retries_hint`.
    pub tool_retries_hint: String,
    /// `injection_config.template`.
    pub template: String,
    /// `injection_config.injection_source`: the hint blocks' source.
    pub injection_source: String,
    /// `injection_config.task_tool_names`.
    pub task_tool_names: Vec<String>,
    /// `injection_config.extra_fields`, in order.
    pub extra_fields: Vec<(String, String)>,
    /// `injection_config.emit_hint_event`.
    pub emit_hint_event: bool,
    /// envaware's `strict` mode (docs/differences.md).
    pub strict: bool,
    /// `context_config.trigger_ratio`.
    pub trigger_ratio: f64,
    /// `context_config.reserve_ratio`.
    pub reserve_ratio: f64,
    /// `context_config.context_buffer_ratio`.
    pub context_buffer_ratio: f64,
    /// `context_config.compression_tool_enabled`.
    pub compression_tool_enabled: bool,
    /// envaware's `injection_config.watch`, in order.
    pub watch: Vec<(String, MWatch)>,
}

/// One watch, its values as the decimal texts configured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MWatch {
    /// `change`.
    pub change: Option<String>,
    /// `above`.
    pub above: Option<String>,
    /// `below`.
    pub below: Option<String>,
    /// `hysteresis` (0 when absent).
    pub hysteresis: Option<String>,
    /// `min_interval`, in seconds.
    pub min_interval: Option<String>,
    /// `max_interval`, in seconds.
    pub max_interval: Option<String>,
}

/// What the step knows besides the context.
#[derive(Debug, Clone, PartialEq)]
pub struct MStep {
    /// The deciding agent's name.
    pub agent_name: String,
    /// Tasks pending.
    pub pending: u64,
    /// Tasks in progress.
    pub in_progress: u64,
    /// The reasoning iteration within the reply.
    pub cur_iter: u64,
    /// Input tokens of the context.
    pub input_tokens: i64,
    /// The model's context window, in tokens.
    pub context_size: i64,
    /// The wall clock, Unix microseconds.
    pub now_micros: i64,
    /// Live readings, in order: text, or `None` when unavailable.
    pub readings: Vec<(String, Option<String>)>,
}

/// Which dimensions fired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dims {
    /// The time hint.
    pub time: bool,
    /// The tasks hint.
    pub tasks: bool,
    /// The context-length hint.
    pub context: bool,
    /// The repeated tool error hint.
    pub tool_error: bool,
    /// The watched fields whose watch fired, in configuration order.
    pub watch: Vec<String>,
    /// Of those, the ones fired by their heartbeat (`max_interval`) only.
    pub heartbeat: Vec<String>,
    /// The watched fields whose change `min_interval` held back (not fired).
    pub throttled: Vec<String>,
}

/// Warnings the model predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MWarning {
    /// The deprecated buffer field is set.
    DeprecatedBuffer,
    /// The configured zone is unknown.
    ZoneFallback,
    /// A recorded zone is unknown.
    RecordedZoneFallback,
}

/// The model's outcome for one step.
#[derive(Debug, Clone, PartialEq)]
pub struct MOutcome {
    /// The hint's text, or none.
    pub hint: Option<String>,
    /// Whether a `HintBlockEvent` is emitted.
    pub event: bool,
    /// Which dimensions fired.
    pub dims: Dims,
    /// Warnings for this step.
    pub warnings: BTreeSet<MWarning>,
    /// Situations this step met, for the fuzzer's coverage summary.
    pub notes: Vec<&'static str>,
}

/// A rule broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breakage {
    /// `elapsed < time_interval` where the reference has `<=`.
    TimeBoundaryStrict,
    /// The tool-error streak ignores the arguments.
    ToolErrorIgnoresArguments,
    /// A watch's change is throttled while `age <= min_interval`, where
    /// the format has `age < min_interval`.
    ThrottleInclusive,
}

/// The reference model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Model {
    /// A deliberately broken rule, or `None` for the faithful model.
    pub broken: Option<Breakage>,
}

/// The tzinfo a name resolves to, as Python sees it: a `ZoneInfo` cached per
/// key, or the one `timezone.utc` every unknown name falls back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TzInfo<'a> {
    Zone(&'a str, ModelTz),
    FallbackUtc,
}

/// Whether `name` is a zone Python's `ZoneInfo` knows (strict mode
/// refuses any other at creation; compatible mode falls back to UTC).
pub fn is_known_zone(name: &str) -> bool {
    ModelTz::named(name).is_some()
}

fn resolve(name: &str) -> TzInfo<'_> {
    match ModelTz::named(name) {
        Some(tz) if ZONES.contains(&name) => TzInfo::Zone(name, tz),
        _ => TzInfo::FallbackUtc,
    }
}

/// Python's `%f` is six digits; chrono's is nine.
fn chrono_format(py: &str) -> String {
    py.replace("%f", "%6f")
}

fn strftime(now_micros: i64, zone: TzInfo<'_>, fmt: &str) -> String {
    let utc = Utc.timestamp_micros(now_micros).single().expect("instant in range");
    let fmt = chrono_format(fmt);
    match zone {
        TzInfo::Zone(_, tz) => utc.with_timezone(&tz).format(&fmt).to_string(),
        TzInfo::FallbackUtc => utc.format(&fmt).to_string(),
    }
}

/// Python's `datetime.now(_resolve_timezone(zone)).strftime(fmt)` at
/// `micros`, for the formats in [`FORMATS`].
pub fn format_time(micros: i64, zone: &str, fmt: &str) -> String {
    strftime(micros, resolve(zone), fmt)
}

/// In strict mode, the hint's text from where envaware writes its first
/// field (after the template's text before `{runtime_state}`); `None` in
/// compatible mode or when the hint does not start with that text.
fn strict_state<'t>(cfg: &MConfig, text: &'t str) -> Option<&'t str> {
    if !cfg.strict {
        return None;
    }
    let prefix = cfg.template.split("{runtime_state}").next().unwrap_or("");
    text.strip_prefix(prefix)
}

/// The wall clock of `zone` at `now_micros`.
fn local_naive(now_micros: i64, zone: TzInfo<'_>) -> NaiveDateTime {
    let utc = Utc.timestamp_micros(now_micros).single().expect("instant in range");
    match zone {
        TzInfo::Zone(_, tz) => utc.with_timezone(&tz).naive_local(),
        TzInfo::FallbackUtc => utc.naive_utc(),
    }
}

/// `naive.replace(tzinfo=zone)` as an instant: `fold=0` takes the earlier
/// reading of a repeated wall time, and the offset before a gap.
fn fold0_micros(naive: NaiveDateTime, zone: TzInfo<'_>, notes: &mut Vec<&'static str>) -> i64 {
    match zone {
        TzInfo::FallbackUtc => naive.and_utc().timestamp_micros(),
        TzInfo::Zone(_, tz) => match tz.from_local_datetime(&naive) {
            chrono::LocalResult::Single(t) => t.timestamp_micros(),
            chrono::LocalResult::Ambiguous(earlier, _) => {
                notes.push("recorded wall time repeated (DST)");
                earlier.timestamp_micros()
            }
            chrono::LocalResult::None => {
                notes.push("recorded wall time skipped (DST)");
                let before = tz.offset_from_utc_datetime(&(naive - chrono::Duration::days(1)));
                let offset = chrono::Offset::fix(&before).local_minus_utc();
                naive.and_utc().timestamp_micros() - i64::from(offset) * 1_000_000
            }
        },
    }
}

enum Parsed {
    Naive(NaiveDateTime),
    Aware(DateTime<FixedOffset>),
}

fn strptime(text: &str, fmt: &str) -> Option<Parsed> {
    let fmt = chrono_format(fmt);
    if fmt.contains("%z") {
        DateTime::parse_from_str(text, &fmt).ok().map(Parsed::Aware)
    } else {
        NaiveDateTime::parse_from_str(text, &fmt).ok().map(Parsed::Naive)
    }
}

/// Python's `str.strip()`.
fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// `re.search(open + "(.*?)" + close, text).group(1)`: `.` stops at `\n`.
fn regex_capture<'t>(text: &'t str, open: &str, close: &str) -> Option<&'t str> {
    let mut from = 0;
    while let Some(p) = text[from..].find(open) {
        let start = from + p + open.len();
        if let Some(q) = text[start..].find(close) {
            let inner = &text[start..start + q];
            if !inner.contains('\n') {
                return Some(inner);
            }
        } else {
            return None;
        }
        // Retry from the next character after this opening.
        from = from + p + text[from + p..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// Python's `json.dumps(json.loads(raw), sort_keys=True)`, or
/// `raw.strip()` when `raw` is not JSON.
pub fn canonical_arguments(raw: &str) -> String {
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => pyjson::dumps(&v),
        Err(_) => py_strip(raw).to_string(),
    }
}

/// Step 1 of `_inject_runtime_state`: the newest time hint of this agent's
/// source, and whether the agent already knows its tasks (a tasks hint or a
/// task tool call), reading from the newest message back.
fn scan<'c>(
    cfg: &MConfig,
    context: &'c [MMsg],
    step: &MStep,
    has_uncompleted: bool,
) -> (Option<&'c str>, bool) {
    let mut last_time_text: Option<&str> = None;
    let mut aware = !has_uncompleted;
    for msg in context.iter().rev() {
        if last_time_text.is_some() && aware {
            break;
        }
        if msg.role != "assistant" || (cfg.strict && msg.name != step.agent_name) {
            continue;
        }
        for block in msg.blocks.iter().rev() {
            match block {
                MBlock::Hint { source: Some(source), text, .. }
                    if *source == cfg.injection_source =>
                {
                    // Strict mode reads a field only where envaware writes it.
                    let state = strict_state(cfg, text);
                    let records_time = match state {
                        Some(state) => state.starts_with("<current-time>"),
                        None => !cfg.strict && text.contains("<current-time>"),
                    };
                    if last_time_text.is_none() && records_time {
                        last_time_text = Some(text);
                    }
                    let tasks = match cfg.strict {
                        true => {
                            state.is_some_and(|s| s.starts_with("<tasks>"))
                                || text.contains("\n<tasks>")
                        }
                        false => text.contains("<tasks>"),
                    };
                    if tasks {
                        aware = true;
                    }
                }
                MBlock::ToolCall { name, .. } if cfg.task_tool_names.contains(name) => aware = true,
                _ => {}
            }
        }
    }
    (last_time_text, aware)
}

/// Step 4: the context-length hint, on a reply's first iteration only.
fn context_hint(cfg: &MConfig, step: &MStep) -> Option<String> {
    if step.cur_iter != 0 {
        return None;
    }
    let buffer = cfg.injection_buffer_ratio.unwrap_or(cfg.context_buffer_ratio);
    let size = step.context_size as f64;
    let trigger_tokens = (cfg.trigger_ratio * size).trunc() as i64;
    // `>` as AgentScope writes it (no hint when a ratio is NaN).
    let over = (step.input_tokens as f64) > (cfg.trigger_ratio - buffer) * size;
    if !over {
        return None;
    }
    let mut hint = format!(
        "Your current context contains {} tokens. When reaching {} tokens, your context will be compressed.",
        step.input_tokens, trigger_tokens
    );
    if cfg.compression_tool_enabled && step.in_progress == 0 {
        hint.push_str(
            " No task is in progress, so judge by yourself whether the context should be compressed now by calling `CompressContext`.",
        );
    }
    Some(hint)
}

/// Microseconds since a recorded wall time without offset, read in its
/// recorded zone (else the configured one). In one zone AgentScope
/// subtracts wall times, as Python does for one tzinfo object.
#[allow(clippy::too_many_arguments)] // the step's parts, each read here
fn elapsed_since_naive(
    cfg: &MConfig,
    step: &MStep,
    zone: TzInfo,
    text: &str,
    time_text: Option<&str>,
    naive: NaiveDateTime,
    warnings: &mut BTreeSet<MWarning>,
    notes: &mut Vec<&'static str>,
) -> i64 {
    let zone_text = match (strict_state(cfg, text), time_text) {
        (Some(state), Some(t)) => {
            let after =
                &state[format!("<current-time>{t}</current-time>\n").len().min(state.len())..];
            regex_capture(after, "<timezone>", "</timezone>")
                .filter(|z| after.starts_with(&format!("<timezone>{z}")))
        }
        _ => regex_capture(text, "<timezone>", "</timezone>"),
    };
    let name = zone_text.map(py_strip).unwrap_or(&cfg.timezone);
    let recorded = resolve(name);
    if recorded == TzInfo::FallbackUtc && name != cfg.timezone {
        warnings.insert(MWarning::RecordedZoneFallback);
    }
    if recorded == zone && !cfg.strict {
        // One tzinfo object: Python subtracts wall times.
        let now_local = local_naive(step.now_micros, zone);
        let wall = (now_local - naive).num_microseconds().expect("in range");
        if wall != step.now_micros - fold0_micros(naive, recorded, &mut Vec::new()) {
            notes.push("wall-clock elapsed differs from real (DST)");
        }
        wall
    } else {
        notes.push("recorded in another zone");
        step.now_micros - fold0_micros(naive, recorded, notes)
    }
}

/// An exact decimal, `mantissa / 10^scale`, with at most 19 integer and
/// 18 fractional significant digits (the README's bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Dec {
    mantissa: i128,
    scale: u32,
}

impl Dec {
    /// On the common scale of 18 fractional digits, for comparing.
    fn units(self) -> i128 {
        self.mantissa * 10i128.pow(18 - self.scale)
    }
}

/// The leading `[+-]?[0-9]+(\.[0-9]+)?` of `text` after leading ASCII
/// whitespace; `None` without one, or beyond the bound.
fn leading_decimal(text: &str) -> Option<Dec> {
    let t = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0c']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let int = &t[..digits(t)];
    if int.is_empty() {
        return None;
    }
    let frac = t[int.len()..].strip_prefix('.').map_or("", |r| &r[..digits(r)]);
    let (int, frac) = (int.trim_start_matches('0'), frac.trim_end_matches('0'));
    if int.len() > 19 || frac.len() > 18 {
        return None;
    }
    let mantissa: i128 = format!("0{int}{frac}").parse().ok()?;
    Some(Dec { mantissa: if negative { -mantissa } else { mantissa }, scale: frac.len() as u32 })
}

/// Why a watch fired, or did not (the format's "Time rules").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fire {
    /// It did not fire.
    Quiet,
    /// The value rule fired, not held back.
    Value,
    /// `max_interval`: the telling is that old, or of unknown age.
    Heartbeat,
    /// The value rule fired, but the telling is younger than `min_interval`.
    Throttled,
}

/// The value rule alone (the format's "Environment-change triggers"), on
/// the reading `v` and the told value `t`: `t` none fires.
fn value_fires(w: &MWatch, v: Dec, t: Option<Dec>) -> bool {
    let v = v.units();
    let Some(t) = t.map(Dec::units) else { return true };
    let value = |s: &Option<String>| s.as_deref().and_then(leading_decimal).map(Dec::units);
    let h = value(&w.hysteresis).unwrap_or(0);
    let change = value(&w.change).is_some_and(|c| (v - t).abs() >= c);
    let above = value(&w.above).is_some_and(|a| (t <= a && a < v) || (t > a && v <= a - h));
    let below = value(&w.below).is_some_and(|b| (t >= b && b > v) || (t < b && v >= b + h));
    change || above || below
}

/// An interval's text in microseconds: a decimal number (`"1800"`,
/// `"0.5"`, `"60.000001"`), or a JSON number as serde_json writes it back
/// (`1e-6`); `None` unless it is exact in microseconds.
pub fn interval_micros(text: &str) -> Option<i64> {
    let plain = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (number, exponent) = match text.split_once(['e', 'E']) {
        Some((n, e)) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            (n, plain(digits).then(|| e.parse::<i32>().ok()).flatten()?)
        }
        None => (text, 0),
    };
    let whole = match number.split_once('.') {
        Some((int, frac)) => plain(int) && plain(frac),
        None => plain(number),
    };
    let d = leading_decimal(number).filter(|_| whole)?;
    // mantissa × 10^(exponent − scale) seconds, in units of 10^-6.
    let shift = 6 + exponent - d.scale as i32;
    let micros = match shift {
        s @ 0..=30 => d.mantissa.checked_mul(10i128.pow(s as u32))?,
        _ if d.mantissa == 0 => 0,
        _ => return None,
    };
    i64::try_from(micros).ok()
}

/// A `created_at`, as the time rules read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CreatedAt {
    /// Written with `Z` or an offset: an instant, Unix microseconds.
    Instant(i64),
    /// Written with no offset: a wall time of the configured zone.
    Wall(NaiveDateTime),
}

/// `YYYY-MM-DDTHH:MM:SS`, then `.` and 1–6 digits or nothing, then `Z`
/// (RFC 3339 allows `z`), `±HH:MM` (hours 00–23, minutes 00–59) or nothing;
/// a date and time Python's `datetime` holds (year 1 on, no second 60).
fn parse_created_at(text: &str) -> Option<CreatedAt> {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    let b = text.as_bytes();
    let fits = |part: &[u8], shape: &[u8]| {
        part.len() == shape.len()
            && part.iter().zip(shape).all(|(c, s)| match s {
                b'd' => c.is_ascii_digit(),
                _ => c == s,
            })
    };
    if b.len() < SHAPE.len() || !fits(&b[..SHAPE.len()], SHAPE) {
        return None;
    }
    let num = |from: usize, to: usize| text[from..to].parse::<u32>().ok();
    let mut rest = &text[SHAPE.len()..];
    let mut micros = 0;
    if let Some(after) = rest.strip_prefix('.') {
        let n = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if !(1..=6).contains(&n) {
            return None;
        }
        micros = after[..n].parse::<u32>().ok()? * 10u32.pow(6 - n as u32);
        rest = &after[n..];
    }
    let year = i32::try_from(num(0, 4)?).ok().filter(|y| *y >= 1)?;
    let date = chrono::NaiveDate::from_ymd_opt(year, num(5, 7)?, num(8, 10)?)?;
    let naive = date.and_hms_micro_opt(num(11, 13)?, num(14, 16)?, num(17, 19)?, micros)?;
    let offset_seconds = match rest {
        "" => return Some(CreatedAt::Wall(naive)),
        "Z" | "z" => 0,
        _ if fits(rest.as_bytes(), b"+dd:dd") || fits(rest.as_bytes(), b"-dd:dd") => {
            let (h, m) = (rest[1..3].parse::<i32>().ok()?, rest[4..6].parse::<i32>().ok()?);
            if h > 23 || m > 59 {
                return None;
            }
            let seconds = h * 3600 + m * 60;
            if rest.starts_with('-') {
                -seconds
            } else {
                seconds
            }
        }
        _ => return None,
    };
    let offset = FixedOffset::east_opt(offset_seconds)?;
    let at = offset.from_local_datetime(&naive).single()?;
    Some(CreatedAt::Instant(at.timestamp_micros()))
}

/// The newest hint holding a watched field's tag: the value it told
/// (`None`: no number in it) and its `created_at` text (`None`: missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Telling<'c> {
    value: Option<Dec>,
    created_at: Option<&'c str>,
}

/// The telling of `field`: the newest hint holding `<field>`, found as the
/// time rule finds its recorded time; `None` with no such hint.
fn told<'c>(cfg: &MConfig, context: &'c [MMsg], step: &MStep, field: &str) -> Option<Telling<'c>> {
    let (open, close) = (format!("<{field}>"), format!("</{field}>"));
    for msg in context.iter().rev() {
        if msg.role != "assistant" || (cfg.strict && msg.name != step.agent_name) {
            continue;
        }
        for block in msg.blocks.iter().rev() {
            let MBlock::Hint { source: Some(source), text, created_at } = block else { continue };
            if *source != cfg.injection_source {
                continue;
            }
            // Strict mode: only where envaware writes a field, first in the
            // state or on a line of its own; the tag must open there.
            let from = match cfg.strict {
                true => match strict_state(cfg, text).filter(|s| s.starts_with(&open)) {
                    Some(state) => Some(state),
                    None => text.find(&format!("\n{open}")).map(|p| &text[p + 1..]),
                },
                false => text.contains(&open).then_some(text.as_str()),
            };
            let Some(from) = from else { continue };
            let capture = regex_capture(from, &open, &close)
                .filter(|c| !cfg.strict || from.starts_with(&format!("{open}{c}")));
            return Some(Telling {
                value: capture.and_then(leading_decimal),
                created_at: created_at.as_deref(),
            });
        }
    }
    None
}

/// The age of a telling at this step, in microseconds: `now − created_at`,
/// an instant's real difference, or a wall time's difference from `now` on
/// the configured zone's wall clock (Python's subtraction of two datetimes
/// sharing one tzinfo). `None` (unknown) with no `created_at`, an
/// unreadable one, or one later than `now`.
fn telling_age(
    cfg: &MConfig,
    step: &MStep,
    telling: &Telling<'_>,
    notes: &mut Vec<&'static str>,
) -> Option<i64> {
    let Some(text) = telling.created_at else {
        notes.push("telling without created_at");
        return None;
    };
    let age = match parse_created_at(text) {
        None => {
            notes.push("telling's created_at unreadable");
            return None;
        }
        Some(CreatedAt::Instant(at)) => step.now_micros - at,
        Some(CreatedAt::Wall(naive)) => {
            notes.push("telling's created_at a wall time");
            let zone = resolve(&cfg.timezone);
            let wall = (local_naive(step.now_micros, zone) - naive).num_microseconds()?;
            if wall != step.now_micros - fold0_micros(naive, zone, &mut Vec::new()) {
                notes.push("telling's wall-clock age differs from real (DST)");
            }
            wall
        }
    };
    if age < 0 {
        notes.push("telling's created_at later than now");
        return None;
    }
    Some(age)
}

impl Model {
    /// The format's rule for one watch: the reading `v`, the telling (none:
    /// nothing told, so `t` is none and the age unknown) and its age.
    fn watch_fires(&self, w: &MWatch, v: Option<Dec>, t: Option<Dec>, age: Option<i64>) -> Fire {
        // An unavailable reading never fires, not even by heartbeat.
        let Some(v) = v else { return Fire::Quiet };
        let value = value_fires(w, v, t);
        let min = w.min_interval.as_deref().and_then(interval_micros);
        let max = w.max_interval.as_deref().and_then(interval_micros);
        let throttled = value
            && match (min, age) {
                (Some(min), Some(age)) if self.broken == Some(Breakage::ThrottleInclusive) => {
                    age <= min
                }
                (Some(min), Some(age)) => age < min,
                _ => false,
            };
        let heartbeat = match (max, age) {
            (Some(max), Some(age)) => age >= max,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if value && !throttled {
            Fire::Value
        } else if heartbeat {
            Fire::Heartbeat
        } else if throttled {
            Fire::Throttled
        } else {
            Fire::Quiet
        }
    }

    /// Each watched field and why its watch fired, or did not, at this step.
    fn watches(
        &self,
        cfg: &MConfig,
        context: &[MMsg],
        step: &MStep,
        notes: &mut Vec<&'static str>,
    ) -> Vec<(String, Fire)> {
        let reading = |field: &str| {
            step.readings.iter().rev().find(|(k, _)| k == field).and_then(|(_, v)| v.as_deref())
        };
        let mut out = Vec::new();
        for (field, w) in &cfg.watch {
            let v = reading(field).and_then(leading_decimal);
            let telling = told(cfg, context, step, field);
            let timed = w.min_interval.is_some() || w.max_interval.is_some();
            let age = match (&telling, timed && v.is_some()) {
                (Some(telling), true) => telling_age(cfg, step, telling, notes),
                _ => None,
            };
            let at = |interval: &Option<String>| {
                interval.as_deref().and_then(interval_micros).is_some_and(|i| age == Some(i))
            };
            if at(&w.min_interval) {
                notes.push("telling exactly min_interval old");
            }
            if at(&w.max_interval) {
                notes.push("telling exactly max_interval old");
            }
            let fire = self.watch_fires(w, v, telling.and_then(|t| t.value), age);
            match fire {
                Fire::Heartbeat => notes.push("watch heartbeat"),
                Fire::Throttled => notes.push("watch throttled"),
                _ if timed && v.is_none() => notes.push("timed watch, reading unavailable"),
                _ => {}
            }
            out.push((field.clone(), fire));
        }
        out
    }
}

/// Strict mode's escaping of text it did not write: `<` and `>`.
fn escape(text: &str) -> String {
    text.replace('<', "&lt;").replace('>', "&gt;")
}

/// The state's `<key>value</key>` lines: the fired dimensions, then the
/// extra fields and the live readings with `dict.update`.
fn render_state(cfg: &MConfig, step: &MStep, mut injections: Vec<(String, String)>) -> String {
    // The live readings follow the extra fields, with the same dict
    // update; strict mode drops a built-in key and escapes the rest.
    const BUILTIN: [&str; 5] =
        ["current-time", "timezone", "tasks", "context-length", "tool-error"];
    let live = step
        .readings
        .iter()
        .filter(|(k, _)| !(cfg.strict && BUILTIN.contains(&k.as_str())))
        .map(|(k, v)| (k.clone(), v.clone().unwrap_or_else(|| "unavailable".into())));
    for (k, v) in cfg.extra_fields.iter().cloned().chain(live) {
        match injections.iter_mut().find(|(key, _)| *key == k) {
            Some(entry) => entry.1 = v,
            None => injections.push((k, v)),
        }
    }
    // Strict mode escapes every key and value but the operator's own
    // tool-error text (whose tool name is escaped already).
    injections
        .iter()
        .map(|(k, v)| match cfg.strict {
            true if k == "tool-error" => format!("<{k}>{v}</{k}>"),
            true => format!("<{0}>{1}</{0}>", escape(k), escape(v)),
            false => format!("<{k}>{v}</{k}>"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Model {
    /// The faithful model.
    pub const FAITHFUL: Model = Model { broken: None };

    /// One reasoning step on `context`.
    pub fn step(&self, cfg: &MConfig, context: &[MMsg], step: &MStep) -> MOutcome {
        let mut warnings = BTreeSet::new();
        if cfg.injection_buffer_ratio.is_some() {
            warnings.insert(MWarning::DeprecatedBuffer);
        }
        let zone = resolve(&cfg.timezone);
        if zone == TzInfo::FallbackUtc {
            warnings.insert(MWarning::ZoneFallback);
        }
        let none = MOutcome {
            hint: None,
            event: false,
            dims: Dims::default(),
            warnings: warnings.clone(),
            notes: Vec::new(),
        };
        let mut notes = Vec::new();
        if !cfg.inject_runtime_state {
            return none;
        }
        let mut injections: Vec<(String, String)> = Vec::new();
        let mut dims = Dims::default();

        // Step 1: the newest time hint, and whether the agent knows its tasks.
        let has_uncompleted = step.pending > 0 || step.in_progress > 0;
        let (last_time_text, aware) = scan(cfg, context, step, has_uncompleted);

        // Step 2: time.
        let inject_time = match last_time_text {
            Some(text) => !self
                .within_interval(cfg, step, zone, text, &mut warnings, &mut notes)
                .unwrap_or(false),
            None => true,
        };
        if inject_time {
            dims.time = true;
            injections
                .push(("current-time".into(), strftime(step.now_micros, zone, &cfg.time_format)));
            injections.push(("timezone".into(), cfg.timezone.clone()));
        }

        // Step 3: tasks.
        if has_uncompleted && !aware {
            dims.tasks = true;
            injections.push((
                "tasks".into(),
                format!(
                    "You have {} in-progress tasks and {} pending tasks. Use `TaskList` to view them if you don't know.",
                    step.in_progress, step.pending
                ),
            ));
        }

        // Step 4: context length.
        if let Some(hint) = context_hint(cfg, step) {
            dims.context = true;
            injections.push(("context-length".into(), hint));
        }

        // envaware's watches: a watched reading that moved, held back by
        // `min_interval` or told again by `max_interval`.
        for (field, fire) in self.watches(cfg, context, step, &mut notes) {
            match fire {
                Fire::Value => dims.watch.push(field),
                Fire::Heartbeat => {
                    dims.heartbeat.push(field.clone());
                    dims.watch.push(field);
                }
                Fire::Throttled => dims.throttled.push(field),
                Fire::Quiet => {}
            }
        }
        if !dims.watch.is_empty() {
            notes.push("watch fired");
        }

        // Step 5: repeated tool errors.
        if let Some((tool, count)) = self.repeated_tool_error(cfg, context, step) {
            dims.tool_error = true;
            // Strict mode escapes the tool name, the model's own text.
            let tool =
                if cfg.strict { tool.replace('<', "&lt;").replace('>', "&gt;") } else { tool };
            injections.push((
                "tool-error".into(),
                cfg.tool_retries_hint
                    .replace("{tool_name}", &tool)
                    .replace("{count}", &count.to_string()),
            ));
        }

        if injections.is_empty() && dims.watch.is_empty() {
            return MOutcome { warnings, notes, dims, ..none };
        }
        let state = render_state(cfg, step, injections);
        let hint = cfg.template.replace("{runtime_state}", &state);
        MOutcome { hint: Some(hint), event: cfg.emit_hint_event, dims, warnings, notes }
    }

    /// Step 2: whether the time recorded in `text` is within the interval;
    /// `None` when it does not read back (the time is then injected).
    fn within_interval(
        &self,
        cfg: &MConfig,
        step: &MStep,
        zone: TzInfo,
        text: &str,
        warnings: &mut BTreeSet<MWarning>,
        notes: &mut Vec<&'static str>,
    ) -> Option<bool> {
        let time_text = match strict_state(cfg, text) {
            Some(state) => regex_capture(state, "<current-time>", "</current-time>")
                .filter(|t| state.starts_with(&format!("<current-time>{t}"))),
            None => regex_capture(text, "<current-time>", "</current-time>"),
        };
        let parsed = time_text.and_then(|t| strptime(py_strip(t), &cfg.time_format));
        let Some(parsed) = parsed else {
            notes.push("recorded time unreadable");
            return None;
        };
        let elapsed_micros = match parsed {
            Parsed::Aware(t) => {
                notes.push("recorded time with offset");
                step.now_micros - t.timestamp_micros()
            }
            Parsed::Naive(naive) => {
                elapsed_since_naive(cfg, step, zone, text, time_text, naive, warnings, notes)
            }
        };
        let hours = (elapsed_micros as f64 / 1e6) / 3600.0;
        if hours == cfg.time_interval {
            notes.push("elapsed exactly the interval");
        } else if hours < 0.0 {
            notes.push("recorded time in the future");
        }
        Some(if self.broken == Some(Breakage::TimeBoundaryStrict) {
            0.0 <= hours && hours < cfg.time_interval
        } else {
            0.0 <= hours && hours <= cfg.time_interval
        })
    }

    fn repeated_tool_error(
        &self,
        cfg: &MConfig,
        context: &[MMsg],
        step: &MStep,
    ) -> Option<(String, u64)> {
        let last = context.last()?;
        if last.role != "assistant" || last.name != step.agent_name {
            return None;
        }
        let results: Vec<(&str, &str, &str)> = last
            .blocks
            .iter()
            .filter_map(|b| match b {
                MBlock::ToolResult { id, name, state } => {
                    Some((id.as_str(), name.as_str(), *state))
                }
                _ => None,
            })
            .collect();
        let &(_, tool, state) = results.last()?;
        if state != "error" {
            return None;
        }
        let streak: Vec<&str> = results
            .iter()
            .rev()
            .take_while(|(_, n, s)| *s == "error" && *n == tool)
            .map(|(id, _, _)| *id)
            .collect();
        let limit = cfg.tool_retries_limit;
        if (streak.len() as u64) < limit {
            return None;
        }
        let mut inputs: Vec<(&str, &str)> = Vec::new();
        for b in &last.blocks {
            if let MBlock::ToolCall { id, input, .. } = b {
                match inputs.iter_mut().find(|(k, _)| k == id) {
                    Some(e) => e.1 = input,
                    None => inputs.push((id, input)),
                }
            }
        }
        let arguments: Vec<String> = streak
            .iter()
            .map(|id| {
                let raw = inputs.iter().find(|(k, _)| k == id).map_or("", |(_, v)| v);
                canonical_arguments(raw)
            })
            .collect();
        let count = if self.broken == Some(Breakage::ToolErrorIgnoresArguments) {
            arguments.len() as u64
        } else {
            arguments.iter().take_while(|a| **a == arguments[0]).count() as u64
        };
        (count >= limit).then(|| (tool.to_string(), count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_arguments_follow_python() {
        assert_eq!(
            canonical_arguments(r#" {"b": [1,2.5, {"z":null,"a":true}], "a":"é\n"} "#),
            r#"{"a": "\u00e9\n", "b": [1, 2.5, {"a": true, "z": null}]}"#
        );
        assert_eq!(canonical_arguments("  {\"a\": 1  "), "{\"a\": 1");
        assert_eq!(canonical_arguments(r#"{"a":1,"a":2}"#), r#"{"a": 2}"#);
        assert_eq!(canonical_arguments("\"\u{1F600}\""), "\"\\ud83d\\ude00\"");
        assert_eq!(canonical_arguments(""), "");
    }

    #[test]
    fn regex_capture_stops_at_newlines() {
        assert_eq!(regex_capture("<a>x\n</a><a>y</a>", "<a>", "</a>"), Some("y"));
        assert_eq!(regex_capture("<a>x</a>", "<a>", "</b>"), None);
    }

    #[test]
    fn fold0_reads_repeated_and_missing_wall_times_as_python() {
        let ny = resolve("America/New_York");
        let at = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap();
        // The examples of the core's `local_to_timestamp` docs, from zoneinfo.
        let notes = &mut Vec::new();
        assert_eq!(
            fold0_micros(at("2026-03-08 02:30"), ny, notes),
            at("2026-03-08 07:30").and_utc().timestamp_micros()
        );
        assert_eq!(
            fold0_micros(at("2026-11-01 01:30"), ny, notes),
            at("2026-11-01 05:30").and_utc().timestamp_micros()
        );
        assert_eq!(
            notes,
            &["recorded wall time skipped (DST)", "recorded wall time repeated (DST)"]
        );
    }

    fn config(zone: &str, watch: MWatch) -> MConfig {
        MConfig {
            inject_runtime_state: true,
            timezone: zone.into(),
            time_format: FORMATS[0].into(),
            time_interval: 0.5,
            injection_buffer_ratio: None,
            tool_retries_limit: 3,
            tool_retries_hint: "{tool_name} x{count}".into(),
            template: "<r>\n{runtime_state}\n</r>".into(),
            injection_source: "runtime".into(),
            task_tool_names: vec!["TaskList".into()],
            extra_fields: vec![],
            emit_hint_event: false,
            strict: false,
            trigger_ratio: 0.8,
            reserve_ratio: 0.1,
            context_buffer_ratio: 0.2,
            compression_tool_enabled: false,
            watch: vec![("temperature".into(), watch)],
        }
    }

    fn micros(rfc3339: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc3339).expect("a time").timestamp_micros()
    }

    /// The watch's reason at `now`, the context telling `told` with
    /// `created_at` (no telling at all when `told` is `None`).
    fn reason_with(
        model: Model,
        cfg: &MConfig,
        now: &str,
        told: Option<(&str, Option<&str>)>,
        reading: Option<&str>,
    ) -> &'static str {
        let context: Vec<MMsg> = told
            .map(|(value, created_at)| MMsg {
                role: "assistant",
                name: "Friday".into(),
                blocks: vec![MBlock::Hint {
                    source: Some("runtime".into()),
                    text: format!("<temperature>{value}</temperature>"),
                    created_at: created_at.map(str::to_string),
                }],
            })
            .into_iter()
            .collect();
        let step = MStep {
            agent_name: "Friday".into(),
            pending: 0,
            in_progress: 0,
            cur_iter: 0,
            input_tokens: 0,
            context_size: 128_000,
            now_micros: micros(now),
            readings: vec![("temperature".into(), reading.map(str::to_string))],
        };
        let dims = model.step(cfg, &context, &step).dims;
        let field = vec!["temperature".to_string()];
        match (dims.watch == field, dims.heartbeat == field, dims.throttled == field) {
            (true, false, false) => "value",
            (true, true, false) => "heartbeat",
            (false, false, true) => "throttled",
            (false, false, false) => "quiet",
            other => panic!("inconsistent reasons {other:?}: {dims:?}"),
        }
    }

    fn reason(
        cfg: &MConfig,
        now: &str,
        told: Option<(&str, Option<&str>)>,
        reading: Option<&str>,
    ) -> &'static str {
        reason_with(Model::FAITHFUL, cfg, now, told, reading)
    }

    fn watch(change: Option<&str>, min: Option<&str>, max: Option<&str>) -> MWatch {
        MWatch {
            change: change.map(str::to_string),
            min_interval: min.map(str::to_string),
            max_interval: max.map(str::to_string),
            ..MWatch::default()
        }
    }

    const NOW: &str = "2026-07-22T02:30:00Z";

    #[test]
    fn a_change_sooner_than_min_interval_is_throttled_and_fires_once_it_has_passed() {
        let cfg = config("UTC", watch(Some("1"), Some("60"), None));
        let told = |at: &'static str| Some(("20.0 °C", Some(at)));
        let moved = Some("25.0 °C");
        assert_eq!(reason(&cfg, NOW, told("2026-07-22T02:29:30.000000Z"), moved), "throttled");
        assert_eq!(reason(&cfg, NOW, told("2026-07-22T02:29:00.000001Z"), moved), "throttled");
        // Exactly min_interval old: not younger, so it fires.
        assert_eq!(reason(&cfg, NOW, told("2026-07-22T02:29:00Z"), moved), "value");
        assert_eq!(reason(&cfg, NOW, told("2026-07-22T02:28:59.999999Z"), moved), "value");
        // A steady reading is quiet either way; nothing told fires.
        assert_eq!(reason(&cfg, NOW, told("2026-07-22T02:29:30Z"), Some("20.5")), "quiet");
        assert_eq!(reason(&cfg, NOW, None, moved), "value");
        // The broken model holds it back at exactly the interval too.
        let broken = Model { broken: Some(Breakage::ThrottleInclusive) };
        assert_eq!(
            reason_with(broken, &cfg, NOW, told("2026-07-22T02:29:00Z"), moved),
            "throttled"
        );
    }

    #[test]
    fn max_interval_is_a_heartbeat_from_exactly_the_interval_and_with_an_unknown_age() {
        let cfg = config("UTC", watch(None, None, Some("1800")));
        let steady = Some("20.0 °C");
        let told = |at: Option<&'static str>| Some(("20.0 °C", at));
        assert_eq!(reason(&cfg, NOW, told(Some("2026-07-22T02:00:00.000001Z")), steady), "quiet");
        assert_eq!(reason(&cfg, NOW, told(Some("2026-07-22T02:00:00Z")), steady), "heartbeat");
        assert_eq!(reason(&cfg, NOW, told(Some("2026-07-22T01:00:00Z")), steady), "heartbeat");
        // Unknown: missing, unreadable.
        assert_eq!(reason(&cfg, NOW, told(None), steady), "heartbeat");
        assert_eq!(reason(&cfg, NOW, told(Some("2026-07-22 02:00:00Z")), steady), "heartbeat");
        assert_eq!(reason(&cfg, NOW, told(Some("yesterday")), steady), "heartbeat");
        // Nothing told: the value rule fires (t is none), not the heartbeat.
        assert_eq!(reason(&cfg, NOW, None, steady), "value");
        // A change held back by min_interval still gets its heartbeat.
        let both = config("UTC", watch(Some("1"), Some("60"), Some("1800")));
        assert_eq!(reason(&both, NOW, told(None), Some("25")), "value");
        assert_eq!(reason(&both, NOW, told(Some("2026-07-22T02:29:59Z")), Some("25")), "throttled");
    }

    #[test]
    fn a_created_at_later_than_now_has_an_unknown_age() {
        let cfg = config("UTC", watch(Some("1"), Some("60"), Some("1800")));
        let told = Some(("20.0 °C", Some("2026-07-22T02:30:00.000001Z")));
        // Not throttled (the age is unknown) and a heartbeat when steady.
        assert_eq!(reason(&cfg, NOW, told, Some("25")), "value");
        assert_eq!(reason(&cfg, NOW, told, Some("20")), "heartbeat");
        // Now itself is age 0: known, and younger than both.
        let at_now = Some(("20.0 °C", Some("2026-07-22T10:30:00+08:00")));
        assert_eq!(reason(&cfg, NOW, at_now, Some("25")), "throttled");
        assert_eq!(reason(&cfg, NOW, at_now, Some("20")), "quiet");
    }

    #[test]
    fn a_created_at_without_offset_is_the_configured_zones_wall_clock_across_dst() {
        // New York falls back at 06:00Z: 01:10 EST is 06:10Z; 00:50 EDT was
        // 04:50Z, 80 minutes before, but 20 minutes on the wall clock.
        let now = "2026-11-01T06:10:00Z";
        let cfg = config("America/New_York", watch(Some("1"), Some("1800"), Some("3600")));
        let wall = Some(("20.0", Some("2026-11-01T00:50:00")));
        let instant = Some(("20.0", Some("2026-11-01T00:50:00-04:00")));
        assert_eq!(reason(&cfg, now, wall, Some("25")), "throttled");
        assert_eq!(reason(&cfg, now, wall, Some("20")), "quiet");
        assert_eq!(reason(&cfg, now, instant, Some("25")), "value");
        assert_eq!(reason(&cfg, now, instant, Some("20")), "heartbeat");
        // 01:50 EDT (05:50Z) is later than 01:10 EST on the wall clock.
        let later = Some(("20.0", Some("2026-11-01T01:50:00.5")));
        assert_eq!(reason(&cfg, now, later, Some("20")), "heartbeat");
        // An unknown zone reads the wall clock as UTC.
        let mars = config("Mars/Olympus_Mons", watch(None, None, Some("3600")));
        assert_eq!(
            reason(&mars, now, Some(("20", Some("2026-11-01T05:10:00.000001"))), Some("20")),
            "quiet"
        );
        assert_eq!(
            reason(&mars, now, Some(("20", Some("2026-11-01T05:10:00"))), Some("20")),
            "heartbeat"
        );
    }

    #[test]
    fn an_unavailable_reading_never_fires_not_even_by_heartbeat() {
        let cfg = config("UTC", watch(Some("1"), None, Some("0.000001")));
        for told in [None, Some(("20", None)), Some(("20", Some("2026-07-22T00:00:00Z")))] {
            assert_eq!(reason(&cfg, NOW, told, None), "quiet");
            assert_eq!(reason(&cfg, NOW, told, Some("open")), "quiet");
        }
    }

    #[test]
    fn created_at_reads_the_three_forms_and_nothing_else() {
        let instant = |s: &str| match parse_created_at(s) {
            Some(CreatedAt::Instant(t)) => Some(t),
            _ => None,
        };
        let base = micros(NOW);
        assert_eq!(instant("2026-07-22T02:30:00Z"), Some(base));
        assert_eq!(instant("2026-07-22T02:30:00z"), Some(base));
        assert_eq!(instant("2026-07-22T02:30:00.5Z"), Some(base + 500_000));
        assert_eq!(instant("2026-07-22T02:30:00.000001Z"), Some(base + 1));
        assert_eq!(instant("2026-07-22T08:00:00+05:30"), Some(base));
        assert_eq!(instant("2026-07-21T21:30:00-05:00"), Some(base));
        assert!(matches!(parse_created_at("2026-07-22T02:30:00.123456"), Some(CreatedAt::Wall(_))));
        for bad in [
            "",
            "2026-07-22",
            "2026-07-22T02:30",
            "2026-07-22 02:30:00Z",
            "2026-07-22T02:30:00.",
            "2026-07-22T02:30:00.1234567",
            "2026-07-22T02:30:00+0530",
            "2026-07-22T02:30:00+24:00",
            "2026-07-22T02:30:00-05:60",
            "2026-07-22T02:30:00ZZ",
            "2026-02-29T02:30:00Z",
            "2026-07-22T23:59:60Z",
            "0000-07-22T02:30:00",
            "+2026-07-22T02:30:00Z",
        ] {
            assert_eq!(parse_created_at(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn intervals_are_exact_microseconds() {
        assert_eq!(interval_micros("1800"), Some(1_800_000_000));
        assert_eq!(interval_micros("0.5"), Some(500_000));
        assert_eq!(interval_micros("60.000001"), Some(60_000_001));
        assert_eq!(interval_micros("2.50"), Some(2_500_000));
        assert_eq!(interval_micros("0.0000001"), None);
        assert_eq!(interval_micros("1e3"), Some(1_000_000_000));
        assert_eq!(interval_micros("1e-6"), Some(1));
        assert_eq!(interval_micros("2.5E-1"), Some(250_000));
        assert_eq!(interval_micros("1e-7"), None);
        assert_eq!(interval_micros(" 5"), None);
    }
}
