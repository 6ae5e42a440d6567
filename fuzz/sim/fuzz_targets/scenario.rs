//! `envaware-sim eval`'s scenario reader over arbitrary lines: never
//! panics, and every line gets a hint or an error; an error for JSON that
//! does not parse names the line it was given.
#![no_main]

use envaware_sim::scenario::{self, Evaluation};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    match scenario::evaluate_line(line, 7) {
        Evaluation::Hint { hint, .. } => assert!(hint.is_none_or(|h| !h.is_empty())),
        Evaluation::Error(e) => {
            if serde_json::from_str::<serde::de::IgnoredAny>(line).is_err() {
                assert!(e.contains("line 7"), "a JSON error names the line: {e}");
            }
        }
    }
});
