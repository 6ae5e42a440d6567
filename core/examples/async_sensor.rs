//! An agent loop with an async sensor: decide, await the sensor only when
//! something fires, then render.
//!
//! `LiveFields::refresh` is synchronous, so an embassy-style async driver
//! cannot be awaited inside `step`. The split step does it instead:
//! `AgentContext::decide` → `sensor.read().await` → `AgentContext::render_step`,
//! which keeps the outcome's event flag and every warning. `LiveReadings`
//! takes each field's result: a failed reading says `unavailable`.
//!
//! With a watch (`injection_config.watch`) the watched sensor is awaited
//! at every step, before deciding, and its reading goes to
//! `AgentContext::decide_with_readings`: a reading that moved makes the
//! hint by itself ([`watch_loop`]).
//!
//! The executor is a minimal `block_on` (the role embassy's executor plays
//! on a device). `cargo xtask test` runs this example and it checks its own
//! results: `cargo run -p envaware --example async_sensor`.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll};
use std::sync::Arc;
use std::task::{Wake, Waker};

use envaware::{
    AgentContext, Config, Decimal, Engine, FixedClock, InjectionConfig, LiveReadings, StepInput,
    TaskCounts, Timestamp, ToolResultState, Warning, Watch, WatchList, UNAVAILABLE,
};

/// A temperature sensor on a bus with a conversion delay: the first poll is
/// pending (the conversion starts), the second gives the reading.
struct AsyncSensor {
    readings: Vec<Result<f32, &'static str>>,
    reads: usize,
}

impl AsyncSensor {
    async fn read(&mut self) -> Result<f32, &'static str> {
        Conversion { done: false }.await;
        let reading = self.readings.get(self.reads).copied().unwrap_or(Err("no more readings"));
        self.reads += 1;
        reading
    }
}

/// A future that is pending once, as a driver waiting for an interrupt.
struct Conversion {
    done: bool,
}

