//! From the replay's steps to spans: one GenAI `chat` span per step, under
//! one `invoke_agent` span per reply (its trace's root), each step's
//! decision as `envaware.hint` events.
//!
//! A reply starts at a step whose `cur_iter` is 0 (AgentScope's count of
//! the reply's reasoning steps; the first step starts one whatever it is).
//! A step's span is complete when its step is: its input is the request
//! after the step's hint, which is all a step decides. A reply's span is
//! complete when the next reply starts or the input ends: it is made then,
//! after its steps' spans, which name it as their parent in advance (ids
//! are derived from the session's id, the reply's and the step's numbers).

use std::hash::{BuildHasher, Hasher};

use serde_json::Value;

use super::messages;
use super::otlp::{AttrValue, Attributes, Event, Span, SpanKind, StatusCode};
use crate::record::{StepRecord, WatchRecord};

/// One step as the replay computed it: its record and its `--json
/// --request openai` line (`hint`, `event`, `watch`, `warnings`,
/// `woken`, `hint_too_long`, `request`).
#[derive(Debug, Clone)]
pub struct StepResult {
    /// What the replay recorded of the step.
    pub record: StepRecord,
    /// The step's result line.
    pub line: Value,
}

/// Who and what the spans describe: the session and the device.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    /// The session's id: `gen_ai.conversation.id`, and the seed of every
    /// trace and span id.
    pub session_id: String,
    /// `service.name`.
    pub service_name: String,
    /// `device.id`.
    pub device_id: Option<String>,
    /// The firmware's version (`service.version`, `envaware.firmware.version`).
    pub firmware_version: Option<String>,
    /// The model's name (`gen_ai.request.model`, the span's name).
    pub model: Option<String>,
    /// `gen_ai.provider.name` (and the deprecated `gen_ai.system`).
    pub provider: String,
    /// Phoenix's project (`openinference.project.name`), if given.
    pub project: Option<String>,
}

