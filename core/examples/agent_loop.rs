//! A host agent loop to copy: the configuration read from AgentScope's JSON,
//! a live sensor in every hint, and each hint written out as the AgentScope
//! JSON the model side expects (feature `wire`).
//!
//! The "model" is a script: each turn says what the agent did before its
//! next reasoning step. Before each step the engine decides; when something
//! fires, the sensor is read, the hint is rendered and appended to the
//! context, and the hint block is printed as AgentScope JSON. At the end the
//! whole context is printed as AgentScope `Msg` objects.
//!
//! `cargo run -p envaware --example agent_loop --features wire`; `cargo
//! xtask test` runs it, and it checks its own results.

use envaware::wire::{write_message, IsoTime, MessageMeta};
use envaware::{
    AgentContext, ConfigBuf, Engine, FixedClock, LiveFields, StepInput, TaskCounts, Timestamp,
    ToolResultState,
};

/// AgentScope's `InjectionConfig` and `ContextConfig`, as JSON (a file or a
/// message from the host in a real program). Pydantic's lax values work:
/// `"0.25"` is a number.
const INJECTION_JSON: &str = r#"{
    "timezone": "Europe/Berlin",
    "time_interval": "0.25",
    "tool_retries_limit": 3,
    "extra_fields": {"robot": "R2"}
}"#;
const CONTEXT_JSON: &str = r#"{"trigger_ratio": 0.8, "context_buffer_ratio": 0.2}"#;

/// A temperature sensor: read only when a hint is made (`refresh`), so a
/// step that injects nothing costs no bus traffic.
struct Thermometer {
    readings: core::slice::Iter<'static, f32>,
    reads: usize,
    value: String,
}

impl LiveFields for Thermometer {
    fn refresh(&mut self) {
        self.reads += 1;
        self.value = match self.readings.next() {
            Some(celsius) => format!("{celsius} °C"),
            None => envaware::UNAVAILABLE.to_string(),
        };
    }
    fn len(&self) -> usize {
        1
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        (i == 0).then_some(("temperature", self.value.as_str()))
    }
}

/// What the agent does before its next step.
enum Turn {
    /// The operator writes; a new reply starts.
    User,
    /// The agent calls a tool, with its result.
    Call(&'static str, &'static str, ToolResultState),
    /// Time passes, in minutes.
    Wait(i64),
}

