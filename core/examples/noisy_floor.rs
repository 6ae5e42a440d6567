//! A noisy sensor under a floor: the reading alternates across the watch's
//! `change` at every step (22.0, 23.5, 22.0, …, one step a minute, 100
//! steps). With `change` alone every step fires a hint; with
//! `min_interval` the changes sooner than the floor are held back
//! (*throttled*) and told at the first step after it.
//!
//! The example prints, for each configuration, the hints appended, the
//! steps throttled and the hint bytes the context took, and checks that the
//! floor cut them. `cargo run -p envaware --example noisy_floor`;
//! `cargo xtask test` runs it.

use envaware::{
    AgentContext, Config, Decimal, Engine, ExtraFields, FixedClock, InjectionConfig, Interval,
    StepInput, TaskCounts, Timestamp, Watch, WatchList,
};

const STEPS: usize = 100;

/// What a run appended: hints, steps throttled, bytes of hint text.
struct Run {
    hints: usize,
    throttled: usize,
    bytes: usize,
}

fn run(min_interval: Option<Interval>) -> Result<Run, Box<dyn std::error::Error>> {
    let watch =
        [("temperature", Watch { change: Decimal::new(1, 0), min_interval, ..Watch::default() })];
    let config = Config {
        injection: InjectionConfig {
            watch: WatchList::Slice(&watch),
            ..InjectionConfig::default()
        },
        ..Config::default()
    };
    let engine = Engine::new(config)?;
    // Room for every hint: nothing evicted, so every byte stays counted.
    let mut context: AgentContext<'_, 8, 128, 65536> = AgentContext::new(&engine, "greenhouse");
    context.user("operator")?;
    let mut hint = [0u8; 1024];
    let mut result = Run { hints: 0, throttled: 0, bytes: 0 };
    let mut told_at: Option<usize> = None;
    for step in 0..STEPS {
        let reading = if step % 2 == 0 { "22.0 °C" } else { "23.5 °C" };
        let fields = [("temperature", reading)];
        let mut sensor = ExtraFields::Slice(&fields);
        let mut clock =
            FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400 + 60 * step as i64));
        let input = StepInput {
            tasks: TaskCounts::default(),
            cur_iter: 1, // mid-reply: the context-length rule stays quiet
            input_tokens: 900,
            context_size: 8192,
        };
        let outcome = context.step(&input, &mut clock, &mut sensor, &mut hint)?;
        let watch = outcome.decision.watch;
        // Measured from the telling: the floor holds a change back before
        // 600 s, never after.
        let age = told_at.map(|t| 60 * (step - t));
        if let (Some(floor), Some(age)) = (min_interval, age) {
            let floor = floor.micros() as usize / 1_000_000;
            assert!(!watch.throttled(0) || age < floor, "step {step}: held back at {age} s");
            assert!(!watch.contains(0) || age >= floor, "step {step}: told at {age} s");
        }
        if let Some(text) = outcome.hint {
            result.hints += 1;
            result.bytes += text.len();
            told_at = Some(step);
        }
        result.throttled += usize::from(watch.throttled(0));
    }
    Ok(result)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("| watch on temperature | hints | throttled steps | hint bytes in the context |");
    println!("|---|---:|---:|---:|");
    let before = run(None)?;
    let after = run(Interval::from_secs(600))?;
    for (name, r) in [("change 1", &before), ("change 1, min_interval 600 s", &after)] {
        println!("| {name} | {} | {} | {} |", r.hints, r.throttled, r.bytes);
    }
    let saved = before.bytes - after.bytes;
    println!(
        "\nsaved: {saved} bytes of context ({:.0} %)",
        100.0 * saved as f64 / before.bytes as f64
    );
    // Every step moved 1.5 °C: without a floor each fires.
    assert_eq!((before.hints, before.throttled), (STEPS, 0));
    // With a 10-minute floor, at most one hint per 10 steps; the changes
    // between are held back (the steps that read the told value are quiet).
    assert!(
        after.hints <= STEPS / 10 + 1 && after.throttled > 0,
        "{} {}",
        after.hints,
        after.throttled
    );
    Ok(())
}
