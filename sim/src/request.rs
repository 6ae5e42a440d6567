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
