//! AgentScope's own tests for runtime-state injection
//! (`tests/agent_injection_test.py`), as Rust tests against the core.

use envaware::{Block, HintText, SliceConversation, SliceMessage};
use envaware::{
    Config, ConfigError, Engine, FixedClock, InjectionConfig, Role, Step, TaskCounts, Timestamp,
    Warning,
};
use envaware::{ExtraFields, DEFAULT_INJECTION_SOURCE, DEFAULT_TEMPLATE};

/// 2026-07-22T02:30:00Z.
const NOW: i64 = 1_784_687_400;
const HOUR: i64 = 3600;

fn step(tasks: TaskCounts) -> Step<'static> {
    Step { agent_name: "Friday", tasks, cur_iter: 0, input_tokens: 1200, context_size: 128_000 }
}

fn hint_block(text: &str) -> Block<'_> {
    Block::Hint {
        source: Some(DEFAULT_INJECTION_SOURCE),
        text: HintText::Single(text),
        created_at: None,
    }
}

fn assistant<'a>(blocks: &'a [Block<'a>]) -> SliceMessage<'a> {
    SliceMessage { role: Role::Assistant, name: "Friday", blocks }
}

/// One step; returns the hint and the outcome's warnings.
fn inject(
    config: InjectionConfig<'_>,
    messages: &[SliceMessage<'_>],
    step: &Step<'_>,
    now: i64,
) -> (Option<String>, Vec<Warning>) {
    let engine =
        Engine::new(Config { injection: config, ..Config::default() }).expect("valid config");
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(now));
    let mut buf = [0u8; 2048];
    let outcome = engine
        .step(&SliceConversation(messages), step, &mut clock, &mut (), &mut buf)
        .expect("fits");
    (outcome.hint.map(str::to_string), outcome.warnings.iter().collect())
}

fn wrap(state: &str) -> String {
    DEFAULT_TEMPLATE.replace("{runtime_state}", state)
}

#[test]
fn first_reply_injects_the_time() {
    let (hint, _) = inject(InjectionConfig::default(), &[], &step(TaskCounts::default()), NOW);
    assert_eq!(
        hint.unwrap(),
        wrap("<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>")
    );
}

#[test]
fn time_is_reinjected_after_six_hours_but_not_after_ten_minutes() {
    let recorded =
        wrap("<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>");
    let blocks = [hint_block(&recorded)];
    let context = [assistant(&blocks)];
    let s = step(TaskCounts::default());
    assert_eq!(inject(InjectionConfig::default(), &context, &s, NOW + 600).0, None);
    let (hint, _) = inject(InjectionConfig::default(), &context, &s, NOW + 6 * HOUR);
    assert!(hint.unwrap().contains("<current-time>2026-07-22T08:30:00</current-time>"));
}

#[test]
fn time_is_reinjected_after_a_compression() {
    // A compression replaces the history with a summary: no recorded time remains.
    let summary = [Block::Other];
    let context = [SliceMessage { role: Role::User, name: "user", blocks: &summary }];
    let (hint, _) =
        inject(InjectionConfig::default(), &context, &step(TaskCounts::default()), NOW + 60);
    assert!(hint.unwrap().contains("<current-time>2026-07-22T02:31:00</current-time>"));
}

#[test]
fn a_pending_task_is_reminded_once() {
    let tasks = TaskCounts { pending: 1, in_progress: 0 };
    let (hint, _) = inject(InjectionConfig::default(), &[], &step(tasks), NOW);
    let hint = hint.unwrap();
    assert!(
        hint.contains("<tasks>You have 0 in-progress tasks and 1 pending tasks. Use `TaskList` to view them if you don't know.</tasks>")
    );
    // The reminder is now in the context: the next step stays silent.
    let blocks = [hint_block(&hint)];
    let context = [assistant(&blocks)];
    assert_eq!(inject(InjectionConfig::default(), &context, &step(tasks), NOW + 60).0, None);
    // A task tool call also shows the agent knows its tasks.
    let blocks = [Block::ToolCall { id: "1", name: "TaskList", input: "{}" }];
    let context = [assistant(&blocks)];
    let (hint, _) = inject(InjectionConfig::default(), &context, &step(tasks), NOW);
    assert!(!hint.unwrap().contains("<tasks>"));
}

#[test]
fn the_recorded_timezone_is_honoured_and_a_future_time_reinjects() {
    // 10:00 in Shanghai is 02:00 UTC: ten minutes before 02:10 UTC.
    let recorded = wrap(
        "<current-time>2026-07-22T10:00:00</current-time>\n<timezone>Asia/Shanghai</timezone>",
    );
    let blocks = [hint_block(&recorded)];
    let context = [assistant(&blocks)];
    let s = step(TaskCounts::default());
    assert_eq!(inject(InjectionConfig::default(), &context, &s, NOW - 20 * 60).0, None);
    // Read as UTC it would be eight hours in the future; at 01:50 UTC the
    // Shanghai time itself is in the future: inject again.
    let (hint, _) = inject(InjectionConfig::default(), &context, &s, NOW - 40 * 60);
    assert!(hint.unwrap().contains("<current-time>2026-07-22T01:50:00</current-time>"));
}

#[test]
fn extra_fields_are_attached_but_never_trigger() {
    let fields = [("robot", "R2-D2"), ("site", "greenhouse 3")];
    let config =
        InjectionConfig { extra_fields: ExtraFields::Slice(&fields), ..InjectionConfig::default() };
    let recorded =
        wrap("<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>");
    let blocks = [hint_block(&recorded)];
    let context = [assistant(&blocks)];
    assert_eq!(inject(config, &context, &step(TaskCounts::default()), NOW + 60).0, None);
    let (hint, _) = inject(config, &[], &step(TaskCounts::default()), NOW);
    assert!(hint.unwrap().ends_with("<timezone>UTC</timezone>\n<robot>R2-D2</robot>\n<site>greenhouse 3</site>\n</system-reminder>"));
}

#[test]
fn a_colliding_extra_key_replaces_the_value_in_place() {
    let fields = [("timezone", "ship time"), ("deck", "2")];
    let config =
        InjectionConfig { extra_fields: ExtraFields::Slice(&fields), ..InjectionConfig::default() };
    let (hint, _) = inject(config, &[], &step(TaskCounts::default()), NOW);
    assert_eq!(hint.unwrap(), wrap("<current-time>2026-07-22T02:30:00</current-time>\n<timezone>ship time</timezone>\n<deck>2</deck>"));
}

#[test]
fn injection_can_be_disabled() {
    let config = InjectionConfig { inject_runtime_state: false, ..InjectionConfig::default() };
    let tasks = TaskCounts { pending: 2, in_progress: 1 };
    assert_eq!(inject(config, &[], &step(tasks), NOW).0, None);
}

#[test]
fn context_length_is_injected_at_iteration_zero_and_quotes_the_threshold() {
    let recorded =
        wrap("<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>");
    let blocks = [hint_block(&recorded)];
    let context = [assistant(&blocks)];
    let mut s = Step { input_tokens: 90_000, ..step(TaskCounts::default()) };
    let (hint, _) = inject(InjectionConfig::default(), &context, &s, NOW + 60);
    assert_eq!(
        hint.unwrap(),
        wrap("<context-length>Your current context contains 90000 tokens. When reaching 102400 tokens, your context will be compressed.</context-length>")
    );
    // 0.6 * 128000 = 76800 tokens is the edge: not above it, no hint.
    s.input_tokens = 76_800;
    assert_eq!(inject(InjectionConfig::default(), &context, &s, NOW + 60).0, None);
    s.input_tokens = 76_801;
    assert!(inject(InjectionConfig::default(), &context, &s, NOW + 60).0.is_some());
    // Later iterations of the same reply do not check the context length.
    s.cur_iter = 1;
    assert_eq!(inject(InjectionConfig::default(), &context, &s, NOW + 60).0, None);
}

#[test]
fn time_and_context_length_come_in_one_block() {
    let s = Step { input_tokens: 100_000, ..step(TaskCounts::default()) };
    let (hint, _) = inject(InjectionConfig::default(), &[], &s, NOW);
    assert_eq!(
        hint.unwrap(),
        wrap("<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>\n<context-length>Your current context contains 100000 tokens. When reaching 102400 tokens, your context will be compressed.</context-length>")
    );
}

#[test]
fn a_template_without_the_placeholder_is_rejected() {
    let config = InjectionConfig { template: "<reminder/>", ..InjectionConfig::default() };
    let err = Engine::new(Config { injection: config, ..Config::default() }).unwrap_err();
    assert_eq!(err, ConfigError::TemplateWithoutPlaceholder);
    assert_eq!(
        err.to_string(),
        "injection_config.template: must contain the '{runtime_state}' placeholder"
    );
}

#[test]
fn other_braces_in_a_template_are_kept() {
    let config = InjectionConfig {
        template: "{note} {{x}} {runtime_state} {} {runtime_state}",
        ..InjectionConfig::default()
    };
    let (hint, _) = inject(config, &[], &step(TaskCounts::default()), NOW);
    let state = "<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>";
    assert_eq!(hint.unwrap(), format!("{{note}} {{{{x}}}} {state} {{}} {state}"));
}

#[test]
fn an_invalid_timezone_falls_back_to_utc() {
    let config = InjectionConfig { timezone: "Mars/Olympus_Mons", ..InjectionConfig::default() };
    let (hint, warnings) = inject(config, &[], &step(TaskCounts::default()), NOW);
    assert_eq!(hint.unwrap(), wrap("<current-time>2026-07-22T02:30:00</current-time>\n<timezone>Mars/Olympus_Mons</timezone>"));
    assert!(warnings.contains(&Warning::TimezoneFellBackToUtc));
}

#[test]
fn the_same_failing_call_in_another_key_order_is_reported() {
    let recorded =
        wrap("<current-time>2026-07-22T02:30:00</current-time>\n<timezone>UTC</timezone>");
    let blocks = [
        hint_block(&recorded),
        Block::ToolCall { id: "a", name: "Bash", input: r#"{"cmd": "ls", "cwd": "/"}"# },
        Block::ToolResult {
            id: "a",
            name: "Bash",
            state: envaware::ToolResultState::Error,
            output: "",
        },
        Block::ToolCall { id: "b", name: "Bash", input: r#"{"cwd":"/","cmd":"ls"}"# },
        Block::ToolResult {
            id: "b",
            name: "Bash",
            state: envaware::ToolResultState::Error,
            output: "",
        },
        Block::ToolCall {
            id: "c",
            name: "Bash",
            input: "  {\"cmd\" : \"ls\", \"cwd\": \"\\/\"}\n",
        },
        Block::ToolResult {
            id: "c",
            name: "Bash",
            state: envaware::ToolResultState::Error,
            output: "",
        },
    ];
    let context = [assistant(&blocks)];
    let (hint, _) =
        inject(InjectionConfig::default(), &context, &step(TaskCounts::default()), NOW + 60);
    assert_eq!(
        hint.unwrap(),
        wrap("<tool-error>The last 3 calls to 'Bash' with the same arguments all failed. Stop retrying the same call as-is, check the error message and try a different approach.</tool-error>")
    );
    // Another agent's message is not this agent's streak.
    let other = [SliceMessage { role: Role::Assistant, name: "Saturday", blocks: &blocks }];
    assert_eq!(
        inject(InjectionConfig::default(), &other, &step(TaskCounts::default()), NOW + 60).0,
        None
    );
}
