//! A noisy sensor under a watch: every read gives another value, jittering
//! around the watch's threshold. A step reads it once, so the reading that
//! fired the watch is the reading the hint tells.
//!
//! The example prints one row per step (the reading the decision was made
//! on, whether the watch fired, the value the hint told) and checks that
//! the sensor was read once per step and that a fired reading is the told
//! one. `cargo run -p envaware --example noisy_sensor`; `cargo xtask test`
//! runs it.

use envaware::{
    AgentContext, Config, Decimal, Engine, FixedClock, InjectionConfig, LiveFields, StepInput,
    TaskCounts, Timestamp, Watch, WatchList,
};

/// A thermometer whose every read is the next value of `series`.
struct Noisy {
    series: &'static [&'static str],
    reads: usize,
    value: String,
}

impl LiveFields for Noisy {
    fn refresh(&mut self) {
        self.value = format!("{} °C", self.series[self.reads % self.series.len()]);
        self.reads += 1;
    }
    fn len(&self) -> usize {
        1
    }
    fn field(&self, i: usize) -> Option<(&str, &str)> {
        (i == 0).then_some(("temperature", self.value.as_str()))
    }
}

/// Told above 28 °C, again at 27.5 °C or below (hysteresis 0.5), and on any
/// move of a whole degree.
const WATCH: [(&str, Watch); 1] = [(
    "temperature",
    Watch {
        change: Decimal::new(1, 0),
        above: Decimal::new(28, 0),
        below: None,
        hysteresis: Decimal::new(5, 1).unwrap(),
        min_interval: None,
        max_interval: None,
    },
)];

/// The sensor's reads, in order: one per step if a step reads once.
const SERIES: &[&str] =
    &["27.9", "28.6", "27.8", "28.4", "27.3", "28.1", "29.4", "28.7", "27.4", "28.2"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = Config {
        injection: InjectionConfig {
            watch: WatchList::Slice(&WATCH),
            ..InjectionConfig::default()
        },
        ..Config::default()
    };
    let engine = Engine::new(config)?;
    let mut context: AgentContext<'_, 32, 64, 8192> = AgentContext::new(&engine, "greenhouse");
    let mut sensor = Noisy { series: SERIES, reads: 0, value: String::new() };
    let mut hint = [0u8; 1024];
    context.user("operator")?;

    println!("| step | reads | reading decided on | watch fired | told in the hint |");
    println!("|---:|---:|---:|---|---:|");
    for step in 0..SERIES.len() {
        // One minute apart: the time is told at the first step only.
        let mut clock =
            FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400 + 60 * step as i64));
        let input = StepInput {
            tasks: TaskCounts::default(),
            cur_iter: step as u64,
            input_tokens: 900,
            context_size: 8192,
        };
        let reads_before = sensor.reads;
        let outcome = context.step(&input, &mut clock, &mut sensor, &mut hint)?;
        let reads = sensor.reads - reads_before;
        let decided_on = SERIES[reads_before % SERIES.len()];
        let fired = !outcome.decision.watch.is_empty();
        let told = outcome.hint.map(told_temperature).unwrap_or("");
        println!(
            "| {step} | {reads} | {decided_on} °C | {} | {} |",
            if fired { "yes" } else { "no" },
            if told.is_empty() { "–".to_string() } else { format!("{told} °C") }
        );
        assert_eq!(reads, 1, "step {step}: the sensor is read once per step");
        if fired {
            assert_eq!(told, decided_on, "step {step}: the reading that fired is the one told");
        }
    }
    Ok(())
}

/// The number in the hint's `<temperature>` field.
fn told_temperature(hint: &str) -> &str {
    let value = hint
        .split_once("<temperature>")
        .and_then(|(_, rest)| rest.split_once("</temperature>"))
        .map_or("", |(value, _)| value);
    value.split(' ').next().unwrap_or("")
}
