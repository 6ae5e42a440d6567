use super::compiled::*;
use super::context::*;
use super::scan::*;
use super::tasks::*;
use super::time::*;
use super::tool_error::*;
use super::*;
use crate::config::watch::{Decimal, MAX_WATCHES};
use crate::config::RUNTIME_STATE_PLACEHOLDER;
use crate::config::{Config, InjectionConfig};
use crate::conversation::{HintText, SliceConversation, SliceMessage};
use crate::conversation::{Role, ToolResultState};
use crate::engine::Engine;
use crate::time::{self, Zone};
use crate::tracker::Tracker;

const AGENT: &str = "rover";

fn step() -> Step<'static> {
    Step {
        agent_name: AGENT,
        tasks: TaskCounts::default(),
        cur_iter: 1,
        input_tokens: 0,
        context_size: 1000,
    }
}

fn engine(limit: u64) -> Engine<'static> {
    Engine::new(Config {
        injection: InjectionConfig { tool_retries_limit: limit, ..Default::default() },
        ..Default::default()
    })
    .unwrap()
}

fn call(id: &'static str, name: &'static str, input: &'static str) -> Block<'static> {
    Block::ToolCall { id, name, input }
}

fn failed(id: &'static str, name: &'static str) -> Block<'static> {
    Block::ToolResult { id, name, state: ToolResultState::Error, output: "" }
}

/// The decision of the scan and of a tracker that observed `blocks` as
/// the agent's one message, which must agree.
fn tool_error_of(engine: &Engine<'_>, name: &str, blocks: &[Block<'_>]) -> Option<ToolError> {
    let msgs = [SliceMessage { role: Role::Assistant, name, blocks }];
    let conv = SliceConversation(&msgs);
    let scanned = engine.decide(&conv, &step(), None);
    let tracked =
        Tracker::from_conversation(engine, AGENT, &conv).decide(&conv, &input(&step()), None);
    assert_eq!(scanned, tracked);
    scanned.tool_error
}

const NOW: i64 = 1_784_687_400; // 2026-07-22T02:30:00Z
const SOURCE: &str = crate::config::DEFAULT_INJECTION_SOURCE;

fn hint(text: &'static str) -> Block<'static> {
    Block::Hint { source: Some(SOURCE), text: HintText::Single(text), created_at: None }
}

/// `body` as envaware renders it with the default template.
fn framed(body: &str) -> &'static str {
    let prefix =
        crate::config::DEFAULT_TEMPLATE.split(RUNTIME_STATE_PLACEHOLDER).next().unwrap_or("");
    std::boxed::Box::leak(std::format!("{prefix}{body}\n</system-reminder>").into_boxed_str())
}

fn at(seconds: i64) -> Option<Timestamp> {
    Some(Timestamp::from_unix_seconds(seconds))
}

