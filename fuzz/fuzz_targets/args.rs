//! The argument normalizer over arbitrary text: never panics, and where
//! serde_json can stand in for Python's `json.loads` (no floats, integers
//! in 64 bits, within the bounds) the canonical string is exactly
//! `json.dumps(json.loads(raw), sort_keys=True)`, rebuilt by `pyjson` from
//! serde_json's value; the hashed key agrees with it.
#![no_main]

use envaware::args::{argument_key, write_canonical, Canonical, Sink};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

struct Collect(Vec<u8>);

impl Sink for Collect {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else { return };
    let mut sink = Collect(Vec::new());
    let canonical = write_canonical(raw, &mut sink);
    let text = String::from_utf8(sink.0).expect("the canonical string is UTF-8");
    assert_eq!(argument_key(raw), argument_key(raw), "the key is deterministic");

    if let Ok(value) = serde_json::from_str::<Value>(raw) {
        // Python's `repr` of a float is not modelled by `pyjson`.
        if !pyjson::has_float(&value) && canonical == Canonical::Json {
            assert_eq!(text, pyjson::dumps(&value), "canonical string of {raw:?}");
        }
        // serde_json accepts only what json.loads accepts too.
        assert!(
            !matches!(canonical, Canonical::RawStripped),
            "json.loads accepts {raw:?}, envaware said RawStripped"
        );
    }
    // The same value spaced differently is the same argument.
    if canonical == Canonical::Json {
        let padded = format!(" \n{raw}\t\r");
        assert_eq!(argument_key(&padded), argument_key(raw), "{raw:?} padded");
    }
});
