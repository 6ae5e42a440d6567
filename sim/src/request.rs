//! `replay --request openai`: the context as the model is sent it, written
//! by the core's own request writer ([`envaware::openai::ChatRequest`])
//! over the replay's AgentScope `Msg` JSON.

use std::borrow::Cow;

use envaware::openai::ChatRequest;
use envaware::{Block, HintText, Role, SliceConversation, SliceMessage, ToolResultState};
use serde_json::Value;

/// One block as read from its JSON, before it is borrowed as a [`Block`].
enum Read<'v> {
    Text(&'v str),
    Hint { list: bool, parts: Vec<&'v str> },
    Call { id: &'v str, name: &'v str, input: &'v str },
    Result { id: &'v str, name: &'v str, output: Cow<'v, str> },
    Other,
}

fn text_of<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The texts of a list of AgentScope content blocks (data blocks are not
/// sent: docs/openai.md).
fn texts(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .map(|b| text_of(b, "text"))
        .collect()
}

fn read_block(block: &Value) -> Read<'_> {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => Read::Text(text_of(block, "text")),
        Some("hint") => match block.get("hint") {
            Some(Value::Array(items)) => Read::Hint { list: true, parts: texts(items) },
            _ => Read::Hint { list: false, parts: vec![text_of(block, "hint")] },
        },
        Some("tool_call") => Read::Call {
            id: text_of(block, "id"),
            name: text_of(block, "name"),
            input: text_of(block, "input"),
        },
        Some("tool_result") => Read::Result {
            id: text_of(block, "id"),
            name: text_of(block, "name"),
            // AgentScope's `convert_tool_result_to_string`.
            output: match block.get("output") {
                Some(Value::Array(items)) => Cow::Owned(texts(items).join("\n")),
                Some(Value::String(s)) => Cow::Borrowed(s),
                _ => Cow::Borrowed(""),
            },
        },
        _ => Read::Other,
    }
}

/// The blocks of one message: a string content is one text block.
fn read_message(msg: &Value) -> Vec<Read<'_>> {
    match msg.get("content") {
        Some(Value::String(s)) => vec![Read::Text(s)],
        Some(Value::Array(blocks)) => blocks.iter().map(read_block).collect(),
        _ => Vec::new(),
    }
}

fn borrow<'r>(read: &'r Read<'_>) -> Block<'r> {
    match read {
        Read::Text(t) => Block::Text(t),
        Read::Hint { list: false, parts } => Block::Hint {
            source: None,
            text: HintText::Single(parts.first().copied().unwrap_or_default()),
            created_at: None,
        },
        Read::Hint { list: true, parts } => {
            Block::Hint { source: None, text: HintText::Parts(parts), created_at: None }
        }
        Read::Call { id, name, input } => Block::ToolCall { id, name, input },
        Read::Result { id, name, output } => {
            Block::ToolResult { id, name, state: ToolResultState::Success, output }
        }
        Read::Other => Block::Other,
    }
}

/// The `messages` array AgentScope 2.0.11's `OpenAIChatFormatter` makes of
/// `[SystemMsg(system_prompt)] + [UserMsg(summary) if set] + context`.
pub fn openai_messages<'v>(
    system_prompt: &str,
    summary: Option<&str>,
    context: impl IntoIterator<Item = &'v Value>,
) -> Result<Value, String> {
    let context: Vec<&Value> = context.into_iter().collect();
    let read: Vec<Vec<Read<'_>>> = context.iter().map(|m| read_message(m)).collect();
    let blocks: Vec<Vec<Block<'_>>> =
        read.iter().map(|blocks| blocks.iter().map(borrow).collect()).collect();
    let messages: Vec<SliceMessage<'_>> = context
        .iter()
        .zip(&blocks)
        .map(|(msg, blocks)| SliceMessage {
            role: msg
                .get("role")
                .and_then(Value::as_str)
                .and_then(Role::from_name)
                .unwrap_or(Role::User),
            name: text_of(msg, "name"),
            blocks,
        })
        .collect();
    let request = ChatRequest { system_prompt, summary, ..ChatRequest::default() };
    let mut out = Vec::new();
    match request.write_messages(&SliceConversation(&messages), &mut out) {
        Ok(()) => {}
        Err(never) => match never {},
    }
    serde_json::from_slice(&out).map_err(|e| format!("the request writer wrote invalid JSON: {e}"))
}

/// How much of one step's request the next step's request starts with,
/// byte for byte: what a provider's prompt cache can reuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheStep {
    /// The step's number (from 1).
    pub step: usize,
    /// The request body's bytes.
    pub bytes: usize,
    /// Bytes of it the next request starts with.
    pub reused: usize,
    /// Why the rest is not reused.
    pub why: CacheBreak,
}

/// Where a request stops being a prefix of the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheBreak {
    /// Every message was kept and new ones follow: only the closing bytes
    /// (`]`, the body's last keys) differ.
    Closing,
    /// The newest message grew in place (a text after its tool calls, a
    /// call into its `tool_calls`).
    LastGrew,
    /// Message `index` (0: the system prompt; 1: the summary, or the first
    /// message of the context) changed or went: a new system prompt, the
    /// summary set or cleared, a compression.
    Changed {
        /// The first message that differs.
        index: usize,
        /// Messages in the request.
        of: usize,
    },
}