fn own<'a>(blocks: &'a [Block<'static>]) -> SliceMessage<'a> {
    SliceMessage { role: Role::Assistant, name: AGENT, blocks }
}

/// The scan's decision, checked against a tracker that observed the
/// same messages.
fn decide_on(
    engine: &Engine<'_>,
    msgs: &[SliceMessage<'_>],
    step: &Step<'_>,
    now: Option<Timestamp>,
) -> Decision {
    let conv = SliceConversation(msgs);
    let scanned = engine.decide(&conv, step, now);
    assert_eq!(
        Tracker::from_conversation(engine, step.agent_name, &conv).decide(&conv, &input(step), now),
        scanned
    );
    scanned
}

/// `step` without its agent's name, for a tracker built with it.
fn input(step: &Step<'_>) -> StepInput {
    StepInput {
        tasks: step.tasks,
        cur_iter: step.cur_iter,
        input_tokens: step.input_tokens,
        context_size: step.context_size,
    }
}

fn with_injection(f: impl FnOnce(&mut InjectionConfig<'static>)) -> Engine<'static> {
    let mut injection = InjectionConfig::default();
    f(&mut injection);
    Engine::new(Config { injection, ..Default::default() }).unwrap()
}

#[test]
fn the_time_is_due_past_the_interval_and_in_the_future_not_at_or_within_it() {
    let engine = engine(3);
    for (recorded, due) in [
        ("<current-time>2026-07-22T02:00:00</current-time>", false), // exactly the interval
        ("<current-time>2026-07-22T01:59:59</current-time>", true),
        ("<current-time>2026-07-22T02:30:00</current-time>", false), // now
        ("<current-time>2026-07-22T02:30:01</current-time>", true),  // the future
        ("<current-time>2026-07-21T02:30:00</current-time>", true),
        ("<current-time>not a time</current-time>", true),
    ] {
        let blocks = [hint(recorded)];
        let d = decide_on(&engine, &[own(&blocks)], &step(), at(NOW));
        let want = if due {
            TimeDecision::Inject(Timestamp::from_unix_seconds(NOW))
        } else {
            TimeDecision::NotDue
        };
        assert_eq!(d.time, want, "{recorded}");
        assert_eq!(d.fires(), due, "{recorded}");
    }
    // No recorded time: inject; no clock, or one Python cannot hold: skipped.
    assert_eq!(
        decide_on(&engine, &[], &step(), at(NOW)).time,
        TimeDecision::Inject(Timestamp::from_unix_seconds(NOW))
    );
    assert_eq!(
        decide_on(&engine, &[], &step(), None).time,
        TimeDecision::Skipped(TimeSkipped::ClockUnset)
    );
    let far = Some(Timestamp(i64::MAX));
    assert_eq!(
        decide_on(&engine, &[], &step(), far).time,
        TimeDecision::Skipped(TimeSkipped::OutOfRange)
    );
    let year_zero = at(-62_135_596_801); // 0000-12-31T23:59:59Z
    assert_eq!(
        decide_on(&engine, &[], &step(), year_zero).time,
        TimeDecision::Skipped(TimeSkipped::OutOfRange)
    );
    assert!(matches!(
        decide_on(&engine, &[], &step(), at(-62_135_596_800)).time,
        TimeDecision::Inject(_)
    ));
    // In UTC+14 the local year is 10000 before the UTC one is.
    let kiribati = with_injection(|i| i.timezone = "Pacific/Kiritimati");
    let late = at(253_402_300_799 - 3600); // 9999-12-31T22:59:59Z
    assert_eq!(
        decide_on(&kiribati, &[], &step(), late).time,
        TimeDecision::Skipped(TimeSkipped::OutOfRange)
    );
    assert!(matches!(decide_on(&engine, &[], &step(), late).time, TimeDecision::Inject(_)));
    // In New York the UTC year is 10000 first: Python cannot hold it either.
    let ny = with_injection(|i| i.timezone = "America/New_York");
    let new_year = at(253_402_300_800 + 3600); // 10000-01-01T01:00Z, 9999-12-31T20:00 in New York
    assert_eq!(
        decide_on(&ny, &[], &step(), new_year).time,
        TimeDecision::Skipped(TimeSkipped::OutOfRange)
    );
    assert!(matches!(
        decide_on(&ny, &[], &step(), at(253_402_300_799)).time,
        TimeDecision::Inject(_)
    ));
}

#[test]
fn the_newest_recorded_time_counts_and_other_sources_do_not() {
    let engine = engine(3);
    let (old, recent) = (
        hint("<current-time>2026-07-22T01:00:00</current-time>"),
        hint("<current-time>2026-07-22T02:20:00</current-time>"),
    );
    let foreign = Block::Hint {
        source: Some("other"),
        text: HintText::Single("<current-time>2026-07-22T02:20:00</current-time>"),
        created_at: None,
    };
    let unsourced = Block::Hint {
        source: None,
        text: HintText::Single("<current-time>2026-07-22T02:20:00</current-time>"),
        created_at: None,
    };
    let cases: [(&[Block<'static>], bool); 5] = [
        (&[old, recent], false),
        (&[recent, old], true),
        (&[old, foreign], true),
        (&[old, unsourced], true),
        (&[recent, foreign], false),
    ];
    for (blocks, due) in cases {
        let d = decide_on(&engine, &[own(blocks)], &step(), at(NOW));
        assert_eq!(matches!(d.time, TimeDecision::Inject(_)), due, "{blocks:?}");
    }
    // Newest message first, whatever its blocks' order.
    let older = [recent];
    let newer = [old];
    assert!(matches!(
        decide_on(&engine, &[own(&older), own(&newer)], &step(), at(NOW)).time,
        TimeDecision::Inject(_)
    ));
    assert_eq!(
        decide_on(&engine, &[own(&newer), own(&older)], &step(), at(NOW)).time,
        TimeDecision::NotDue
    );
    // A user's message is not read; another agent's is, except in strict mode.
    let user = [SliceMessage { role: Role::User, name: AGENT, blocks: &older }];
    assert!(matches!(decide_on(&engine, &user, &step(), at(NOW)).time, TimeDecision::Inject(_)));
    let other = [SliceMessage { role: Role::Assistant, name: "other", blocks: &older }];
    assert_eq!(
        engine.decide(&SliceConversation(&other), &step(), at(NOW)).time,
        TimeDecision::NotDue
    );
    let strict = with_injection(|i| i.strict = true);
    let framed_recent = [hint(framed("<current-time>2026-07-22T02:20:00</current-time>"))];
    let other = [SliceMessage { role: Role::Assistant, name: "other", blocks: &framed_recent }];
    assert!(matches!(
        strict.decide(&SliceConversation(&other), &step(), at(NOW)).time,
        TimeDecision::Inject(_)
    ));
    assert_eq!(
        decide_on(&strict, &[own(&framed_recent)], &step(), at(NOW)).time,
        TimeDecision::NotDue
    );
}

#[test]
fn a_recorded_time_split_across_parts_is_read_back() {
    let engine = with_injection(|i| i.timezone = "Asia/Tokyo");
    // 11:20 in Tokyo is 02:20Z, ten minutes before now.
    for parts in [
        &[
            "<current-time>2026-07-22T11:",
            "20:00</current-time>\n<timezone>Asia/",
            "Tokyo</timezone>",
        ][..],
        &["<current-", "time>2026-07-22T11:20:00</current-time>"],
    ] {
        let blocks =
            [Block::Hint { source: Some(SOURCE), text: HintText::Parts(parts), created_at: None }];
        assert_eq!(
            decide_on(&engine, &[own(&blocks)], &step(), at(NOW)).time,
            TimeDecision::NotDue,
            "{parts:?}"
        );
    }
    // Read in another zone, the same parts are nine hours off.
    const SPLIT_ZONE: [&str; 2] = [
        "<current-time>2026-07-22T11:20:00</current-time>\n<timezone>Europe/",
        "London</timezone>",
    ];
    let blocks = [Block::Hint {
        source: Some(SOURCE),
        text: HintText::Parts(&SPLIT_ZONE),
        created_at: None,
    }];
    assert!(matches!(
        decide_on(&engine, &[own(&blocks)], &step(), at(NOW)).time,
        TimeDecision::Inject(_)
    ));
}

#[cfg(feature = "custom-time-format")]
#[test]
fn a_recorded_zone_is_read_as_the_reference_reads_it() {
    // 2026-11-01 01:50 EDT was recorded; now is 01:20 EST, 30 minutes later.
    let now = at(1_793_514_000);
    let ny = with_injection(|i| i.timezone = "America/New_York");
    let same = [hint(
        "<current-time>2026-11-01T01:50:00</current-time>\n<timezone>America/New_York</timezone>",
    )];
    let alias =
        [hint("<current-time>2026-11-01T01:50:00</current-time>\n<timezone>US/Eastern</timezone>")];
    let untagged = [hint("<current-time>2026-11-01T01:50:00</current-time>")];
    // The same name: wall clocks, 30 minutes "in the future", re-injected.
    assert!(matches!(decide_on(&ny, &[own(&same)], &step(), now).time, TimeDecision::Inject(_)));
    assert!(matches!(
        decide_on(&ny, &[own(&untagged)], &step(), now).time,
        TimeDecision::Inject(_)
    ));
    // Another name for the same rules: instants, 30 minutes ago.
    assert_eq!(decide_on(&ny, &[own(&alias)], &step(), now).time, TimeDecision::NotDue);
    // Strict mode: always instants.
    let strict = with_injection(|i| (i.timezone, i.strict) = ("America/New_York", true));
    let same_framed = [hint(framed(
        "<current-time>2026-11-01T01:50:00</current-time>\n<timezone>America/New_York</timezone>",
    ))];
    assert_eq!(decide_on(&strict, &[own(&same_framed)], &step(), now).time, TimeDecision::NotDue);
    assert!(matches!(
        decide_on(&ny, &[own(&same_framed)], &step(), now).time,
        TimeDecision::Inject(_)
    ));
    // An unknown recorded zone is read as UTC, with a warning: 01:50Z is
    // 4.5 hours before now.
    let unknown =
        [hint("<current-time>2026-11-01T01:50:00</current-time>\n<timezone>Mars/Base</timezone>")];
    let d = decide_on(&ny, &[own(&unknown)], &step(), now);
    assert!(matches!(d.time, TimeDecision::Inject(_)));
    assert!(d.warnings.contains(Warning::RecordedTimezoneFellBackToUtc));
    let utc = with_injection(|i| i.time_interval = 5.0);
    let d = decide_on(&utc, &[own(&unknown)], &step(), now);
    assert_eq!(d.time, TimeDecision::NotDue);
    assert!(d.warnings.contains(Warning::RecordedTimezoneFellBackToUtc));
    assert!(!decide_on(&utc, &[own(&untagged)], &step(), now)
        .warnings
        .contains(Warning::RecordedTimezoneFellBackToUtc));
    // A time with its offset needs no zone: the tag is not read.
    let offset = with_injection(|i| {
        (i.timezone, i.time_format) = ("America/New_York", "%Y-%m-%dT%H:%M:%S%z")
    });
    let tagged = [hint(
        "<current-time>2026-11-01T01:50:00-0400</current-time>\n<timezone>Mars/Base</timezone>",
    )];
    let d = decide_on(&offset, &[own(&tagged)], &step(), now);
    assert_eq!(d.time, TimeDecision::NotDue);
    assert!(!d.warnings.contains(Warning::RecordedTimezoneFellBackToUtc));
}

#[cfg(feature = "custom-time-format")]
#[test]
fn a_format_that_looks_like_the_default_is_read_as_itself() {
    // Day and month swapped: the text has the default format's form,
    // but it is 2026-12-07, not July 12 (now is July 22).
    let swapped =
        with_injection(|i| (i.time_format, i.time_interval) = ("%Y-%d-%mT%H:%M:%S", 24.0 * 30.0));
    let recorded = [hint("<current-time>2026-07-12T02:30:00</current-time>")];
    assert!(matches!(
        decide_on(&swapped, &[own(&recorded)], &step(), at(NOW)).time,
        TimeDecision::Inject(_)
    ));
    let default = with_injection(|i| i.time_interval = 24.0 * 30.0);
    assert_eq!(decide_on(&default, &[own(&recorded)], &step(), at(NOW)).time, TimeDecision::NotDue);
}

#[test]
fn strict_mode_reads_fields_only_where_envaware_writes_them() {
    let strict = with_injection(|i| i.strict = true);
    let tasks = Step { tasks: TaskCounts { pending: 1, in_progress: 0 }, ..step() };
    let prefix = &crate::config::DEFAULT_TEMPLATE[..strict.config().state_start];
    let hint_of = |body: &str| -> &'static str {
        std::boxed::Box::leak(std::format!("{prefix}{body}\n</system-reminder>").into_boxed_str())
    };
    let first =
        [hint(hint_of("<current-time>2026-07-22T02:20:00</current-time>\n<tasks>t</tasks>"))];
    let d = decide_on(&strict, &[own(&first)], &tasks, at(NOW));
    assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
    // Not first: a value that carries the tag, not a field.
    let later = [hint(hint_of(
        "<robot>x<current-time>2026-07-22T02:20:00</current-time><tasks>t</tasks></robot>",
    ))];
    let d = decide_on(&strict, &[own(&later)], &tasks, at(NOW));
    assert_eq!((matches!(d.time, TimeDecision::Inject(_)), d.tasks), (true, Some(tasks.tasks)));
    // Tasks first, or on a line of their own.
    let tasks_first = [hint(hint_of("<tasks>t</tasks>"))];
    assert_eq!(decide_on(&strict, &[own(&tasks_first)], &tasks, at(NOW)).tasks, None);
    // Without the template's opening text, nothing is read.
    let bare = [hint("<current-time>2026-07-22T02:20:00</current-time>")];
    assert!(matches!(
        decide_on(&strict, &[own(&bare)], &tasks, at(NOW)).time,
        TimeDecision::Inject(_)
    ));
    // The default mode reads them anywhere.
    let engine = engine(3);
    let d = decide_on(&engine, &[own(&later)], &tasks, at(NOW));
    assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
}

#[test]
fn a_tool_name_whose_bit_is_no_task_tool_s_is_told_without_a_compare() {
    let cfg = *engine(3).config();
    for name in crate::config::DEFAULT_TASK_TOOL_NAMES {
        assert!(may_be_task_tool(&cfg, name) && is_task_tool(&cfg, name), "{name}");
    }
    // Other lengths or first bytes: rejected by the bit alone.
    for name in ["Bash", "Move", "ReadSensor", "", "TaskLists"] {
        assert!(!may_be_task_tool(&cfg, name), "{name}");
    }
    // A task tool's length and first byte: compared, and no task tool.
    assert!(may_be_task_tool(&cfg, "TaskLisx") && !is_task_tool(&cfg, "TaskLisx"));
    let pending = Step { tasks: TaskCounts { pending: 1, in_progress: 0 }, ..step() };
    let near = [call("c", "TaskLisx", "{}")];
    assert_eq!(decide_on(&engine(3), &[own(&near)], &pending, None).tasks, Some(pending.tasks));
    // The bits follow the configured names, an empty one too.
    let names: &'static [&'static str] = &["", "Plan"];
    let custom = with_injection(|i| i.task_tool_names = crate::config::StrList::Slice(names));
    assert!(is_task_tool(custom.config(), "") && is_task_tool(custom.config(), "Plan"));
    assert!(
        !is_task_tool(custom.config(), "TaskList")
            && !may_be_task_tool(custom.config(), "TaskList")
    );
}

#[test]
fn the_newest_time_hint_is_read_however_its_message_ends_and_older_messages_still_tell_the_tasks() {
    let engine = engine(3);
    let pending = Step { tasks: TaskCounts { pending: 2, in_progress: 0 }, ..step() };
    let time = hint("<current-time>2026-07-22T02:20:00</current-time>");
    let list = call("c", "TaskList", "{}");
    let bash = call("d", "Bash", "{}");
    // A task call, then other blocks, after the time hint in its message.
    let d = decide_on(&engine, &[own(&[time, list, bash])], &pending, at(NOW));
    assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
    let d = decide_on(&engine, &[own(&[bash, time, bash])], &pending, at(NOW));
    assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, Some(pending.tasks)));
    // Once the time is found, older messages are read for the tasks only:
    // an assistant's task call counts, a user's does not.
    let user_list = [list];
    let user = SliceMessage { role: Role::User, name: AGENT, blocks: &user_list };
    let d = decide_on(&engine, &[own(&[list]), own(&[bash]), own(&[time])], &pending, at(NOW));
    assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
    let d =
        decide_on(&engine, &[user, own(&[bash]), own(&[time]), own(&[bash])], &pending, at(NOW));
    assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, Some(pending.tasks)));
    // An older time hint is not read once a newer one is found.
    let stale = hint("<current-time>2026-07-20T00:00:00</current-time>");
    let d = decide_on(&engine, &[own(&[stale]), own(&[bash]), own(&[time])], &pending, at(NOW));
    assert_eq!(d.time, TimeDecision::NotDue);
    let d = decide_on(&engine, &[own(&[time]), own(&[stale])], &pending, at(NOW));
    assert_eq!(d.time, TimeDecision::Inject(Timestamp::from_unix_seconds(NOW)));
}