const SCRIPT: &[Turn] = &[
    Turn::User,
    Turn::Call("OpenVent", r#"{"vent": 2}"#, ToolResultState::Error),
    Turn::Call("OpenVent", r#"{ "vent" : 2 }"#, ToolResultState::Error),
    Turn::Call("OpenVent", r#"{"vent":2}"#, ToolResultState::Error),
    Turn::Call("CloseVent", r#"{"vent": 2}"#, ToolResultState::Success),
    Turn::Wait(20),
    Turn::User,
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config: ConfigBuf = ConfigBuf::new();
    config.load_injection(INJECTION_JSON)?;
    config.load_context(CONTEXT_JSON)?;
    let engine = Engine::new(config.config())?;
    // What the configuration warns of (none here): say it where the user looks.
    for w in engine.config().warnings() {
        println!("configuration warning: {w}");
    }
    // The zone the messages' timestamps are written in, as AgentScope's.
    let zone = engine.config().zone();

    let mut context: AgentContext<'_, 16, 64, 4096> = AgentContext::new(&engine, "R2");
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400)); // 2026-07-22T02:30:00Z
    let mut sensor =
        Thermometer { readings: [21.5, 22.25, 23.0].iter(), reads: 0, value: String::new() };
    let mut hint = [0u8; 1024];
    let mut json = [0u8; 4096];
    let tasks = TaskCounts { pending: 2, in_progress: 0 };
    let mut fired = Vec::new();
    let (mut cur_iter, mut call) = (0, 0);

    for (n, turn) in SCRIPT.iter().enumerate() {
        match *turn {
            Turn::User => {
                context.user("operator")?;
                cur_iter = 0;
            }
            Turn::Call(tool, input, state) => {
                call += 1;
                let id = format!("call-{call}");
                context.tool_call(&id, tool, input)?;
                context.tool_result(&id, tool, state)?;
            }
            Turn::Wait(minutes) => clock.advance(minutes * 60 * 1_000_000),
        }
        // The context knows its agent: a step's input names none.
        let step = StepInput { tasks, cur_iter, input_tokens: 1200, context_size: 8192 };
        let now = clock.0.ok_or("the clock is set")?;
        let outcome = context.step(&step, &mut clock, &mut sensor, &mut hint)?;
        cur_iter += 1;
        // A step's warnings (an unknown zone, a time format that cannot be
        // read back, a dropped live field): print them, never drop them.
        for w in outcome.warnings.iter() {
            println!("step {n}: warning: {w}");
        }
        assert_eq!(outcome.warnings.iter().count(), 0, "the configuration is clean");
        let Some(text) = outcome.hint else {
            println!("step {n}: nothing to tell");
            fired.push(String::new());
            continue;
        };
        // One call: the configured injection source and zone are the engine's.
        let len = engine.write_hint_block(&format!("hint-{n}"), text, now, &mut json)?;
        let block = core::str::from_utf8(&json[..len])?;
        assert!(block.starts_with(r#"{"type":"hint","hint":"<system-reminder>"#), "{block}");
        println!("step {n}: {block}");
        fired.push(text.to_string());
    }

    // Oldest first. The store keeps no text (only what the rules read), so
    // text blocks are written empty; a real program keeps when it saw each
    // message for `created_at`.
    println!("the context, as AgentScope Msg objects:");
    for (n, index) in (0..context.len()).rev().enumerate() {
        let msg = context.newest(index).ok_or("a message the context holds")?;
        let created_at = IsoTime { at: clock.0.ok_or("the clock is set")?, zone };
        let id = format!("R2-{n}");
        let len = write_message(&msg, &MessageMeta { id: &id, created_at }, &mut json)?;
        println!("{}", core::str::from_utf8(&json[..len])?);
    }

    check(&fired, sensor.reads);
    zone_typo()?;
    watch_typos()?;
    Ok(())
}

/// Two typos in a watch: a key (`hysteresys`) is refused when the
/// configuration loads, naming its path; a field no live source provides
/// (`temprature`) cannot fire, and every step's outcome says so.
fn watch_typos() -> Result<(), Box<dyn std::error::Error>> {
    const READINGS: &[f32] = &[21.5];
    let mut config: ConfigBuf = ConfigBuf::new();
    let refused = config
        .load_injection(r#"{"watch": {"temperature": {"above": 28, "hysteresys": 0.5}}}"#)
        .err()
        .ok_or("an unknown key in a watch is refused")?;
    println!("watch typo: {refused}");
    assert!(refused.to_string().starts_with("injection_config.watch.temperature.hysteresys"));

    config.load_injection(r#"{"watch": {"temprature": {"change": 1}}}"#)?;
    let engine = Engine::new(config.config())?;
    let mut context: AgentContext<'_, 4, 8, 512> = AgentContext::new(&engine, "R2");
    let mut sensor = Thermometer { readings: READINGS.iter(), reads: 0, value: String::new() };
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
    let step = StepInput {
        tasks: TaskCounts::default(),
        cur_iter: 0,
        input_tokens: 0,
        context_size: 8192,
    };
    context.user("operator")?;
    let mut hint = [0u8; 1024];
    let outcome = context.step(&step, &mut clock, &mut sensor, &mut hint)?;
    for w in outcome.warnings.iter() {
        println!("watch typo: warning: {w}");
    }
    assert!(outcome.warnings.iter().any(|w| w == envaware::Warning::WatchedFieldNotLive));
    Ok(())
}

/// A zone name with a typo: as AgentScope, the time is told in UTC (the
/// hint still names the zone as written), and every step's outcome warns;
/// strict mode refuses it when the engine is created.
fn zone_typo() -> Result<(), Box<dyn std::error::Error>> {
    let mut config: ConfigBuf = ConfigBuf::new();
    config.load_injection(r#"{"timezone": "Europe/Berln"}"#)?;
    let engine = Engine::new(config.config())?;
    let mut context: AgentContext<'_, 4, 8, 512> = AgentContext::new(&engine, "R2");
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
    let mut hint = [0u8; 1024];
    context.user("operator")?;
    let step = StepInput {
        tasks: TaskCounts::default(),
        cur_iter: 0,
        input_tokens: 0,
        context_size: 8192,
    };
    let outcome = context.step(&step, &mut clock, &mut (), &mut hint)?;
    for w in outcome.warnings.iter() {
        println!("zone typo: warning: {w}");
    }
    assert!(outcome.warnings.iter().any(|w| w == envaware::Warning::TimezoneFellBackToUtc));
    let text = outcome.hint.ok_or("the first step tells the time")?;
    assert!(text.contains("<current-time>2026-07-22T02:30:00</current-time>"), "UTC: {text}");
    assert!(text.contains("<timezone>Europe/Berln</timezone>"), "{text}");

    config.load_injection(r#"{"timezone": "Europe/Berln", "strict": true}"#)?;
    let refused = Engine::new(config.config()).err().ok_or("strict mode refuses the typo")?;
    println!("zone typo, strict mode: {refused}");
    assert!(refused.to_string().contains(r#"time zone "Europe/Berln" is not a known IANA zone"#));
    Ok(())
}

/// The session's expected shape: which step told what, and that the sensor
/// was read for hints only.
fn check(fired: &[String], reads: usize) {
    assert!(fired[0].contains("<current-time>2026-07-22T04:30:00</current-time>"), "{}", fired[0]);
    assert!(
        fired[0].contains("<tasks>") && fired[0].contains("<temperature>21.5 °C</temperature>")
    );
    assert!(fired[0].contains("<robot>R2</robot>"), "extra fields ride along: {}", fired[0]);
    // Arguments compare as `json.dumps(json.loads(raw), sort_keys=True)`:
    // the three spellings are one call.
    assert!(fired[1].is_empty() && fired[2].is_empty());
    assert!(fired[3].contains("<tool-error>The last 3 calls to 'OpenVent'"), "{}", fired[3]);
    // A new tool result ends the tool error; 20 minutes pass the interval.
    assert!(fired[4].is_empty());
    assert!(
        fired[5].contains("<current-time>2026-07-22T04:50:00</current-time>")
            && !fired[5].contains("<tasks>")
    );
    // A new reply: the tasks were told and nothing else is due.
    assert!(fired[6].is_empty());
    assert_eq!(
        reads,
        fired.iter().filter(|h| !h.is_empty()).count(),
        "the sensor is read only for a hint"
    );
}