/// The body `ChatRequest::write_body` writes around `messages` (model
/// `"m"`, no tools), from the messages as the replay prints them: the
/// core writes the same bytes serde_json writes for them (its escapes,
/// the keys in order).
pub fn request_body(messages: &Value) -> Vec<u8> {
    let mut body = br#"{"model":"m","messages":"#.to_vec();
    body.extend(serde_json::to_vec(messages).unwrap_or_default());
    body.extend(br#","stream":false}"#);
    body
}

/// Each step's reuse by the next, from `replay --json --request openai`'s
/// lines (the last step has no next and is left out).
pub fn cache_steps(lines: &[Value]) -> Vec<CacheStep> {
    let requests: Vec<&Value> = lines.iter().filter_map(|l| l.get("request")).collect();
    requests
        .windows(2)
        .enumerate()
        .map(|(i, pair)| {
            let (now, next) = (request_body(pair[0]), request_body(pair[1]));
            let reused = now.iter().zip(&next).take_while(|(a, b)| a == b).count();
            let (a, b) = (pair[0].as_array(), pair[1].as_array());
            let (a, b) = (a.map_or(&[][..], Vec::as_slice), b.map_or(&[][..], Vec::as_slice));
            let index = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            let why = if index == a.len() {
                CacheBreak::Closing
            } else if index + 1 == a.len() && b.len() >= a.len() {
                CacheBreak::LastGrew
            } else {
                CacheBreak::Changed { index, of: a.len() }
            };
            CacheStep { step: i + 1, bytes: now.len(), reused, why }
        })
        .collect()
}

/// The table `replay --prompt-cache` prints, and the distribution.
pub fn cache_report(steps: &[CacheStep]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("| step | request bytes | reused by the next | share | why the rest is not |\n|---|---|---|---|---|\n");
    for s in steps {
        let why = match &s.why {
            CacheBreak::Closing => "only the closing bytes".to_string(),
            CacheBreak::LastGrew => "the newest message grew in place".to_string(),
            CacheBreak::Changed { index: 0, .. } => "the system prompt changed".to_string(),
            CacheBreak::Changed { index, of } => {
                format!("messages[{index}] of {of} changed or went (summary, compression)")
            }
        };
        let share = 100.0 * s.reused as f64 / s.bytes.max(1) as f64;
        let _ = writeln!(out, "| {} | {} | {} | {share:.1} % | {why} |", s.step, s.bytes, s.reused);
    }
    let mut shares: Vec<f64> =
        steps.iter().map(|s| s.reused as f64 / s.bytes.max(1) as f64).collect();
    shares.sort_by(f64::total_cmp);
    if !shares.is_empty() {
        let at = |q: f64| 100.0 * shares[((shares.len() - 1) as f64 * q).round() as usize];
        let closing = steps.iter().filter(|s| s.why == CacheBreak::Closing).count();
        let bytes: usize = steps.iter().map(|s| s.bytes).sum();
        let reused: usize = steps.iter().map(|s| s.reused).sum();
        let _ = writeln!(
            out,
            "\n{} steps: share min {:.1} %, p10 {:.1} %, median {:.1} %, max {:.1} %; {:.1} % of all request bytes reused; {closing} steps lose only the closing bytes",
            steps.len(),
            at(0.0),
            at(0.1),
            at(0.5),
            at(1.0),
            100.0 * reused as f64 / bytes.max(1) as f64,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_formatter_cases_come_out_as_agentscope_sends_them() {
        let context = [
            json!({"name": "user", "role": "user", "content": "hi"}),
            json!({"name": "Rover", "role": "assistant", "content": [
                {"type": "thinking", "thinking": "never sent"},
                {"type": "text", "text": ""},
                {"type": "tool_call", "id": "c1", "name": "Read", "input": "{}"},
                {"type": "hint", "hint": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"type": "hint", "hint": []},
                {"type": "tool_result", "id": "c1", "name": "Read", "output": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}], "state": "success"},
                {"type": "tool_call", "id": "c2", "name": "Read", "input": "{}"}
            ]}),
            json!({"name": "Scout", "role": "assistant", "content": [{"type": "thinking", "thinking": "t"}]}),
        ];
        let messages = openai_messages("", Some("sum"), &context).unwrap();
        assert_eq!(
            messages,
            json!([
                {"role": "system", "name": "system", "content": [{"type": "text", "text": ""}]},
                {"role": "user", "name": "user", "content": [{"type": "text", "text": "sum"}]},
                {"role": "user", "name": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "name": "Rover", "content": [{"type": "text", "text": ""}],
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}]},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "tool", "tool_call_id": "c1", "content": "x\ny", "name": "Read"},
                {"role": "assistant", "name": "Rover", "content": null,
                 "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "Read", "arguments": "{}"}}]}
            ])
        );
        // An empty summary is not sent.
        assert_eq!(openai_messages("p", Some(""), &[]).unwrap().as_array().unwrap().len(), 1);
    }

    #[test]
    fn a_request_is_reused_up_to_where_it_changed() {
        let sys =
            json!({"role": "system", "name": "system", "content": [{"type": "text", "text": "p"}]});
        let a = json!({"role": "user", "name": "user", "content": [{"type": "text", "text": "a"}]});
        let b = json!({"role": "assistant", "name": "R", "content": null});
        let b2 =
            json!({"role": "assistant", "name": "R", "content": [{"type": "text", "text": "c"}]});
        let lines: Vec<Value> =
            [json!([sys, a]), json!([sys, a, b]), json!([sys, a, b2]), json!([sys, b2])]
                .into_iter()
                .map(|r| json!({"request": r}))
                .collect();
        let steps = cache_steps(&lines);
        let closing = br#"],"stream":false}"#.len();
        assert_eq!(steps[0].why, CacheBreak::Closing);
        assert_eq!(steps[0].reused, steps[0].bytes - closing);
        assert_eq!(steps[1].why, CacheBreak::LastGrew);
        assert!(steps[1].reused < steps[1].bytes - closing);
        assert_eq!(steps[2].why, CacheBreak::Changed { index: 1, of: 3 });
        assert_eq!(steps.len(), 3);
        assert!(cache_report(&steps).contains("3 steps: share min"));
    }
}