#[test]
fn tasks_are_told_unless_the_context_shows_them_anywhere() {
    let engine = engine(3);
    let pending = Step { tasks: TaskCounts { pending: 2, in_progress: 0 }, ..step() };
    let in_progress = Step { tasks: TaskCounts { pending: 0, in_progress: 1 }, ..step() };
    assert!(!TaskCounts::default().has_uncompleted());
    assert!(pending.tasks.has_uncompleted() && in_progress.tasks.has_uncompleted());
    assert_eq!(decide_on(&engine, &[], &pending, None).tasks, Some(pending.tasks));
    assert_eq!(decide_on(&engine, &[], &in_progress, None).tasks, Some(in_progress.tasks));
    assert_eq!(decide_on(&engine, &[], &step(), None).tasks, None);
    let list = [call("c", "TaskList", "{}")];
    let bash = [call("c", "Bash", "{}")];
    let told = [hint("<tasks>x</tasks>")];
    let time = [hint("<current-time>2026-07-22T02:20:00</current-time>")];
    assert_eq!(decide_on(&engine, &[own(&list)], &pending, None).tasks, None);
    assert_eq!(decide_on(&engine, &[own(&told)], &pending, None).tasks, None);
    assert_eq!(decide_on(&engine, &[own(&bash)], &pending, None).tasks, Some(pending.tasks));
    // Older than the newest recorded time: still read.
    let d = decide_on(&engine, &[own(&list), own(&time)], &pending, at(NOW));
    assert_eq!((d.time, d.tasks), (TimeDecision::NotDue, None));
    // Only assistant messages.
    let user = [SliceMessage { role: Role::User, name: AGENT, blocks: &list }];
    assert_eq!(decide_on(&engine, &user, &pending, None).tasks, Some(pending.tasks));
}

