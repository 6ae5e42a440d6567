//! The configuration loader over arbitrary bytes: `injection JSON \0
//! context JSON`. Never panics; a failed load leaves the buffer as it was;
//! a configuration that validates runs a step and renders a hint that fits
//! the size the engine asked for. Strict mode accepts exactly the valid
//! configurations whose timezone and extra fields hold no '<' or '>' and
//! whose extra keys are not built-in ones. A watch error names its path
//! under `injection_config.watch`; with watches, a step given a reading for
//! each watched field (nothing told yet) fires each of them.
#![no_main]

use envaware::ConfigBuf;
use envaware::{
    ConfigError, Engine, ExtraFields, FixedClock, SliceConversation, Step, TaskCounts, Timestamp,
};
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
    let (compatible, strict) =
        if strict.injection.strict { (buf.config(), strict) } else { (strict, buf.config()) };
    if compatible.validate().is_ok() {
        let inj = &strict.injection;
        let bracket = |t: &str| t.contains(['<', '>']);
        let builtin = |k: &str| {
            ["current-time", "timezone", "tasks", "context-length", "tool-error"].contains(&k)
        };
        let clean = !bracket(inj.timezone)
            && !inj.extra_fields.iter().any(|(k, v)| bracket(k) || bracket(v) || builtin(k));
        assert_eq!(
            strict.validate().is_ok(),
            clean,
            "strict mode accepts exactly the clean configurations"
        );
    }
    let engine = match Engine::new(buf.config()) {
        Ok(engine) => engine,
        Err(e @ (ConfigError::Watch(_) | ConfigError::TooManyWatches(_))) => {
            assert!(e.to_string().starts_with("injection_config.watch"), "{e}");
            return;
        }
        Err(_) => return,
    };
    // Every watched field read as 21.5, nothing told: each watch fires.
    let watches = buf.config().injection.watch;
    let readings: Vec<(&str, &str)> = watches.iter().map(|(name, _)| (name, "21.5 °C")).collect();
    let decision = engine.decide_with_readings(
        &SliceConversation(&[]),
        &Step {
            agent_name: "agent",
            tasks: TaskCounts::default(),
            cur_iter: 1,
            input_tokens: 0,
            context_size: 128_000,
        },
        None,
        &ExtraFields::Slice(&readings),
    );
    let expected = if buf.config().injection.inject_runtime_state { watches.len() } else { 0 };
    assert_eq!(
        decision.watch.iter().count(),
        expected,
        "every watched reading fires when nothing was told"
    );
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
            let outcome = engine
                .step(&SliceConversation(&[]), &step, &mut clock, &mut (), &mut big)
                .expect("the size it asked for is enough");
            assert_eq!(
                outcome.hint.map(str::len),
                Some(too_long.needed),
                "the hint fills the size it asked for"
            );
        }
    }
});
