//! `envaware-sim replay`'s trace reader (the event parser and the session
//! it drives) over arbitrary text: never panics, in text and JSON output,
//! with and without a hint buffer. The replay modules are the sim's own
//! source files, compiled in here (they belong to its binary).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code, clippy::all)]
#[path = "../../../sim/src/record.rs"]
mod record;
#[allow(dead_code, clippy::all)]
#[path = "../../../sim/src/replay/mod.rs"]
mod replay;
/// What the replay modules read as `crate::scenario`.
mod scenario {
    pub use envaware_sim::scenario::*;
}
/// What the replay modules read as `crate::request`.
mod request {
    pub use envaware_sim::request::*;
}

fuzz_target!(|data: &[u8]| {
    let (text, _) = replay::utf8_prefix(data);
    for (json, hint_capacity, request) in
        [(false, None, None), (true, Some(64), Some(replay::RequestFormat::Openai))]
    {
        let opts = replay::Options {
            json,
            hint_capacity,
            request,
            now: Some("2026-07-22T02:30:00Z".into()),
            ..replay::Options::default()
        };
        let _ = replay::replay(text, &opts, &mut std::io::sink(), None);
    }
});
