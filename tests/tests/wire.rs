//! The core's AgentScope JSON (feature `wire`), read back by AgentScope
//! 2.0.11 itself: every message and hint block must pass
//! `Msg.model_validate_json` / `HintBlock.model_validate_json`, and dumping
//! it again must give the same keys in the same order.

use std::io::Write as _;
use std::process::{Command, Stdio};

use envaware::wire::{write_hint_block, write_message, IsoTime, MessageMeta};
use envaware::{resolve_zone, Zone};
use envaware::{Block, HintText, Role, SliceMessage, Timestamp, ToolResultState};
use xtask::needs;

/// Reads `kind\tjson` lines; prints, for each, the model's dump or the error.
const CHECK: &str = r#"
import json, sys
from agentscope.message import Msg, HintBlock
for line in sys.stdin:
    kind, text = line.rstrip("\n").split("\t", 1)
    model = {"msg": Msg, "hint": HintBlock}[kind]
    try:
        parsed = model.model_validate_json(text)
    except Exception as e:
        print(json.dumps({"error": str(e)}))
        continue
    print(json.dumps({"keys": list(json.loads(parsed.model_dump_json()).keys()), "dump": json.loads(parsed.model_dump_json())}))
"#;

#[test]
fn agentscope_reads_back_what_the_core_writes() {
    let berlin = resolve_zone("Europe/Berlin").expect("Berlin");
    let at = |micros: i64, zone: Zone| IsoTime { at: Timestamp::from_unix_micros(micros), zone };
    let parts = ["<current-time>2026-01-01T01:00:00", "</current-time>"];
    let assistant = [
        Block::Other,
        Block::ToolCall {
            id: "c1",
            name: "OpenVent",
            input: "{\"vent\": 2, \"note\": \"é\\n\\u2028\"}",
        },
        Block::ToolResult { id: "c1", name: "OpenVent", state: ToolResultState::Error, output: "" },
        Block::Hint {
            source: Some("{\"label\": \"System\", \"sublabel\": \"Runtime State\"}"),
            text: HintText::Single("<system-reminder>\n<tasks>x</tasks>\n</system-reminder>"),
            created_at: None,
        },
        Block::Hint { source: None, text: HintText::Parts(&parts), created_at: None },
    ];
    let messages = [
        (
            SliceMessage { role: Role::User, name: "operator", blocks: &[Block::Other] },
            at(1_767_225_600_000_000, Zone::Utc),
        ),
        (
            SliceMessage { role: Role::Assistant, name: "Sprout \"β\"", blocks: &assistant },
            at(1_767_225_600_123_000, berlin),
        ),
        (SliceMessage { role: Role::System, name: "system", blocks: &[] }, at(0, Zone::Utc)),
    ];
    let mut input = String::new();
    let mut written = Vec::new();
    let mut buf = [0u8; 4096];
    for (i, (msg, created_at)) in messages.iter().enumerate() {
        let id = format!("m{i}");
        let n = write_message(msg, &MessageMeta { id: &id, created_at: *created_at }, &mut buf)
            .expect("fits");
        let json = std::str::from_utf8(&buf[..n]).expect("UTF-8").to_string();
        input.push_str(&format!("msg\t{json}\n"));
        written.push(json);
    }
    let n = write_hint_block(
        "h1",
        "src",
        "<system-reminder>\n\"x\"\n</system-reminder>",
        at(1_767_225_600_000_001, berlin),
        &mut buf,
    )
    .expect("fits");
    let hint = std::str::from_utf8(&buf[..n]).expect("UTF-8").to_string();
    input.push_str(&format!("hint\t{hint}\n"));
    written.push(hint);

    // The writing above runs everywhere; the reading back needs AgentScope.
    let Some(python) = needs::or_skip(needs::reference_python()) else { return };
    let mut child = Command::new(python)
        .args(["-c", CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the reference Python");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let results: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(results.len(), written.len());
    for (ours, theirs) in written.iter().zip(&results) {
        assert!(theirs.get("error").is_none(), "AgentScope rejects {ours}: {theirs}");
        let ours: serde_json::Value = serde_json::from_str(ours).expect("our JSON");
        let our_keys: Vec<&str> =
            ours.as_object().expect("an object").keys().map(String::as_str).collect();
        let their_keys: Vec<&str> =
            theirs["keys"].as_array().expect("keys").iter().filter_map(|k| k.as_str()).collect();
        assert_eq!(our_keys, their_keys, "{ours}");
        // Every value we wrote is the one AgentScope keeps (blocks gain
        // defaults such as their created_at).
        assert!(kept(&theirs["dump"], &ours), "AgentScope changed {ours}: {}", theirs["dump"]);
    }
    assert_eq!(results[1]["dump"]["created_at"], "2026-01-01T01:00:00.123000");
    assert_eq!(results[3]["dump"]["created_at"], "2026-01-01T01:00:00.000001");
}

/// Whether `theirs` holds every value of `ours`: objects may have more keys.
fn kept(theirs: &serde_json::Value, ours: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (theirs, ours) {
        (Value::Object(t), Value::Object(o)) => {
            o.iter().all(|(k, v)| t.get(k).is_some_and(|tv| kept(tv, v)))
        }
        (Value::Array(t), Value::Array(o)) => {
            t.len() == o.len() && t.iter().zip(o).all(|(t, o)| kept(t, o))
        }
        _ => theirs == ours,
    }
}
