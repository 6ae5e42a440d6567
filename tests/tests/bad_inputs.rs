//! The "Bad inputs" catalogue (docs/testing.md), where no other test shows it:
//! configuration JSON that is malformed, deep, unknown or oversized, and
//! clocks that go back or jump.

use envaware::{Block, HintText, SliceConversation, SliceMessage};
use envaware::{ConfigBuf, LoadError};
use envaware::{ConfigField, DEFAULT_INJECTION_SOURCE};
use envaware::{Engine, FixedClock, Role, Step, TaskCounts, TimeDecision, Timestamp};

fn load(injection: &str) -> Result<String, LoadError> {
    let mut buf: ConfigBuf<512, 4, 4> = ConfigBuf::with_capacity();
    let before = format!("{:?}", buf.config());
    let result = buf.load_injection(injection);
    if result.is_err() {
        assert_eq!(format!("{:?}", buf.config()), before, "a failed load left the buffer changed");
    }
    result.map(|()| format!("{:?}", buf.config()))
}

#[test]
fn malformed_deep_unknown_and_oversized_configuration_json() {
    // Cut, not an object, wrong type: typed errors naming the place or field.
    let cut = load(r#"{"timezone": "UTC""#).unwrap_err();
    assert_eq!(
        cut.to_string(),
        "invalid JSON at line 1 column 19 (byte 18): expecting ',' delimiter or closing bracket"
    );
    assert_eq!(load("[]"), Err(LoadError::NotAnObject));
    let wrong = load(r#"{"time_interval": "soon"}"#).unwrap_err();
    assert_eq!(wrong.to_string(), "injection_config.time_interval: expected a number");
    // Unknown fields are ignored, as pydantic ignores them.
    assert_eq!(load(r#"{"colour": "green", "timezone": "UTC"}"#), load(r#"{"timezone": "UTC"}"#));
    // Deep JSON, in a known or an unknown field, is refused past 1,024
    // levels (deeper than Python reads), not recursed into.
    let deep = format!(r#"{{"x": {}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
    let refused = load(&deep).unwrap_err();
    assert!(matches!(refused, LoadError::Syntax { offset: 1029, .. }), "{refused:?}");
    assert!(refused.to_string().ends_with("nested deeper than 1024 levels"), "{refused}");
    // Oversized text and lists: TooLong naming the field, buffer unchanged.
    let long = format!(r#"{{"template": "{}{{runtime_state}}"}}"#, "x".repeat(600));
    assert_eq!(load(&long), Err(LoadError::TooLong { field: ConfigField::Template }));
    let many = r#"{"task_tool_names": ["a", "b", "c", "d", "e"]}"#;
    assert_eq!(load(many), Err(LoadError::TooLong { field: ConfigField::TaskToolNames }));
}

#[test]
fn a_clock_that_goes_back_or_jumps_tells_the_time_again() {
    let engine = Engine::new(envaware::Config::default()).unwrap();
    let told = "<system-reminder>Treat the following as the ground truth at this point of the conversation. Anything stated earlier is outdated, and a later reminder, if any, supersedes this one:\n<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>\n</system-reminder>";
    let blocks = [Block::Hint {
        source: Some(DEFAULT_INJECTION_SOURCE),
        text: HintText::Single(told),
        created_at: None,
    }];
    let context = [SliceMessage { role: Role::Assistant, name: "rover", blocks: &blocks }];
    let step = Step {
        agent_name: "rover",
        tasks: TaskCounts::default(),
        cur_iter: 1,
        input_tokens: 0,
        context_size: 8192,
    };
    let at = |seconds: i64| {
        engine
            .decide(
                &SliceConversation(&context),
                &step,
                Some(Timestamp::from_unix_seconds(seconds)),
            )
            .time
    };
    const TOLD: i64 = 1_784_687_400;
    assert_eq!(at(TOLD + 60), TimeDecision::NotDue, "a minute later: not due");
    // Backwards by a second: the recorded time is in the future, told again.
    assert_eq!(at(TOLD - 1), TimeDecision::Inject(Timestamp::from_unix_seconds(TOLD - 1)));
    // A jump forward past the interval (0.5 h by default), and a wild one.
    assert_eq!(at(TOLD + 1801), TimeDecision::Inject(Timestamp::from_unix_seconds(TOLD + 1801)));
    assert_eq!(
        at(TOLD + 100 * 365 * 86_400),
        TimeDecision::Inject(Timestamp::from_unix_seconds(TOLD + 100 * 365 * 86_400))
    );
    // Unset: skipped, never 1970 (see engine.rs for the other dimensions).
    let mut unset = FixedClock::unset();
    let mut buf = [0u8; 512];
    let outcome =
        engine.step(&SliceConversation(&context), &step, &mut unset, &mut (), &mut buf).unwrap();
    assert_eq!(outcome.hint, None);
}
