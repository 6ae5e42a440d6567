//! The configuration loader over arbitrary bytes: `injection JSON \0
//! context JSON`. Never panics; a failed load leaves the buffer as it was;
//! a configuration that validates runs a step and renders a hint that fits
//! the size the engine asked for. Strict mode accepts exactly the valid
//! configurations whose timezone and extra fields hold no '<' or '>' and
//! whose extra keys are not built-in ones.
#![no_main]

use envaware::ConfigBuf;
use envaware::{Engine, FixedClock, SliceConversation, Step, TaskCounts, Timestamp};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(2, |&b| b == 0);
    let injection = parts.next().unwrap_or_default();
    let context = parts.next();
    let mut buf = ConfigBuf::<4096, 16, 16>::with_capacity();
    if let Ok(text) = std::str::from_utf8(injection) {
        let before = format!("{:?}", buf.config());
        if buf.load_injection(text).is_err() {
            assert_eq!(format!("{:?}", buf.config()), before, "a failed load changed the buffer");
        }
    }
    if let Some(Ok(text)) = context.map(std::str::from_utf8) {
        let before = format!("{:?}", buf.config());
        if buf.load_context(text).is_err() {
            assert_eq!(format!("{:?}", buf.config()), before, "a failed load changed the buffer");
        }
    }
    let mut strict = buf.config();
    strict.injection.strict = !strict.injection.strict;
    let (compatible, strict) = if strict.injection.strict { (buf.config(), strict) } else { (strict, buf.config()) };
    if compatible.validate().is_ok() {
        let inj = &strict.injection;
        let bracket = |t: &str| t.contains(['<', '>']);
        let builtin = |k: &str| ["current-time", "timezone", "tasks", "context-length", "tool-error"].contains(&k);
        let clean = !bracket(inj.timezone) && !inj.extra_fields.iter().any(|(k, v)| bracket(k) || bracket(v) || builtin(k));
        assert_eq!(strict.validate().is_ok(), clean, "strict mode accepts exactly the clean configurations");
    }
    let Ok(engine) = Engine::new(buf.config()) else { return };
    let step = Step {
        agent_name: "agent",
        tasks: TaskCounts { pending: 1, in_progress: 1 },
        cur_iter: 0,
        input_tokens: 120_000,
        context_size: 128_000,
    };
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(1_784_687_400));
    let mut small = [0u8; 64];
    match engine.step(&SliceConversation(&[]), &step, &mut clock, &mut (), &mut small) {
        Ok(outcome) => assert_eq!(outcome.hint.is_some(), outcome.decision.fires()),
        Err(too_long) => {
            assert!(too_long.needed > small.len());
            let mut big = vec![0u8; too_long.needed];
            let outcome =
                engine.step(&SliceConversation(&[]), &step, &mut clock, &mut (), &mut big).expect("the size it asked for is enough");
            assert_eq!(outcome.hint.map(str::len), Some(too_long.needed), "the hint fills the size it asked for");
        }
    }
});