/// A session id no other export shares: 128 random bits, in hex.
pub fn random_session_id() -> String {
    let mut out = String::new();
    for salt in 0..2u8 {
        // RandomState is seeded from the OS's randomness per process.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u8(salt);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// 64 bits of FNV-1a over `parts`, mixed (splitmix64's finalizer): the
/// ids are derived, not random, so that a span names its reply's span
/// before that span is made. Never 0 (an invalid id in OTLP).
fn derive(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        h = (h ^ 0xff).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (h ^ (h >> 31)).max(1)
}

fn str_attr(key: &str, value: impl Into<String>) -> (String, AttrValue) {
    (key.to_string(), AttrValue::Str(value.into()))
}

fn int_attr(key: &str, value: i64) -> (String, AttrValue) {
    (key.to_string(), AttrValue::Int(value))
}

/// The reply whose span is not made yet.
#[derive(Debug)]
struct OpenReply {
    number: u64,
    trace_id: [u8; 16],
    span_id: [u8; 8],
    agent: String,
    resource: Attributes,
    start_ns: u64,
    end_ns: u64,
    steps: i64,
    hints: i64,
}

/// Makes the spans, step by step.
#[derive(Debug)]
pub struct SpanBuilder {
    id: Identity,
    open: Option<OpenReply>,
    replies: u64,
}

/// Nanoseconds since the Unix epoch of a replay's instant (0 before 1970).
fn nanos(micros: i64) -> u64 {
    u64::try_from(micros).unwrap_or(0).saturating_mul(1000)
}

impl SpanBuilder {
    /// A builder for the session `id` describes.
    pub fn new(id: Identity) -> Self {
        SpanBuilder { id, open: None, replies: 0 }
    }

    /// The resource a step is exported under: the device, and the
    /// configuration it ran (which a `config` event can change).
    fn resource(&self, record: &StepRecord) -> Attributes {
        let mut r = vec![str_attr("service.name", &self.id.service_name)];
        if let Some(v) = &self.id.firmware_version {
            r.push(str_attr("service.version", v));
            r.push(str_attr("envaware.firmware.version", v));
        }
        if let Some(d) = &self.id.device_id {
            r.push(str_attr("device.id", d));
        }
        r.push(str_attr("envaware.config.hash", format!("{:016x}", record.config_hash)));
        if let Some(p) = &self.id.project {
            r.push(str_attr("openinference.project.name", p));
        }
        r.push(str_attr("telemetry.sdk.name", super::otlp::SCOPE));
        r.push(str_attr("telemetry.sdk.language", "rust"));
        r.push(str_attr("telemetry.sdk.version", env!("CARGO_PKG_VERSION")));
        r
    }

    /// The step's span and, when it starts a reply, the span of the reply
    /// before it (made now, complete). `now_ns` stands in for a step whose
    /// clock was unset.
    ///
    /// # Errors
    ///
    /// When the step's request is not Chat Completions messages (never
    /// for what the replay writes).
    pub fn step(&mut self, step: &StepResult, now_ns: u64) -> Result<(Option<Span>, Span), String> {
        let record = &step.record;
        let at = record.clock.map_or(now_ns, |c| nanos(c.unix_micros()));
        let starts_reply = record.cur_iter == 0 || self.open.is_none();
        let closed = if starts_reply { self.finish() } else { None };
        if starts_reply {
            self.replies += 1;
            let seed = self.id.session_id.as_bytes();
            let n = self.replies.to_le_bytes();
            let hi = derive(&[seed, b"trace", &n]);
            let lo = derive(&[seed, b"trace-low", &n]);
            let mut trace_id = [0; 16];
            trace_id[..8].copy_from_slice(&hi.to_be_bytes());
            trace_id[8..].copy_from_slice(&lo.to_be_bytes());
            self.open = Some(OpenReply {
                number: self.replies,
                trace_id,
                span_id: derive(&[seed, b"reply", &n]).to_be_bytes(),
                agent: record.agent.clone(),
                resource: self.resource(record),
                start_ns: at,
                end_ns: at,
                steps: 0,
                hints: 0,
            });
        }
        let resource = self.resource(record);
        let hint = step.line.get("hint").and_then(Value::as_str);
        let reply = self.open.as_mut().ok_or("no reply is open")?;
        reply.end_ns = reply.end_ns.max(at);
        reply.steps += 1;
        reply.hints += i64::from(hint.is_some());
        let span_id = derive(&[self.id.session_id.as_bytes(), b"step", &record.step.to_le_bytes()])
            .to_be_bytes();
        let (trace_id, parent) = (reply.trace_id, reply.span_id);

        let request = step.line.get("request").ok_or("the step's line has no request")?;
        let input = messages::input_messages(request)?;
        let mut attributes = vec![
            str_attr("gen_ai.operation.name", "chat"),
            str_attr("gen_ai.provider.name", &self.id.provider),
            // The attribute before v1.37 named the provider so; older
            // backends read it.
            str_attr("gen_ai.system", &self.id.provider),
        ];
        if let Some(model) = &self.id.model {
            attributes.push(str_attr("gen_ai.request.model", model));
        }
        attributes.extend([
            str_attr("gen_ai.conversation.id", &self.id.session_id),
            str_attr("gen_ai.agent.name", &record.agent),
            int_attr("gen_ai.usage.input_tokens", record.input_tokens),
            // A JSON string, not an OTLP structure: the form Phoenix and
            // Langfuse read (the conventions allow either).
            str_attr("gen_ai.input.messages", input.to_string()),
            int_attr("envaware.step", record.step as i64),
            int_attr("envaware.trace.line", record.line as i64),
            int_attr("envaware.cur_iter", record.cur_iter as i64),
        ]);
        let fired = fired(record);
        if let Some(text) = hint {
            attributes.push(str_attr("envaware.hint", text));
            let event = step.line.get("event").and_then(Value::as_bool).unwrap_or(false);
            attributes.push(("envaware.hint_block_event".into(), AttrValue::Bool(event)));
        }
        if !fired.is_empty() {
            attributes.push(("envaware.fired".into(), AttrValue::StrList(fired.clone())));
        }
        let throttled: Vec<String> =
            record.watches.iter().filter(|w| w.throttled).map(|w| w.field.clone()).collect();
        if !throttled.is_empty() {
            attributes.push(("envaware.watch.throttled".into(), AttrValue::StrList(throttled)));
        }
        if let Some(woken) = step.line.get("woken") {
            attributes.push(str_attr("envaware.woken", woken.to_string()));
        }
        if let Some(Value::Array(warnings)) = step.line.get("warnings") {
            let list = warnings.iter().filter_map(Value::as_str).map(str::to_string).collect();
            attributes.push(("envaware.warnings".into(), AttrValue::StrList(list)));
        }
        if record.clock.is_none() {
            attributes.push(("envaware.clock_set".into(), AttrValue::Bool(false)));
        }
        let status = match record.too_long {
            Some((needed, capacity)) => (
                StatusCode::Error,
                format!("HintTooLong {{ needed: {needed}, capacity: {capacity} }}: the hint was not appended"),
            ),
            None => (StatusCode::Ok, String::new()),
        };
        let events = if hint.is_some() || record.too_long.is_some() {
            hint_events(record, at)
        } else {
            Vec::new()
        };
        let name = match &self.id.model {
            Some(model) => format!("chat {model}"),
            None => "chat".to_string(),
        };
        let span = Span {
            resource,
            trace_id,
            span_id,
            parent: Some(parent),
            name,
            kind: SpanKind::Client,
            start_ns: at,
            end_ns: at,
            attributes,
            events,
            status,
        };
        Ok((closed, span))
    }

    /// The open reply's span, complete (at the end of the input).
    pub fn finish(&mut self) -> Option<Span> {
        let reply = self.open.take()?;
        Some(Span {
            resource: reply.resource,
            trace_id: reply.trace_id,
            span_id: reply.span_id,
            parent: None,
            name: format!("invoke_agent {}", reply.agent),
            kind: SpanKind::Internal,
            start_ns: reply.start_ns,
            end_ns: reply.end_ns,
            attributes: vec![
                str_attr("gen_ai.operation.name", "invoke_agent"),
                str_attr("gen_ai.agent.name", &reply.agent),
                str_attr("gen_ai.conversation.id", &self.id.session_id),
                int_attr("envaware.reply", reply.number as i64),
                int_attr("envaware.steps", reply.steps),
                int_attr("envaware.hints", reply.hints),
            ],
            events: Vec::new(),
            status: (StatusCode::Ok, String::new()),
        })
    }
}

/// The dimensions a step fired, as `envaware.fired` lists them.
fn fired(record: &StepRecord) -> Vec<String> {
    let mut fired = Vec::new();
    if record.time {
        fired.push("time".to_string());
    }
    if record.tasks.is_some() {
        fired.push("tasks".into());
    }
    if record.context_length {
        fired.push("context-length".into());
    }
    if record.tool_error.is_some() {
        fired.push("tool-error".into());
    }
    fired.extend(record.watches.iter().filter(|w| w.fired).map(|w| format!("watch:{}", w.field)));
    fired
}

/// A number for a reason's text: at most three decimals, no trailing
/// zeros (the exact value is in the event's attributes).
fn num(x: f64) -> String {
    let text = format!("{x:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

/// Why a watch fired, from what the replay recorded of it: the heartbeat,
/// nothing told before, a change of at least `change`, or a threshold
/// crossed (in that order, as the rule checks them).
fn watch_reason(w: &WatchRecord) -> String {
    if w.heartbeat {
        let every = w.max_interval.map_or(String::new(), |s| format!(" {} s", num(s)));
        return format!("heartbeat: steady, but told longer than max_interval{every} ago");
    }
    let (Some(now), Some(told)) = (w.value, w.told) else {
        return match w.value {
            None => format!("the reading {:?} has no value: told as it is", w.reading),
            Some(_) => "nothing was told of it yet".into(),
        };
    };
    if let Some(change) = w.change.filter(|c| (now - told).abs() >= *c) {
        return format!(
            "moved {} from the {} told (change {})",
            num((now - told).abs()),
            num(told),
            num(change)
        );
    }
    if let Some(above) = w.above.filter(|a| now > *a && told <= *a) {
        return format!("crossed above {} (from the {} told)", num(above), num(told));
    }
    if let Some(below) = w.below.filter(|b| now < *b && told >= *b) {
        return format!("crossed below {} (from the {} told)", num(below), num(told));
    }
    format!(
        "back across a threshold (hysteresis {}) from the {} told",
        num(w.hysteresis),
        num(told)
    )
}

/// One `envaware.hint` event per dimension the step fired: which field of
/// the hint, and why.
fn hint_events(record: &StepRecord, at: u64) -> Vec<Event> {
    let event = |dimension: &str, field: &str, reason: String, mut more: Attributes| {
        let mut attributes = vec![
            str_attr("envaware.dimension", dimension),
            str_attr("envaware.field", field),
            str_attr("envaware.reason", reason),
        ];
        attributes.append(&mut more);
        Event { name: "envaware.hint".into(), time_ns: at, attributes }
    };
    let mut events = Vec::new();
    if record.time {
        let interval =
            ("envaware.time.interval_h".to_string(), AttrValue::Double(record.time_interval_hours));
        let (reason, mut more) = match (record.told_at, record.clock) {
            (Some(told), Some(now)) => {
                let age = (now.unix_micros() - told.unix_micros()) as f64 / 1e6;
                let reason = if age < 0.0 {
                    format!("the time told is {} s in the future (the clock went back)", num(-age))
                } else {
                    format!(
                        "the time told is {} s old; time_interval is {} h",
                        num(age),
                        num(record.time_interval_hours)
                    )
                };
                (reason, vec![("envaware.time.told_age_s".to_string(), AttrValue::Double(age))])
            }
            _ => (
                "no time of ours in the context (the first step, or compressed away)".to_string(),
                Vec::new(),
            ),
        };
        more.push(interval);
        events.push(event("time", "current-time", reason, more));
    }
    if let Some((pending, in_progress)) = record.tasks {
        events.push(event(
            "tasks",
            "tasks",
            format!("{pending} pending and {in_progress} in-progress tasks, and no task tool call or tasks hint in the context"),
            vec![
                int_attr("envaware.tasks.pending", pending as i64),
                int_attr("envaware.tasks.in_progress", in_progress as i64),
            ],
        ));
    }
    if record.context_length {
        events.push(event(
            "context-length",
            "context-length",
            format!(
                "{} input tokens at the start of a reply, over the reminder threshold {}",
                record.input_tokens,
                num(record.reminder_tokens)
            ),
            vec![
                int_attr("envaware.context.input_tokens", record.input_tokens),
                (
                    "envaware.context.threshold_tokens".into(),
                    AttrValue::Double(record.reminder_tokens),
                ),
                int_attr("envaware.context.trigger_tokens", record.trigger_tokens),
            ],
        ));
    }
    if let Some(count) = record.tool_error {
        events.push(event(
            "tool-error",
            "tool-error",
            format!("the agent's newest message ends with {count} failed calls of one tool with the same arguments"),
            vec![int_attr("envaware.tool_error.count", count as i64)],
        ));
    }
    for w in record.watches.iter().filter(|w| w.fired) {
        let mut more = vec![str_attr("envaware.watch.reading", &w.reading)];
        if let Some(told) = w.told {
            more.push(("envaware.watch.told_before".into(), AttrValue::Double(told)));
        }
        more.push(("envaware.watch.heartbeat".into(), AttrValue::Bool(w.heartbeat)));
        events.push(event("watch", &w.field, watch_reason(w), more));
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use envaware::Timestamp;
    use serde_json::json;

    fn identity() -> Identity {
        Identity {
            session_id: "s1".into(),
            service_name: "envaware".into(),
            device_id: Some("board-7".into()),
            firmware_version: Some("0.1.0".into()),
            model: Some("envaware-demo".into()),
            provider: "openai".into(),
            project: None,
        }
    }

    fn step(n: usize, cur_iter: u64, hint: Option<&str>) -> StepResult {
        let mut request = vec![
            json!({"role": "system", "name": "system", "content": [{"type": "text", "text": ""}]}),
        ];
        if let Some(h) = hint {
            request.push(json!({"role": "user", "content": [{"type": "text", "text": h}]}));
        }
        StepResult {
            record: StepRecord {
                step: n,
                line: 10 * n,
                cur_iter,
                agent: "Sprout".into(),
                config_hash: 0xabc,
                clock: Some(Timestamp::from_unix_seconds(1_784_685_600 + n as i64 * 60)),
                time: hint.is_some(),
                time_interval_hours: 1.0,
                input_tokens: 900,
                ..StepRecord::default()
            },
            line: json!({"hint": hint, "event": true, "request": request}),
        }
    }

    fn attr<'s>(span: &'s Span, key: &str) -> Option<&'s AttrValue> {
        span.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    #[test]
    fn steps_group_into_replies_at_cur_iter_zero_and_name_their_reply_first() {
        let mut b = SpanBuilder::new(identity());
        let (closed, first) = b.step(&step(1, 0, Some("<current-time>x")), 0).unwrap();
        assert!(closed.is_none());
        let (closed, second) = b.step(&step(2, 1, None), 0).unwrap();
        assert!(closed.is_none());
        let (closed, third) = b.step(&step(3, 0, None), 0).unwrap();
        let reply = closed.expect("step 3 starts a reply: the first one's span is made");
        assert_eq!(first.parent, Some(reply.span_id));
        assert_eq!((first.trace_id, second.trace_id), (reply.trace_id, reply.trace_id));
        assert_ne!(third.trace_id, reply.trace_id, "a trace per reply");
        assert_eq!(reply.name, "invoke_agent Sprout");
        assert_eq!((reply.start_ns, reply.end_ns), (first.start_ns, second.start_ns));
        assert_eq!(attr(&reply, "envaware.steps"), Some(&AttrValue::Int(2)));
        assert_eq!(attr(&reply, "envaware.hints"), Some(&AttrValue::Int(1)));
        let last = b.finish().expect("the last reply");
        assert_eq!(third.parent, Some(last.span_id));
        assert!(b.finish().is_none());
        // The same session gives the same ids; another session others.
        let mut again = SpanBuilder::new(identity());
        assert_eq!(again.step(&step(1, 0, None), 0).unwrap().1.span_id, first.span_id);
        let mut other = SpanBuilder::new(Identity { session_id: "s2".into(), ..identity() });
        assert_ne!(other.step(&step(1, 0, None), 0).unwrap().1.span_id, first.span_id);
    }

    #[test]
    fn a_step_span_carries_the_conventions_attributes_and_the_hint_as_a_user_part() {
        let mut b = SpanBuilder::new(identity());
        let (_, span) = b.step(&step(1, 0, Some("<current-time>x")), 0).unwrap();
        assert_eq!(span.name, "chat envaware-demo");
        assert_eq!(span.kind, SpanKind::Client);
        assert_eq!(attr(&span, "gen_ai.operation.name"), Some(&AttrValue::Str("chat".into())));
        assert_eq!(
            attr(&span, "gen_ai.request.model"),
            Some(&AttrValue::Str("envaware-demo".into()))
        );
        assert_eq!(attr(&span, "gen_ai.usage.input_tokens"), Some(&AttrValue::Int(900)));
        let Some(AttrValue::Str(input)) = attr(&span, "gen_ai.input.messages") else { panic!() };
        let input: Value = serde_json::from_str(input).unwrap();
        assert_eq!(
            input[1],
            json!({"role": "user", "parts": [{"type": "text", "content": "<current-time>x"}]})
        );
        assert_eq!(attr(&span, "envaware.fired"), Some(&AttrValue::StrList(vec!["time".into()])));
        assert_eq!(span.events.len(), 1);
        assert_eq!(span.events[0].attributes[0], str_attr("envaware.dimension", "time"));
        assert_eq!(span.start_ns, 1_784_685_660_000_000_000);
        let device = span.resource.iter().find(|(k, _)| k == "device.id").unwrap();
        assert_eq!(device.1, AttrValue::Str("board-7".into()));
        assert!(span.resource.contains(&str_attr("envaware.config.hash", "0000000000000abc")));
        // No model: the span is named by the operation alone.
        let mut b = SpanBuilder::new(Identity { model: None, ..identity() });
        let (_, span) = b.step(&step(1, 0, None), 0).unwrap();
        assert_eq!(span.name, "chat");
        assert!(attr(&span, "gen_ai.request.model").is_none() && span.events.is_empty());
    }

    #[test]
    fn a_watch_says_why_it_fired_and_what_was_told_before() {
        let w = WatchRecord {
            field: "temperature".into(),
            reading: "24.5 °C".into(),
            value: Some(24.5),
            told: Some(22.25),
            change: Some(2.0),
            above: Some(28.0),
            hysteresis: 0.5,
            fired: true,
            ..WatchRecord::default()
        };
        assert_eq!(watch_reason(&w), "moved 2.25 from the 22.25 told (change 2)");
        let crossing = WatchRecord { value: Some(28.5), told: Some(27.0), ..w.clone() };
        assert_eq!(watch_reason(&crossing), "crossed above 28 (from the 27 told)");
        let first = WatchRecord { told: None, ..w.clone() };
        assert_eq!(watch_reason(&first), "nothing was told of it yet");
        let beat = WatchRecord { heartbeat: true, max_interval: Some(10.0), ..w.clone() };
        assert_eq!(
            watch_reason(&beat),
            "heartbeat: steady, but told longer than max_interval 10 s ago"
        );
        let mut s = step(1, 0, Some("<temperature>24.5 °C</temperature>"));
        s.record.time = false;
        s.record.watches = vec![w];
        let (_, span) = SpanBuilder::new(identity()).step(&s, 0).unwrap();
        let e = &span.events[0];
        assert!(e.attributes.contains(&str_attr("envaware.field", "temperature")));
        assert!(e.attributes.contains(&str_attr("envaware.watch.reading", "24.5 °C")));
        assert!(e
            .attributes
            .contains(&("envaware.watch.told_before".into(), AttrValue::Double(22.25))));
        assert_eq!(
            attr(&span, "envaware.fired"),
            Some(&AttrValue::StrList(vec!["watch:temperature".into()]))
        );
    }

    #[test]
    fn the_time_reason_gives_the_age_of_the_time_told() {
        let mut s = step(2, 1, Some("<current-time>y"));
        s.record.told_at = Some(Timestamp::from_unix_seconds(1_784_685_600 + 120 - 7200));
        let (_, span) = SpanBuilder::new(identity()).step(&s, 0).unwrap();
        let reason = &span.events[0].attributes[2];
        assert_eq!(
            reason.1,
            AttrValue::Str("the time told is 7200 s old; time_interval is 1 h".into())
        );
        s.record.told_at = Some(Timestamp::from_unix_seconds(1_784_685_600 + 180));
        let (_, span) = SpanBuilder::new(identity()).step(&s, 0).unwrap();
        assert_eq!(
            span.events[0].attributes[2].1,
            AttrValue::Str("the time told is 60 s in the future (the clock went back)".into())
        );
    }

    #[test]
    fn numbers_in_reasons_are_short() {
        assert_eq!(num(2457.6000000000004), "2457.6");
        assert_eq!(
            (num(2.0), num(0.01), num(-0.0001), num(52.7344)),
            ("2".into(), "0.01".into(), "0".into(), "52.734".into())
        );
    }

    #[test]
    fn derived_ids_are_never_zero_and_differ_by_part() {
        assert_ne!(derive(&[b"a", b"b"]), derive(&[b"ab"]));
        assert_ne!(derive(&[]), 0);
        assert_eq!(random_session_id().len(), 32);
        assert_ne!(random_session_id(), random_session_id());
    }
}