#[test]
fn the_context_length_is_told_at_iteration_0_past_the_buffer() {
    let engine = engine(3); // trigger 0.8, buffer 0.2: told above 600 of 1000
    let at_iter = |cur_iter, input_tokens, in_progress| Step {
        cur_iter,
        input_tokens,
        tasks: TaskCounts { pending: 0, in_progress },
        context_size: 1000,
        ..step()
    };
    let want = |input_tokens, suggest_compression| {
        Some(ContextLength { input_tokens, trigger_tokens: 800, suggest_compression })
    };
    assert_eq!(decide_on(&engine, &[], &at_iter(0, 601, 0), None).context, want(601, false));
    assert_eq!(decide_on(&engine, &[], &at_iter(0, 600, 0), None).context, None);
    assert_eq!(decide_on(&engine, &[], &at_iter(1, 900, 0), None).context, None);
    let tool = Engine::new(Config {
        context: crate::config::ContextConfig {
            compression_tool_enabled: true,
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    assert_eq!(decide_on(&tool, &[], &at_iter(0, 601, 0), None).context, want(601, true));
    assert_eq!(
        decide_on(&tool, &[], &at_iter(0, 601, 1), None).context.map(|c| c.suggest_compression),
        Some(false)
    );
    let d = Decision { context: want(601, false), ..Decision::NONE };
    assert!(d.fires());
}

/// The integer compare the time rule makes agrees with Python's float
/// one at and around the longest elapsed time not due, and far out.
#[test]
fn the_time_rule_s_integer_compare_is_python_s_float_compare() {
    let python = |elapsed: i128, interval: f64| {
        let hours = time::python_total_seconds(elapsed) / 3600.0;
        0.0 <= hours && hours <= interval
    };
    for interval in
        [0.0, 1e-12, 0.1, 0.25, 1.0 / 3.0, 0.5, 1.0, 7.3, 24.0, 1e6, 2.5e9, 1e300, f64::INFINITY]
    {
        let rule = TimeRule::new(Zone::Utc, interval);
        let edge = rule.not_due_up_to;
        assert!(edge >= 0, "{interval}");
        for d in [
            0,
            1,
            edge - 1,
            edge,
            edge + 1,
            edge + 2,
            EXACT_MICROS - 1,
            EXACT_MICROS,
            EXACT_MICROS + 1,
            -1,
            i64::MIN,
            i64::MAX,
        ] {
            for then in [0i64, 1_784_687_400_000_000, -5_000_000_000_000_000] {
                let Some(now) = then.checked_add(d) else { continue };
                let elapsed = i128::from(now) - i128::from(then);
                assert_eq!(
                    rule.not_due(now, then, interval),
                    python(elapsed, interval),
                    "interval {interval}, elapsed {d}"
                );
            }
        }
        assert!(edge == EXACT_MICROS || !python(i128::from(edge) + 1, interval), "{interval}");
    }
    // The edges themselves: an hour is 3.6e9 microseconds exactly, and
    // the integer compare reaches 2**53 (about 285 years).
    assert_eq!(TimeRule::new(Zone::Utc, 1.0).not_due_up_to, 3_600_000_000);
    assert_eq!(TimeRule::new(Zone::Utc, 0.0).not_due_up_to, 0);
    assert_eq!(TimeRule::new(Zone::Utc, f64::INFINITY).not_due_up_to, 1 << 53);
    // Only the zones that keep one offset carry it.
    assert_eq!(TimeRule::new(Zone::Utc, 1.0).fixed_offset_micros, Some(0));
    assert_eq!(
        TimeRule::new(time::resolve_zone("Etc/GMT-3").unwrap(), 1.0).fixed_offset_micros,
        Some(3 * 3_600_000_000)
    );
    assert_eq!(
        TimeRule::new(time::resolve_zone("Europe/Berlin").unwrap(), 1.0).fixed_offset_micros,
        None
    );
}

/// Near years 1 and 9999 `now` goes through the calendar, as before:
/// Python cannot hold it on one side, and can on the other.
#[test]
fn a_clock_near_python_s_range_ends_is_checked_on_the_calendar() {
    let cfg = engine(3);
    let cfg = cfg.config();
    let at = |s: i64| Some(Timestamp::from_unix_seconds(s));
    for (s, in_range) in [
        (-62_135_596_800, true),
        (-62_135_596_801, false),
        (-62_135_596_800 + 86_400, true),
        (253_402_300_799, true),
        (253_402_300_800, false),
        (253_402_300_800 - 86_400, true),
    ] {
        let (time, now) = clock_reading(cfg, at(s));
        assert_eq!(now.is_some(), in_range, "{s}");
        assert_eq!(time == TimeDecision::Skipped(TimeSkipped::OutOfRange), !in_range, "{s}");
    }
    // Between a day after year 1 began and a day before 9999 ended, no
    // calendar is read: a zone with daylight saving then leaves its wall
    // clock to the time rule (`None`), while outside it the calendar gave it.
    let berlin = Config {
        injection: InjectionConfig { timezone: "Europe/Berlin", ..Default::default() },
        ..Default::default()
    };
    let berlin = Engine::new(berlin).unwrap();
    let micros = |us: i64| Some(Timestamp::from_unix_micros(us));
    let (first, end) =
        ((-62_135_596_800 + 86_400) * 1_000_000, (253_402_300_800 - 86_400) * 1_000_000);
    for (us, calendar) in
        [(first - 1, true), (first, false), (0, false), (end - 1, false), (end, true)]
    {
        let now = clock_reading(berlin.config(), micros(us)).1.unwrap();
        assert_eq!(now.wall.is_some(), calendar, "{us}");
    }
    // A zone that keeps one offset gives its wall clock without the
    // calendar: three hours ahead of UTC in Etc/GMT-3.
    let plus3 = Config {
        injection: InjectionConfig { timezone: "Etc/GMT-3", ..Default::default() },
        ..Default::default()
    };
    let plus3 = Engine::new(plus3).unwrap();
    let now = clock_reading(plus3.config(), micros(1_784_687_400_000_000)).1.unwrap();
    assert_eq!(now.wall, Some(1_784_698_200_000_000));
    // In a zone ahead of UTC, the last UTC hours of 9999 are year 10000.
    let tokyo = Config {
        injection: InjectionConfig { timezone: "Asia/Tokyo", ..Default::default() },
        ..Default::default()
    };
    let tokyo = Engine::new(tokyo).unwrap();
    assert!(clock_reading(tokyo.config(), at(253_402_300_799)).1.is_none());
    assert!(clock_reading(tokyo.config(), at(253_402_300_800 - 86_400)).1.is_some());
}

#[test]
fn python_int_float_comparison_and_total_seconds_are_exact() {
    for (i, f, gt) in [
        (5, 4.5, true),
        (4, 4.5, false),
        (-4, -4.5, true),
        (-5, -4.5, false),
        (4, 3.0, true),
        (3, 3.0, false),
        (-3, -3.0, false),
        (-2, -3.0, true),
        (i64::MAX, 9_223_372_036_854_775_808.0, false),
        (i64::MAX, 9_223_372_036_854_774_784.0, true),
        (i64::MIN, -9.3e18, true),
        (i64::MIN, -9_223_372_036_854_775_808.0, false),
        (0, f64::NAN, false),
        (1, f64::NAN, false),
        (0, f64::NEG_INFINITY, true),
        (i64::MAX, f64::INFINITY, false),
        // 2^53 + 1 is not a double: a conversion to float would say "equal".
        (9_007_199_254_740_993, 9_007_199_254_740_992.0, true),
    ] {
        assert_eq!(int_gt_float(i, f), gt, "{i} > {f}");
    }
}

#[test]
fn warnings_keep_one_bit_each_and_injection_off_keeps_only_the_configurations() {
    let mut w = Warnings::default();
    assert!(w.is_empty() && w.iter().next().is_none());
    for (n, warning) in ALL_WARNINGS.into_iter().enumerate() {
        assert!(!w.contains(warning));
        w.insert(warning);
        assert!(w.contains(warning) && !w.is_empty());
        assert_eq!(w.iter().collect::<std::vec::Vec<_>>(), ALL_WARNINGS[..=n]);
        let mut alone = Warnings::default();
        alone.insert(warning);
        assert_eq!(ALL_WARNINGS.iter().filter(|x| alone.contains(**x)).count(), 1);
    }
    let off = with_injection(|i| (i.inject_runtime_state, i.timezone) = (false, "Mars/Base"));
    let pending = Step {
        tasks: TaskCounts { pending: 1, in_progress: 0 },
        cur_iter: 0,
        input_tokens: 10_000,
        ..step()
    };
    let d = decide_on(&off, &[], &pending, at(NOW));
    assert!(!d.fires());
    assert_eq!(d.warnings.iter().collect::<std::vec::Vec<_>>(), [Warning::TimezoneFellBackToUtc]);
    for fired in [
        Decision { time: TimeDecision::Inject(Timestamp(0)), ..Decision::NONE },
        Decision { tasks: Some(TaskCounts::default()), ..Decision::NONE },
        Decision { tool_error: Some(ToolError { count: 3, result: 0 }), ..Decision::NONE },
    ] {
        assert!(fired.fires());
    }
    assert!(!Decision { time: TimeDecision::Skipped(TimeSkipped::ClockUnset), ..Decision::NONE }
        .fires());
}

#[test]
fn a_call_s_input_is_its_later_duplicate_and_a_missing_call_reads_as_empty() {
    let msg = own(&[]);
    assert_eq!(call_input(&msg, "a"), "");
    let blocks = [call("a", "T", "1"), call("b", "T", "2"), call("a", "T", "3")];
    let msg = own(&blocks);
    assert_eq!(
        (call_input(&msg, "a"), call_input(&msg, "b"), call_input(&msg, "c")),
        ("3", "2", "")
    );
    // Three failures whose calls are missing compare as "" and match.
    let engine = engine(3);
    let results = [failed("x", "T"), failed("y", "T"), failed("z", "T")];
    assert_eq!(tool_error_of(&engine, AGENT, &results), Some(ToolError { count: 3, result: 2 }));
}

#[test]
fn the_tool_error_points_at_the_newest_failed_result_and_names_its_tool() {
    let engine = engine(3);
    let blocks = [
        call("a", "Drive", r#"{"m": 1}"#),
        failed("a", "Drive"),
        call("b", "Drive", r#"{"m":1}"#),
        Block::Other,
        failed("b", "Drive"),
        call("c", "Drive", r#"{ "m": 1 }"#),
        failed("c", "Drive"),
        Block::Other,
    ];
    let found = tool_error_of(&engine, AGENT, &blocks).unwrap();
    assert_eq!(found, ToolError { count: 3, result: 6 });
    let msg = SliceMessage { role: Role::Assistant, name: AGENT, blocks: &blocks };
    assert_eq!(found.tool_name(&msg), Some("Drive"));
    // A position that is not a tool result names no tool.
    assert_eq!(ToolError { count: 3, result: 5 }.tool_name(&msg), None);
    assert_eq!(ToolError { count: 3, result: 8 }.tool_name(&msg), None);
    // The rendered hint names it.
    let conv = [msg];
    let mut out = [0u8; 1024];
    let d = engine.decide(&SliceConversation(&conv), &step(), None);
    let hint = engine.render(&d, &SliceConversation(&conv), &(), &mut out).unwrap().unwrap();
    assert!(
        hint.contains(
            "<tool-error>The last 3 calls to 'Drive' with the same arguments all failed."
        ),
        "{hint}"
    );
}

#[test]
fn the_streak_counts_only_the_same_tool_failing_with_the_same_arguments() {
    let engine = engine(3);
    // Arguments differ in the oldest failure: two identical, under the limit.
    let differ = [
        call("a", "T", "1"),
        failed("a", "T"),
        call("b", "T", "2"),
        failed("b", "T"),
        call("c", "T", "2"),
        failed("c", "T"),
    ];
    assert_eq!(tool_error_of(&engine, AGENT, &differ), None);
    let four = [
        call("a", "T", "2"),
        failed("a", "T"),
        call("b", "T", "2"),
        failed("b", "T"),
        call("c", "T", "2"),
        failed("c", "T"),
        call("d", "T", "2"),
        failed("d", "T"),
    ];
    assert_eq!(tool_error_of(&engine, AGENT, &four), Some(ToolError { count: 4, result: 7 }));
    assert_eq!(tool_error_of(&engine, AGENT, &four[2..]), Some(ToolError { count: 3, result: 5 }));
    assert_eq!(tool_error_of(&engine, AGENT, &four[4..]), None);
    assert_eq!(tool_error_of(&self::engine(4), AGENT, &four[2..]), None);
    assert_eq!(
        tool_error_of(&self::engine(4), AGENT, &four),
        Some(ToolError { count: 4, result: 7 })
    );
    // Another tool's failure in between ends the streak.
    let other = [
        call("a", "T", "2"),
        failed("a", "T"),
        call("x", "U", "2"),
        failed("x", "U"),
        call("c", "T", "2"),
        failed("c", "T"),
    ];
    assert_eq!(tool_error_of(&engine, AGENT, &other), None);
    // A success last: nothing.
    let mut ok = four;
    ok[7] = Block::ToolResult { id: "d", name: "T", state: ToolResultState::Success, output: "" };
    assert_eq!(tool_error_of(&engine, AGENT, &ok), None);
    // Someone else's message, or a user's: nothing.
    assert_eq!(tool_error_of(&engine, "other", &four), None);
    let msgs = [SliceMessage { role: Role::User, name: AGENT, blocks: &four }];
    assert_eq!(engine.decide(&SliceConversation(&msgs), &step(), None).tool_error, None);
}

/// `_get_repeated_tool_error` as the reference writes it, with a map
/// from id to input: the model the one-pass lookup must match.
fn tool_error_model(blocks: &[Block<'_>], limit: u64) -> Option<ToolError> {
    let results: std::vec::Vec<_> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| match *b {
            Block::ToolResult { id, name, state, .. } => Some((i, id, name, state)),
            _ => None,
        })
        .collect();
    let &(result, _, tool_name, state) = results.last()?;
    if state != ToolResultState::Error {
        return None;
    }
    let streak: std::vec::Vec<&str> = results
        .iter()
        .rev()
        .take_while(|r| r.3 == ToolResultState::Error && r.2 == tool_name)
        .map(|r| r.1)
        .collect();
    if (streak.len() as u64) < limit {
        return None;
    }
    let mut inputs = std::collections::HashMap::new();
    for b in blocks {
        if let Block::ToolCall { id, input, .. } = *b {
            inputs.insert(id, input);
        }
    }
    let keys: std::vec::Vec<_> = streak
        .iter()
        .map(|id| crate::args::argument_key(inputs.get(id).copied().unwrap_or("")))
        .collect();
    let count = keys.iter().take_while(|&&k| k == keys[0]).count() as u64;
    (count >= limit).then_some(ToolError { count, result })
}

const IDS: [&str; 24] = [
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s",
    "t", "u", "v", "w", "x",
];

#[test]
fn the_one_pass_lookup_reads_the_calls_the_reference_reads_in_every_order() {
    let engine = engine(3);
    let interleaved: std::vec::Vec<_> =
        IDS.iter().flat_map(|&id| [call(id, "T", "[1]"), failed(id, "T")]).collect();
    assert_eq!(
        tool_error_of(&engine, AGENT, &interleaved),
        Some(ToolError { count: 24, result: 47 })
    );
    // All calls first (a parallel batch), or in the results' reverse
    // order: 23 calls passed before the first is found.
    let batched: std::vec::Vec<_> = IDS
        .iter()
        .map(|&id| call(id, "T", " [1]"))
        .chain(IDS.iter().map(|&id| failed(id, "T")))
        .collect();
    assert_eq!(tool_error_of(&engine, AGENT, &batched), Some(ToolError { count: 24, result: 47 }));
    let reversed: std::vec::Vec<_> = IDS
        .iter()
        .map(|&id| call(id, "T", "[1]"))
        .chain(IDS.iter().rev().map(|&id| failed(id, "T")))
        .collect();
    assert_eq!(tool_error_of(&engine, AGENT, &reversed), Some(ToolError { count: 24, result: 47 }));
    // A later call with a passed id changes that id's arguments: the
    // reference reads the later one.
    let mut later = interleaved.clone();
    later.push(call("c", "T", "[2]"));
    assert_eq!(tool_error_of(&engine, AGENT, &later), Some(ToolError { count: 21, result: 47 }));
    // A repeated result id: its call was found already and repeats, while
    // an older call of the same id (which the walk finds next) does not.
    let repeated = [
        call("a", "T", "[2]"),
        call("a", "T", "1"),
        failed("a", "T"),
        call("b", "T", "1"),
        failed("b", "T"),
        failed("a", "T"),
    ];
    assert_eq!(tool_error_of(&engine, AGENT, &repeated), Some(ToolError { count: 3, result: 5 }));
    // Missing calls read as "": the same for each.
    let missing = [failed("a", "T"), failed("b", "T"), call("z", "T", ""), failed("c", "T")];
    assert_eq!(tool_error_of(&engine, AGENT, &missing), Some(ToolError { count: 3, result: 3 }));
    for blocks in [&interleaved[..], &batched, &reversed, &later, &repeated, &missing] {
        assert_eq!(tool_error_of(&engine, AGENT, blocks), tool_error_model(blocks, 3));
    }
}

mod scan_model {
    use super::*;
    use crate::conversation::Counted;
    use proptest::prelude::*;

    /// The scan as the reference reads it, block by block, newest
    /// message first, and the messages it reads (`Conversation::newest`
    /// calls): up to the newest time hint's message once the tasks are
    /// known, else past the oldest (the read that finds no message).
    fn model(
        cfg: &ValidConfig<'_>,
        msgs: &[SliceMessage<'_>],
        step: &Step<'_>,
    ) -> ((Option<(usize, usize)>, bool), usize) {
        let mut aware = !step.tasks.has_uncompleted();
        let mut time = None;
        for (index, msg) in msgs.iter().rev().enumerate() {
            if scanned(cfg, msg, step.agent_name) {
                for (b, block) in msg.blocks.iter().enumerate() {
                    let m = marks(cfg, *block);
                    aware |= m.tasks;
                    if m.time && time.is_none_or(|(t, _)| t == index) {
                        time = Some((index, b));
                    }
                }
            }
            if aware && time.is_some() {
                return ((time, aware), index + 1);
            }
        }
        ((time, aware), msgs.len() + 1)
    }

    /// Our source with its last byte changed: the same length.
    const NEAR_SOURCE: &str = "{\"label\": \"System\", \"sublabel\": \"Runtime State\"]";

    fn block() -> impl Strategy<Value = Block<'static>> {
        let text = prop_oneof![
            Just("<current-time>2026-07-22T02:20:00</current-time>"),
            Just("<tasks>1 pending</tasks>"),
            Just("no tags"),
            Just("<tasks><current-time>2026-07-22T02:20:00</current-time>"),
        ];
        let framed_text = prop_oneof![
            Just("<current-time>2026-07-22T02:20:00</current-time>\n<tasks>1</tasks>"),
            Just("<tasks>1</tasks>"),
            Just("<context-length>5</context-length>"),
        ]
        .prop_map(framed);
        let source = prop_oneof![4 => Just(Some(SOURCE)), 1 => Just(Some(NEAR_SOURCE)), 1 => Just(Some("permission")), 1 => Just(None)];
        let name =
            prop_oneof![Just("TaskList"), Just("TaskLisx"), Just("Bash"), Just("TaskCreate")];
        prop_oneof![
            (source, prop_oneof![text, framed_text]).prop_map(|(source, text)| Block::Hint {
                source,
                text: HintText::Single(text),
                created_at: None
            }),
            name.prop_map(|name| Block::ToolCall { id: "c", name, input: "{}" }),
            Just(Block::ToolResult {
                id: "c",
                name: "Bash",
                state: ToolResultState::Success,
                output: ""
            }),
            Just(Block::Other),
        ]
    }

    fn message() -> impl Strategy<Value = (Role, &'static str, std::vec::Vec<Block<'static>>)> {
        let role = prop_oneof![3 => Just(Role::Assistant), 1 => Just(Role::User)];
        let name = prop_oneof![3 => Just(AGENT), 1 => Just("other"), 1 => Just("rovex")];
        (role, name, prop::collection::vec(block(), 0..5))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        #[test]
        fn the_scan_finds_and_reads_what_a_block_by_block_scan_does(
            msgs in prop::collection::vec(message(), 0..12),
            strict: bool,
            pending in 0u64..2,
        ) {
            let engine = with_injection(|i| i.strict = strict);
            let cfg = engine.config();
            let step = Step { tasks: TaskCounts { pending, in_progress: 0 }, ..step() };
            let msgs: std::vec::Vec<_> = msgs.iter().map(|(role, name, blocks)| SliceMessage { role: *role, name, blocks }).collect();
            let conv = SliceConversation(&msgs);
            let counted = Counted::new(&conv);
            let found = scan_marks(cfg, &counted, &step);
            prop_assert_eq!((found, counted.reads()), model(cfg, &msgs, &step));
        }
    }

    #[test]
    fn a_hint_of_ours_tells_the_tags_it_holds_whatever_its_template_holds() {
        let templates = [
            "<r>{runtime_state}</r>",
            "x<tasks>{runtime_state}<current-time>",
            "<cur{runtime_state}",
            "{runtime_state}",
            "a{runtime_state}b{runtime_state}c",
        ];
        let bodies =
            ["", "<tasks>1</tasks>", "rent-time>", "<current-time>x</current-time>", "tasks>"];
        for template in templates {
            let engine = with_injection(|i| i.template = template);
            let cfg = engine.config();
            for body in bodies {
                // Rendered as the template renders it, and other texts.
                let rendered = std::string::String::from(template).replace("{runtime_state}", body);
                for text in [rendered.as_str(), body, "<tasks>", "<r><current-time></r>"] {
                    let mut span = None;
                    let m = hint_marks(cfg, HintText::Single(text), &mut span);
                    assert_eq!(
                        (m.time, m.tasks),
                        (text.contains(TIME_TAG), text.contains(TASKS_TAG)),
                        "{template:?} {text:?}"
                    );
                    // And again with the span the first made.
                    let m = hint_marks(cfg, HintText::Single(text), &mut span);
                    assert_eq!(
                        (m.time, m.tasks),
                        (text.contains(TIME_TAG), text.contains(TASKS_TAG)),
                        "{template:?} {text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_block_that_may_not_mark_marks_nothing() {
        let names = ["TaskList", "TaskLisx", "Bash", "", "TaskCreate"];
        let sources = [Some(SOURCE), Some(NEAR_SOURCE), Some("permission"), Some(""), None];
        let texts = [
            framed("<current-time>x</current-time>\n<tasks>1</tasks>"),
            "<tasks>",
            "<current-time>",
            "",
        ];
        assert_eq!(NEAR_SOURCE.len(), SOURCE.len());
        for strict in [false, true] {
            let engine = with_injection(|i| i.strict = strict);
            let cfg = engine.config();
            let calls = names.map(|name| Block::ToolCall { id: "c", name, input: "{}" });
            let hints = sources.iter().flat_map(|&source| {
                texts.map(|t| Block::Hint { source, text: HintText::Single(t), created_at: None })
            });
            let result = Block::ToolResult {
                id: "c",
                name: "TaskList",
                state: ToolResultState::Success,
                output: "",
            };
            for block in calls.into_iter().chain(hints).chain([result, Block::Other]) {
                let m = marks(cfg, block);
                assert!(may_mark(cfg, block) || !(m.time || m.tasks), "{block:?}");
            }
            // Some may mark and mark nothing: a near source, a name's bit.
            let near = Block::Hint {
                source: Some(NEAR_SOURCE),
                text: HintText::Single("<tasks>"),
                created_at: None,
            };
            let lisx = Block::ToolCall { id: "c", name: "TaskLisx", input: "{}" };
            for block in [near, lisx] {
                assert!(may_mark(cfg, block) && !marks(cfg, block).tasks, "{block:?}");
            }
            assert!(!may_mark(
                cfg,
                Block::Hint {
                    source: Some("permission"),
                    text: HintText::Single("<tasks>"),
                    created_at: None
                }
            ));
            assert!(!may_mark(
                cfg,
                Block::Hint { source: None, text: HintText::Single("<tasks>"), created_at: None }
            ));
            assert!(!may_mark(cfg, result) && !may_mark(cfg, Block::Other));
            assert!(may_mark(
                cfg,
                Block::Hint { source: Some(SOURCE), text: HintText::Single(""), created_at: None }
            ));
            assert!(may_mark(cfg, Block::ToolCall { id: "c", name: "TaskList", input: "{}" }));
        }
    }
}

mod lookup_model {
    use super::*;
    use proptest::prelude::*;

    fn block() -> impl Strategy<Value = Block<'static>> {
        // Few ids, tools and inputs, so duplicates and repeats are common;
        // 24 ids so that a walk can pass more than `PASSED_CALLS` calls.
        let id = prop_oneof![4 => 0..4usize, 1 => 0..IDS.len()].prop_map(|i| IDS[i]);
        let name = prop_oneof![4 => Just("T"), 1 => Just("U")];
        let input = prop_oneof![Just("1"), Just(" 1"), Just("2"), Just(""), Just("{")];
        let state =
            prop_oneof![6 => Just(ToolResultState::Error), 1 => Just(ToolResultState::Success)];
        prop_oneof![
            (id.clone(), name.clone(), input).prop_map(|(id, name, input)| Block::ToolCall {
                id,
                name,
                input
            }),
            (id, name, state).prop_map(|(id, name, state)| Block::ToolResult {
                id,
                name,
                state,
                output: ""
            }),
        ]
    }

    /// The tracker's verdict after observing `blocks` as the agent's one
    /// message, appended `chunks` blocks at a time (cycling), checked
    /// against the reference's map after every append; a user message
    /// before it is evicted halfway.
    fn tracked_at_every_length(
        blocks: &[Block<'_>],
        chunks: &[usize],
        limit: u64,
    ) -> Result<(), TestCaseError> {
        let engine = engine(limit);
        let user = SliceMessage { role: Role::User, name: "user", blocks: &[] };
        let mut tracker = Tracker::new(&engine, AGENT);
        tracker.push_message(&user);
        let agent =
            |len| SliceMessage { role: Role::Assistant, name: AGENT, blocks: &blocks[..len] };
        tracker.push_message(&agent(0));
        let mut len = 0;
        for &chunk in chunks.iter().cycle() {
            let first = len;
            len = (len + chunk).min(blocks.len());
            tracker.append_blocks(&agent(len), first);
            if first < blocks.len() / 2 && len >= blocks.len() / 2 {
                tracker.evict_oldest(1);
            }
            let msgs = [user, agent(len)];
            let conv = SliceConversation(&msgs[usize::from(tracker.message_count() == 1)..]);
            let tracked = tracker.decide(&conv, &input(&step()), None).tool_error;
            prop_assert_eq!(tracked, tool_error_model(&blocks[..len], limit), "at {}", len);
            if len == blocks.len() {
                break;
            }
        }
        Ok(())
    }

    /// A long streak, in pieces that break it or not: calls and results one
    /// after another, a batch answered in order or in reverse, a call
    /// re-using an id with other arguments, a success, another tool.
    fn streak() -> impl Strategy<Value = std::vec::Vec<Block<'static>>> {
        let input = prop_oneof![4 => Just("1"), 1 => Just("2")];
        let piece = prop_oneof![
            (0..3usize, 1..30usize, input.clone())
                .prop_map(|(layout, n, input)| (layout, n, input)),
            (3..6usize, 0..IDS.len(), input).prop_map(|(kind, id, input)| (kind, id, input)),
        ];
        prop::collection::vec(piece, 1..8).prop_map(|pieces| {
            let mut blocks = std::vec::Vec::new();
            let mut next = 0;
            for (kind, n, input) in pieces {
                // Fresh ids for each piece but a few, so that some repeat.
                let ids: std::vec::Vec<&'static str> =
                    (0..n).map(|i| IDS[(next + i) % IDS.len()]).collect();
                match kind {
                    0 => blocks
                        .extend(ids.iter().flat_map(|&id| [call(id, "T", input), failed(id, "T")])),
                    1 | 2 => {
                        blocks.extend(ids.iter().map(|&id| call(id, "T", input)));
                        if kind == 1 {
                            blocks.extend(ids.iter().map(|&id| failed(id, "T")));
                        } else {
                            blocks.extend(ids.iter().rev().map(|&id| failed(id, "T")));
                        }
                    }
                    3 => blocks.push(call(IDS[n], "T", input)),
                    4 => blocks.push(Block::ToolResult {
                        id: IDS[n],
                        name: "T",
                        state: ToolResultState::Success,
                        output: "",
                    }),
                    _ => blocks.extend([call(IDS[n], "U", input), failed(IDS[n], "U")]),
                }
                next += n.max(1);
            }
            blocks
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// Random blocks over few ids (duplicates, calls after their
        /// results), appended a few at a time.
        #[test]
        fn the_streak_kept_append_by_append_matches_the_reference_s_map(
            blocks in prop::collection::vec(block(), 0..80),
            chunks in prop::collection::vec(1usize..4, 1..8),
            limit in 3u64..6,
        ) {
            tracked_at_every_length(&blocks, &chunks, limit)?;
        }

        /// Long streaks and what breaks them, appended one block at a time.
        #[test]
        fn a_long_streak_kept_block_by_block_matches_the_reference_s_map(
            blocks in streak(),
            limit in 3u64..6,
        ) {
            tracked_at_every_length(&blocks, &[1], limit)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn the_one_pass_lookup_matches_the_reference_s_map(blocks in prop::collection::vec(block(), 0..80), limit in 3u64..6) {
            let msgs = [SliceMessage { role: Role::Assistant, name: AGENT, blocks: &blocks }];
            let found = engine(limit).decide(&SliceConversation(&msgs), &step(), None).tool_error;
            prop_assert_eq!(found, tool_error_model(&blocks, limit));
        }
    }
}

/// An engine watching `temperature` with `w`.
fn watching(strict: bool, w: crate::config::watch::Watch) -> Engine<'static> {
    let list: &'static [(&'static str, crate::config::watch::Watch)] =
        std::boxed::Box::leak(std::boxed::Box::new([("temperature", w)]));
    with_injection(|i| (i.strict, i.watch) = (strict, crate::config::watch::WatchList::Slice(list)))
}

fn change(c: i64) -> crate::config::watch::Watch {
    crate::config::watch::Watch { change: Decimal::new(c, 0), ..Default::default() }
}

/// Whether the watch fires on `msgs` for a `temperature` reading (none:
/// no such live field), decided by the scan and by a tracker, which
/// must agree. No clock: only the watch can fire.
fn watch_fires(engine: &Engine<'_>, msgs: &[SliceMessage<'_>], reading: Option<&str>) -> bool {
    let conv = SliceConversation(msgs);
    let fields = [("robot", "R2"), ("temperature", reading.unwrap_or(""))];
    let live =
        crate::config::ExtraFields::Slice(if reading.is_some() { &fields } else { &fields[..1] });
    let scanned = engine.decide_with_readings(&conv, &step(), None, &live);
    let tracked = Tracker::from_conversation(engine, AGENT, &conv).decide_with_readings(
        &conv,
        &input(&step()),
        None,
        &live,
    );
    assert_eq!(scanned, tracked);
    assert_eq!(scanned.fires(), !scanned.watch.is_empty());
    // Without readings no watch fires.
    assert!(engine.decide(&conv, &step(), None).watch.is_empty());
    scanned.watch.contains(0)
}

/// With no watch, or no live field to read, the watch rule does not run:
/// what was told is not even looked up.
#[test]
fn no_watch_or_no_field_skips_the_watch_rule() {
    let watching = watching(false, change(2));
    let fields = crate::config::ExtraFields::Slice(&[("temperature", "30")]);
    for (engine, live, fires) in [
        (&watching, &fields as &dyn LiveFields, true),
        (&watching, &() as &dyn LiveFields, false),
        (&with_injection(|_| {}), &fields as &dyn LiveFields, false),
    ] {
        let mut asked = false;
        let told = || {
            asked = true;
            [None; MAX_WATCHES]
        };
        let d = decide_with(engine.config(), &step(), None, live, |_| false, || None, told);
        assert_eq!((d.watch.contains(0), asked), (fires, fires));
    }
}

#[test]
fn the_told_value_is_the_newest_hint_of_ours_holding_the_tag() {
    let engine = watching(false, change(2));
    let told20 = [hint("<temperature>20 °C</temperature>")];
    let told25 = [hint("x <temperature> 25.0</temperature>")];
    // Nothing told: a reading fires.
    assert!(watch_fires(&engine, &[], Some("20")));
    assert!(!watch_fires(&engine, &[own(&told20)], Some("21.99 °C")));
    assert!(watch_fires(&engine, &[own(&told20)], Some("22 °C")));
    // The newest message's hint counts, and in a message the last block.
    assert!(!watch_fires(&engine, &[own(&told20), own(&told25)], Some("26")));
    assert!(watch_fires(&engine, &[own(&told25), own(&told20)], Some("26")));
    let both = [told20[0], told25[0]];
    assert!(!watch_fires(&engine, &[own(&both)], Some("26")));
    // A hint of ours without the tag does not hide an older one.
    let untagged = [hint("<current-time>x</current-time>")];
    assert!(!watch_fires(&engine, &[own(&told20), own(&untagged)], Some("21")));
    // Split across parts, as a list of text blocks.
    let parts = [Block::Hint {
        source: Some(SOURCE),
        text: HintText::Parts(&["<tempera", "ture>2", "0</temperature>"]),
        created_at: None,
    }];
    assert!(!watch_fires(&engine, &[own(&parts)], Some("21")));
}

#[test]
fn a_tag_without_a_number_or_a_capture_tells_nothing() {
    let engine = watching(false, change(2));
    let told20 = [hint("<temperature>20</temperature>")];
    for newest in [
        "<temperature>unavailable</temperature>",
        "<temperature>20\n</temperature>",
        "<temperature>20",
    ] {
        let newer = [hint(newest)];
        // The newest hint holding the tag hides the older 20: nothing told.
        assert!(watch_fires(&engine, &[own(&told20), own(&newer)], Some("20")), "{newest}");
    }
}

#[test]
fn the_told_value_is_read_from_the_blocks_the_time_rule_reads() {
    let engine = watching(false, change(2));
    let told = [hint("<temperature>20</temperature>")];
    let foreign = [Block::Hint {
        source: Some("other"),
        text: HintText::Single("<temperature>20</temperature>"),
        created_at: None,
    }];
    assert!(watch_fires(&engine, &[own(&foreign)], Some("20")));
    let user = [SliceMessage { role: Role::User, name: AGENT, blocks: &told }];
    assert!(watch_fires(&engine, &user, Some("20")));
    let other = [SliceMessage { role: Role::Assistant, name: "other", blocks: &told }];
    assert!(!watch_fires(&engine, &other, Some("20")));
    // Strict mode: only this agent's own hints, and only where envaware
    // writes a field (first in the state, or on a line of its own).
    let strict = watching(true, change(2));
    let first = [hint(framed("<temperature>20</temperature>"))];
    let own_line = [hint(framed("<tasks>t</tasks>\n<temperature>20</temperature>"))];
    let inline = [hint(framed("<tasks>t <temperature>20</temperature></tasks>"))];
    assert!(!watch_fires(&strict, &[own(&first)], Some("20")));
    assert!(!watch_fires(&strict, &[own(&own_line)], Some("20")));
    assert!(watch_fires(&strict, &[own(&inline)], Some("20")));
    let other = [SliceMessage { role: Role::Assistant, name: "other", blocks: &first }];
    assert!(watch_fires(&strict, &other, Some("20")));
}

/// A watch on a field the live source does not provide (a typo) cannot
/// fire: every decision says so, the scan's and the tracker's, and a
/// present but unavailable field is not that mistake.
#[test]
fn a_watch_on_a_field_no_live_source_provides_is_a_warning() {
    let engine = watching(false, change(2));
    let conv = SliceConversation(&[]);
    let warned = |live: &dyn LiveFields| {
        let scanned = engine.decide_with_readings(&conv, &step(), None, live).warnings;
        let tracked = Tracker::from_conversation(&engine, AGENT, &conv)
            .decide_with_readings(&conv, &input(&step()), None, live)
            .warnings;
        assert_eq!(scanned, tracked);
        scanned.contains(Warning::WatchedFieldNotLive)
    };
    assert!(warned(&crate::config::ExtraFields::Slice(&[("temprature", "30")])));
    assert!(warned(&()));
    assert!(!warned(&crate::config::ExtraFields::Slice(&[("temperature", "30")])));
    assert!(!warned(&crate::config::ExtraFields::Slice(&[("temperature", live::UNAVAILABLE)])));
    // No watch: no warning, whatever the fields.
    let plain = with_injection(|_| {});
    let d = plain.decide_with_readings(&conv, &step(), None, &());
    assert!(!d.warnings.contains(Warning::WatchedFieldNotLive));
}

#[test]
fn an_unavailable_or_missing_reading_never_fires() {
    let engine = watching(false, change(2));
    for reading in [Some(live::UNAVAILABLE), Some("n/a"), None] {
        assert!(!watch_fires(&engine, &[], reading), "{reading:?}");
    }
}

#[test]
fn above_and_below_fire_on_crossing_with_hysteresis_through_the_decision() {
    let d = |t| Decimal::parse(t);
    let above = watching(
        false,
        crate::config::watch::Watch {
            above: d("28"),
            hysteresis: d("0.5").unwrap(),
            ..Default::default()
        },
    );
    let below = watching(
        false,
        crate::config::watch::Watch {
            below: d("10"),
            hysteresis: d("0.5").unwrap(),
            ..Default::default()
        },
    );
    let told = |t: &'static str| {
        [hint(std::boxed::Box::leak(
            std::format!("<temperature>{t}</temperature>").into_boxed_str(),
        ))]
    };
    for (engine, t, v, fires) in [
        (&above, "28", "28.5", true),
        (&above, "27", "28", false),
        (&above, "29", "27.5", true),
        (&above, "29", "27.6", false),
        (&below, "10", "9.5", true),
        (&below, "11", "10", false),
        (&below, "9", "10.5", true),
        (&below, "9", "10.4", false),
    ] {
        let blocks = told(t);
        assert_eq!(watch_fires(engine, &[own(&blocks)], Some(v)), fires, "{t} -> {v}");
    }
}

#[test]
fn a_fired_watch_renders_the_usual_hint_with_the_event_flag() {
    let engine = watching(false, change(2));
    let told = [hint("<temperature>20</temperature>")];
    let conv = SliceConversation(&[own(&told)]);
    let mut live = crate::config::ExtraFields::Slice(&[("temperature", "23 °C")]);
    let mut out = [0u8; 512];
    let mut clock = crate::clock::FixedClock::at(Timestamp::from_unix_seconds(NOW));
    let outcome = engine.step(&conv, &step(), &mut clock, &mut live, &mut out).unwrap();
    assert!(outcome.decision.watch.contains(0) && outcome.event);
    // The time fired too (no recorded time); the live field is written as with any hint.
    let hint = outcome.hint.unwrap();
    assert!(
        hint.contains("<current-time>")
            && hint.ends_with("<temperature>23 °C</temperature>\n</system-reminder>"),
        "{hint}"
    );
    // Only the watch: no time, since the clock is unset.
    let d = engine.decide_with_readings(&conv, &step(), None, &live);
    assert_eq!(
        d,
        Decision {
            time: TimeDecision::Skipped(TimeSkipped::ClockUnset),
            watch: d.watch,
            ..Decision::NONE
        }
    );
    let hint = engine.render(&d, &conv, &live, &mut out).unwrap().unwrap();
    assert_eq!(hint, framed("<temperature>23 °C</temperature>"));
    assert_eq!(engine.told(&conv, AGENT)[0], Decimal::parse("20"));
    assert_eq!(engine.told(&SliceConversation(&[]), AGENT), [None; MAX_WATCHES]);
}
