//! Python's `json.dumps(value, sort_keys=True)` over a `serde_json::Value`:
//! the one writer of that text shared by the sim's reference model and the
//! `args` fuzz target, so both check the core against the same oracle.
//!
//! `ensure_ascii=True` and the default separators (`", "`, `": "`), as
//! AgentScope calls it. Integers are written exactly; floats are written by
//! serde_json's `Display`, which is not Python's `repr` in every case (see
//! [`has_float`] for callers that must not rely on it).
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    rustdoc::broken_intra_doc_links
)]

use serde_json::Value;
use std::fmt::Write;

/// `json.dumps(v, sort_keys=True)` as a new string.
pub fn dumps(v: &Value) -> String {
    let mut out = String::new();
    write_value(v, &mut out);
    out
}

/// Whether a float occurs anywhere in `v`: where it does, [`dumps`] may
/// differ from Python's `repr` of that float.
pub fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(map) => map.values().any(has_float),
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted here rather than trusting the map's order: with
            // serde_json's `preserve_order` it keeps insertion order. Rust's
            // `str` order is UTF-8 byte order, which is Python's code point order.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(k, out);
                out.push_str(": ");
                write_value(&map[k], out);
            }
            out.push('}');
        }
    }
}

/// A string literal, `ensure_ascii=True`: everything outside printable
/// ASCII as `\uXXXX` (UTF-16 units).
fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(raw: &str) -> String {
        dumps(&serde_json::from_str(raw).unwrap())
    }

    #[test]
    fn sorts_keys_and_spaces_like_python() {
        // json.dumps(json.loads('{"b":[1,true,null],"a":{"d":"x","c":-2}}'), sort_keys=True)
        assert_eq!(
            py(r#"{"b":[1,true,null],"a":{"d":"x","c":-2}}"#),
            r#"{"a": {"c": -2, "d": "x"}, "b": [1, true, null]}"#
        );
    }

    #[test]
    fn escapes_like_ensure_ascii() {
        // json.dumps("\"\\\n\r\t\b\f\x01é😀~")
        assert_eq!(
            py(r#""\"\\\n\r\t\b\f\u0001é😀~""#),
            r#""\"\\\n\r\t\b\f\u0001\u00e9\ud83d\ude00~""#
        );
    }

    #[test]
    fn finds_floats_at_any_depth() {
        assert!(!has_float(&serde_json::from_str(r#"{"a": [1, "1.5", {"b": -3}]}"#).unwrap()));
        assert!(has_float(&serde_json::from_str(r#"{"a": [1, {"b": 1.0}]}"#).unwrap()));
    }
}
