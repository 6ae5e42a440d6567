//! The argument normalizer over arbitrary text: never panics, and where
//! serde_json can stand in for Python's `json.loads` (no floats, integers
//! in 64 bits, within the bounds) the canonical string is exactly
//! `json.dumps(json.loads(raw), sort_keys=True)`, rebuilt here from
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

/// Python's `json.dumps(value, sort_keys=True)` (ensure_ascii, default
/// separators); `None` when a float is involved (Python's `repr` is not
/// modelled here).
fn dumps(v: &Value, out: &mut String) -> Option<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if n.is_f64() => return None,
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dumps(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            // serde_json's map is a BTreeMap here: sorted by UTF-8 bytes,
            // which is code point order.
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                string(k, out);
                out.push_str(": ");
                dumps(item, out)?;
            }
            out.push('}');
        }
    }
    Some(())
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else { return };
    let mut sink = Collect(Vec::new());
    let canonical = write_canonical(raw, &mut sink);
    let text = String::from_utf8(sink.0).expect("the canonical string is UTF-8");
    assert_eq!(argument_key(raw), argument_key(raw), "the key is deterministic");

    if let Ok(value) = serde_json::from_str::<Value>(raw) {
        let mut expected = String::new();
        if dumps(&value, &mut expected).is_some() && canonical == Canonical::Json {
            assert_eq!(text, expected, "canonical string of {raw:?}");
        }
        // serde_json accepts only what json.loads accepts too.
        assert!(!matches!(canonical, Canonical::RawStripped), "json.loads accepts {raw:?}, envaware said RawStripped");
    }
    // The same value spaced differently is the same argument.
    if canonical == Canonical::Json {
        let padded = format!(" \n{raw}\t\r");
        assert_eq!(argument_key(&padded), argument_key(raw), "{raw:?} padded");
    }
});
