//! Writing arguments in many ways: the same JSON value with its keys in
//! another order, other spacing and other string escapes, so that the
//! core's canonical argument comparison is exercised where AgentScope's
//! `json.dumps(json.loads(raw), sort_keys=True)` sees one value.

use std::fmt::Write as _;

use super::case::ArgFormat;
use serde_json::{json, Value};

// The crate's one seeded generator (splitmix64), shared with the greenhouse sessions.
use crate::greenhouse::Rng;

fn space(rng: &mut Rng, out: &mut String) {
    out.push_str(["", "", " ", "\n  ", "\t"][rng.below(5) as usize]);
}

fn write_raw_str(s: &str, rng: &mut Rng, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        let escape = rng.below(3) == 0;
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' if !escape => out.push_str("\\n"),
            '\t' if !escape => out.push_str("\\t"),
            '/' if escape => out.push_str("\\/"),
            c if (c as u32) < 0x20 || (escape && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = if rng.below(2) == 0 {
                        write!(out, "\\u{u:04x}")
                    } else {
                        write!(out, "\\u{u:04X}")
                    };
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `v` as JSON text with random whitespace, key order, escapes, and now and
/// then a duplicate key whose later value wins.
fn write_raw(v: &Value, rng: &mut Rng, out: &mut String) {
    match v {
        Value::String(s) => write_raw_str(s, rng, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                space(rng, out);
                write_raw(item, rng, out);
                space(rng, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.below(i as u64 + 1) as usize);
            }
            out.push('{');
            let mut first = true;
            for k in keys {
                let mut entry = |value: &Value, out: &mut String, rng: &mut Rng| {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    space(rng, out);
                    write_raw_str(k, rng, out);
                    space(rng, out);
                    out.push(':');
                    space(rng, out);
                    write_raw(value, rng, out);
                };
                if rng.below(8) == 0 {
                    entry(&json!("shadowed"), out, rng);
                }
                entry(&map[k], out, rng);
            }
            space(rng, out);
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

pub(super) fn raw_arguments(v: &Value, format: ArgFormat) -> String {
    let mut rng = Rng(format.seed);
    let mut out = String::new();
    space(&mut rng, &mut out);
    write_raw(v, &mut rng, &mut out);
    space(&mut rng, &mut out);
    if format.truncate {
        // Usually just the closing character; now and then anywhere.
        let bounds: Vec<usize> = out.char_indices().map(|(i, _)| i).filter(|i| *i > 0).collect();
        let cut = match bounds.len() {
            0 => 0,
            n if rng.below(3) == 0 => bounds[rng.below(n as u64) as usize],
            n => bounds[n - 1],
        };
        out.truncate(cut);
        out.push_str(["", " ", "\n"][rng.below(3) as usize]);
    }
    out
}
