//! A fleet's generated sessions: greenhouse devices whose agents call
//! tools (every third device's fail several times in a row), read a
//! temperature that warms past 28 °C on every other device, and cross the
//! context-length reminder every fifth reply. The fleet's tests
//! (`sim/tests/fleet.rs`) publish these sessions as whole logs;
//! `envaware-sim devices` runs them step by step through a device's
//! session log and its uplink (the outbox), as a device would.
//!
//! A [`Greenhouse`] only says what happens at each step ([`Turn`]): the
//! events before it, its input, its instant and its reading. The caller
//! records them through its own `journal::Session`, into whatever store it
//! keeps the log in. Deterministic: device `index` of seed `seed` takes the
//! same turns on every run.

use envaware::journal::Event;
use envaware::{StepInput, TaskCounts, Timestamp, ToolResultState};

use crate::scenario::Readings;

/// The devices' session configuration: the time every 15 minutes, a watch
/// on the temperature (told on a 2-degree change or across 28 °C, not
/// sooner than two minutes after it was last told), compression near 60%
/// of 4096 tokens.
pub const CONFIG: &str = r#"{"agent_name": "Sprout",
 "injection_config": {"timezone": "UTC", "time_interval": 0.25,
   "watch": {"temperature": {"change": 2.0, "above": 28, "hysteresis": 0.5, "min_interval": 120}}},
 "context_config": {"trigger_ratio": 0.8, "context_buffer_ratio": 0.2},
 "context_size": 4096}"#;

/// The watch's `above`, in °C.
pub const ABOVE: f64 = 28.0;

/// The seed the fleet's tests use.
pub const SEED: u64 = 0x5EED;

/// The context's capacities: 16 messages, 64 blocks, 4 KiB of text.
pub type Context<'e> = envaware::journal::Session<'e, 16, 64, 4096>;

/// Device `index`'s id: `sim-0001` for prefix `sim-`.
pub fn device_id(prefix: &str, index: u32) -> String {
    format!("{prefix}{index:04}")
}

/// A small deterministic generator (splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// An event of a turn, owning its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEvent {
    /// The operator starts a reply.
    User,
    /// The agent calls `OpenVent` with `{"vent": 2}`, under `id`, and the
    /// call fails or succeeds.
    Call {
        /// The call's id.
        id: String,
        /// Whether it failed.
        fails: bool,
    },
}

impl TurnEvent {
    /// The journal's events for it, in order.
    pub fn events(&self) -> Vec<Event<'_>> {
        match self {
            TurnEvent::User => vec![Event::User { name: "operator", text: "" }],
            TurnEvent::Call { id, fails } => {
                let state = if *fails { ToolResultState::Error } else { ToolResultState::Success };
                vec![
                    Event::ToolCall { id, name: "OpenVent", input: "{\"vent\": 2}" },
                    Event::ToolResult { id, name: "OpenVent", state },
                ]
            }
        }
    }
}

/// What happens at one step: the events before it, then the step.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The step's number, from 0.
    pub n: u32,
    /// Recorded before the step, in order.
    pub events: Vec<TurnEvent>,
    /// The step's input.
    pub input: StepInput,
    /// The step's instant.
    pub at: Timestamp,
    /// The temperature read, in °C (rendered with two decimals).
    pub temperature: f64,
}

impl Turn {
    /// The live fields the step reads: the temperature, as `22.31 °C`.
    pub fn readings(&self) -> Readings {
        Readings(vec![("temperature".into(), Some(format!("{:.2} °C", self.temperature)))])
    }
}

/// One device's session, turn by turn.
#[derive(Debug, Clone)]
pub struct Greenhouse {
    rng: Rng,
    at: i64,
    warming: bool,
    failing: bool,
    temperature: f64,
    cur_iter: u64,
    n: u32,
}

impl Greenhouse {
    /// Device `index` (from 1) of the fleet of `seed` ([`SEED`] for the
    /// tests' fleet).
    pub fn new(index: u32, seed: u64) -> Self {
        let mut rng = Rng(seed ^ (u64::from(index) << 8));
        let temperature = 22.0 + rng.below(30) as f64 / 10.0;
        Greenhouse {
            rng,
            // 2026-11-30, each device 7 s after the one before.
            at: 1_796_000_000_000_000 + i64::from(index) * 7_000_000,
            warming: index.is_multiple_of(2),
            failing: index.is_multiple_of(3),
            temperature,
            cur_iter: 0,
            n: 0,
        }
    }

    /// The next turn: replies of five steps (a user message first), a
    /// tool call every third step (failing calls from step 10 to 13 on a
    /// failing device: four in a row), tasks, tokens that sometimes cross
    /// the reminder, the temperature drifting to 31 °C (warming) or 23 °C,
    /// 30 to 50 s between steps.
    pub fn next_turn(&mut self) -> Turn {
        let n = self.n;
        let mut events = Vec::new();
        if n.is_multiple_of(5) {
            events.push(TurnEvent::User);
            self.cur_iter = 0;
        }
        let failing_now = self.failing && (10..14).contains(&n);
        if n % 3 == 1 {
            events.push(TurnEvent::Call { id: format!("c{n}"), fails: failing_now });
        }
        if failing_now && n % 3 != 1 {
            events.push(TurnEvent::Call { id: format!("f{n}"), fails: true });
        }
        let target = if self.warming { 31.0 } else { 23.0 };
        self.temperature +=
            (target - self.temperature) * 0.08 + (self.rng.below(100) as f64 - 50.0) / 100.0;
        let input = StepInput {
            tasks: TaskCounts {
                pending: u64::from(n / 10 % 3),
                in_progress: u64::from(n % 7 == 3),
            },
            cur_iter: self.cur_iter,
            // Every fifth reply starts above the reminder (0.6 * 4096).
            input_tokens: 1000
                + 450 * i64::from(n / 5 % 5)
                + 100 * self.cur_iter as i64
                + self.rng.below(300) as i64,
            context_size: 4096,
        };
        let at = Timestamp::from_unix_micros(self.at);
        self.cur_iter += 1;
        self.at += 30_000_000 + self.rng.below(20_000_000) as i64;
        self.n += 1;
        Turn { n, events, input, at, temperature: self.temperature }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_s_turns_are_the_same_on_every_run_and_differ_between_devices() {
        let turns = |index| {
            let mut g = Greenhouse::new(index, SEED);
            (0..40).map(|_| g.next_turn()).collect::<Vec<_>>()
        };
        let (a, b) = (turns(3), turns(3));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert_ne!(format!("{a:?}"), format!("{:?}", turns(4)));
        // Device 3 fails four calls in a row, steps 10 to 13.
        let failed: Vec<u32> = a
            .iter()
            .filter(|t| t.events.iter().any(|e| matches!(e, TurnEvent::Call { fails: true, .. })))
            .map(|t| t.n)
            .collect();
        assert_eq!(failed, [10, 11, 12, 13]);
        assert_eq!(a[5].events[0], TurnEvent::User);
        assert_eq!(device_id("sim-", 7), "sim-0007");
    }
}