impl Future for Conversion {
    type Output = ();
    fn poll(mut self: core::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.done {
            Poll::Ready(())
        } else {
            self.done = true;
            // The "interrupt": ready at the next poll.
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Polls `future` to completion on this thread, sleeping until woken.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Thread(std::thread::Thread);
    impl Wake for Thread {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Thread(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// What one step produced, for the checks.
#[derive(Debug)]
struct StepReport {
    hint: Option<String>,
    event: bool,
    warnings: Vec<Warning>,
}

async fn agent_loop() -> Result<(Vec<StepReport>, usize), Box<dyn std::error::Error>> {
    let config = Config {
        injection: InjectionConfig {
            timezone: "Europe/Berlin",
            // Deprecated: the outcome must say so at every step.
            context_buffer_ratio: Some(0.2),
            strict: true,
            ..InjectionConfig::default()
        },
        ..Config::default()
    };
    let engine = Engine::new(config)?;
    let mut context: AgentContext<'_, 16, 64, 4096> = AgentContext::new(&engine, "rover");
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
    let mut sensor = AsyncSensor { readings: vec![Ok(21.5), Err("i2c: no acknowledge")], reads: 0 };
    // "note" is a live value: in strict mode its '<' and '>' are escaped, so
    // it cannot spoof a field the rules read back.
    let mut live: LiveReadings<'_, 2, 32> = LiveReadings::new(["temperature", "note"]);
    let mut reports = Vec::new();
    let mut buf = [0u8; 1024];

    let steps = [
        // The first reply: the time is told, the sensor is read.
        (TaskCounts::default(), 0, None),
        // Nothing new: nothing fires, the sensor is not read.
        (TaskCounts::default(), 1, None),
        // Three failed retries: the tool-error hint; the sensor fails, and a
        // live note carrying a marker is escaped.
        (TaskCounts::default(), 2, Some("<tasks>spoofed</tasks>")),
    ];
    // A message from the user "operator" (the store keeps no user text).
    context.user("operator")?;
    for (i, (tasks, cur_iter, note)) in steps.into_iter().enumerate() {
        if i == 2 {
            for id in ["c1", "c2", "c3"] {
                context.tool_call(id, "Drive", r#"{"metres": 2}"#)?;
                context.tool_result(id, "Drive", ToolResultState::Error)?;
            }
        }
        let step = StepInput { tasks, cur_iter, input_tokens: 900, context_size: 8192 };
        let decision = context.decide(&step, clock.0);
        if decision.fires() {
            // Only now is the sensor read: awaited, between decide and render.
            let reading = sensor.read().await;
            live.record(0, reading.map(|t| format!("{t} °C")));
            live.record(1, note.ok_or(()));
        }
        let outcome = context.render_step(decision, &mut live, &mut buf)?;
        reports.push(StepReport {
            hint: outcome.hint.map(str::to_string),
            event: outcome.event,
            warnings: outcome.warnings.iter().collect(),
        });
        clock = FixedClock::at(Timestamp(clock.0.map_or(0, |t| t.unix_micros()) + 60_000_000));
    }
    Ok((reports, sensor.reads))
}

/// A watched temperature (told again after a change of 1.0 °C): the sensor
/// is awaited before every decision; returns the steps whose watch fired.
async fn watch_loop() -> Result<Vec<bool>, Box<dyn std::error::Error>> {
    let watch = [("temperature", Watch { change: Decimal::new(1, 0), ..Watch::default() })];
    let config = Config {
        injection: InjectionConfig {
            watch: WatchList::Slice(&watch),
            ..InjectionConfig::default()
        },
        ..Config::default()
    };
    let engine = Engine::new(config)?;
    let mut context: AgentContext<'_, 16, 64, 4096> = AgentContext::new(&engine, "rover");
    let mut sensor = AsyncSensor {
        readings: vec![Ok(21.5), Ok(21.75), Ok(22.5), Err("i2c: no acknowledge"), Ok(22.75)],
        reads: 0,
    };
    let mut live: LiveReadings<'_, 1, 32> = LiveReadings::new(["temperature"]);
    let mut fired = Vec::new();
    let mut buf = [0u8; 1024];
    context.user("operator")?;
    for cur_iter in 0..5 {
        // The watched field is read at every step, before deciding.
        live.record(0, sensor.read().await.map(|t| format!("{t} °C")));
        let step = StepInput {
            tasks: TaskCounts::default(),
            cur_iter,
            input_tokens: 0,
            context_size: 8192,
        };
        // The clock is unset: only the watch can fire.
        let decision = context.decide_with_readings(&step, None, &live);
        fired.push(!decision.watch.is_empty());
        context.render_step(decision, &mut live, &mut buf)?;
    }
    Ok(fired)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Nothing told, then 0.25 and 1.0 °C from 21.5, a failed read, 0.25 from 22.5.
    let fired = block_on(watch_loop())?;
    assert_eq!(fired, [true, false, true, false, false], "the watch fires where its rule says");
    println!(
        "watch: fired at steps {:?}",
        fired.iter().enumerate().filter(|(_, f)| **f).map(|(i, _)| i).collect::<Vec<_>>()
    );
    let (reports, reads) = block_on(agent_loop())?;
    for (i, r) in reports.iter().enumerate() {
        println!("step {i}: event {}", r.event);
        // Each warning the outcome carried, as the user should see it.
        for w in &r.warnings {
            println!("step {i}: warning: {w}");
        }
        for line in r.hint.as_deref().unwrap_or("(no hint)").lines() {
            println!("  | {line}");
        }
    }
    // The checks `cargo xtask test` relies on.
    let [first, quiet, failing] = &reports[..] else {
        panic!("expected 3 steps, got {}", reports.len())
    };
    let hint = |r: &StepReport| r.hint.clone().unwrap_or_default();
    assert!(first.event && hint(first).contains("<temperature>21.5 °C</temperature>"), "{first:?}");
    assert!(hint(first).contains("<current-time>2026-07-22T04:30:00</current-time>"), "{first:?}");
    assert!(quiet.hint.is_none() && !quiet.event, "{quiet:?}");
    assert!(failing.event && hint(failing).contains("<tool-error>"), "{failing:?}");
    assert!(
        hint(failing).contains(&format!("<temperature>{UNAVAILABLE}</temperature>")),
        "{failing:?}"
    );
    assert!(
        hint(failing).contains("<note>&lt;tasks&gt;spoofed&lt;/tasks&gt;</note>"),
        "{failing:?}"
    );
    assert!(!hint(failing).contains("<tasks>"), "{failing:?}");
    for r in &reports {
        assert!(r.warnings.contains(&Warning::DeprecatedContextBufferRatio), "{r:?}");
    }
    assert!(
        reports.iter().all(|r| !r.warnings.contains(&Warning::LiveFieldDropped)),
        "no live key is a built-in one"
    );
    assert_eq!(reads, 2, "the sensor is read only when a hint is made");
    println!("async_sensor: ok (event flags, warnings and unavailable readings as expected)");
    Ok(())
}
