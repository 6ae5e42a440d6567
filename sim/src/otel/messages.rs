//! The model request as the GenAI conventions' input messages.
//!
//! The input is the `messages` array of an OpenAI Chat Completions request
//! as the core's writer computes it (`replay --json --request openai`); the
//! output follows the conventions' input-messages JSON schema
//! (`gen-ai-input-messages.json`, semantic conventions v1.41.0): a list of
//! `{role, parts, name?}`, each part `{type: "text", content}`,
//! `{type: "tool_call", id, name, arguments}` or `{type:
//! "tool_call_response", id, response}`. Nothing is left out: an injected
//! hint, a `user` message with no name in the request, is a `user` message
//! with one text part here, as the model received it.

use serde_json::{json, Map, Value};

/// One message of the request, as the conventions write it.
fn message(index: usize, msg: &Value) -> Result<Value, String> {
    let at = |key: &str| format!("messages[{index}].{key}");
    let Value::Object(msg) = msg else {
        return Err(format!("messages[{index}]: expected an object, got {msg}"));
    };
    let role = msg
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{}: expected a string", at("role")))?;
    let mut parts = Vec::new();
    if role == "tool" {
        // The tool's output is the response to the call it names.
        parts.push(json!({
            "type": "tool_call_response",
            "id": msg.get("tool_call_id").cloned().unwrap_or(Value::Null),
            "response": text_of(msg.get("content"), &at("content"))?.concat(),
        }));
    } else {
        for content in text_of(msg.get("content"), &at("content"))? {
            parts.push(json!({"type": "text", "content": content}));
        }
        for (i, call) in
            msg.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate()
        {
            let function = call.get("function");
            let name =
                function.and_then(|f| f.get("name")).and_then(Value::as_str).ok_or_else(|| {
                    format!("{}: expected a string", at(&format!("tool_calls[{i}].function.name")))
                })?;
            let raw =
                function.and_then(|f| f.get("arguments")).and_then(Value::as_str).unwrap_or("");
            // The conventions' `arguments` is the JSON the model wrote; a
            // text that is not JSON is kept as it is (a string).
            let arguments = serde_json::from_str(raw).unwrap_or_else(|_| Value::from(raw));
            parts.push(json!({
                "type": "tool_call",
                "id": call.get("id").cloned().unwrap_or(Value::Null),
                "name": name,
                "arguments": arguments,
            }));
        }
    }
    let mut out = Map::new();
    out.insert("role".into(), role.into());
    out.insert("parts".into(), parts.into());
    if let Some(name) = msg.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        out.insert("name".into(), name.into());
    }
    Ok(Value::Object(out))
}

/// A message's `content`: a string, a list of `{"type": "text", "text"}`
/// parts, or null (an assistant message holding only tool calls).
fn text_of<'v>(content: Option<&'v Value>, at: &str) -> Result<Vec<&'v str>, String> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(vec![text]),
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                p.get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{at}[{i}].text: expected a string, got {p}"))
            })
            .collect(),
        Some(other) => {
            Err(format!("{at}: expected a string, a list of parts or null, got {other}"))
        }
    }
}

/// The request's `messages` as the conventions' input messages.
///
/// # Errors
///
/// When `request` is not a list of Chat Completions messages (the error
/// names the message and its key): never for what the core's writer
/// writes.
pub fn input_messages(request: &Value) -> Result<Value, String> {
    let Value::Array(messages) = request else {
        return Err(format!("messages: expected a list, got {request}"));
    };
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| message(i, m))
        .collect::<Result<_, _>>()
        .map(Value::Array)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_message_becomes_its_parts_and_the_hint_stays_a_user_text() {
        let request = json!([
            {"role": "system", "name": "system", "content": [{"type": "text", "text": "You run a greenhouse."}]},
            {"role": "user", "name": "operator", "content": [{"type": "text", "text": "Open vent 2."}]},
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>a</system-reminder>"}]},
            {"role": "assistant", "name": "Sprout", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "OpenVent", "arguments": "{\"vent\": 2}"}},
                {"id": "c2", "type": "function", "function": {"name": "OpenVent", "arguments": "{not json"}}
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "motor stalled", "name": "OpenVent"},
            {"role": "assistant", "name": "Sprout", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
        ]);
        let out = input_messages(&request).unwrap();
        assert_eq!(
            out,
            json!([
                {"role": "system", "parts": [{"type": "text", "content": "You run a greenhouse."}], "name": "system"},
                {"role": "user", "parts": [{"type": "text", "content": "Open vent 2."}], "name": "operator"},
                {"role": "user", "parts": [{"type": "text", "content": "<system-reminder>a</system-reminder>"}]},
                {"role": "assistant", "parts": [
                    {"type": "tool_call", "id": "c1", "name": "OpenVent", "arguments": {"vent": 2}},
                    {"type": "tool_call", "id": "c2", "name": "OpenVent", "arguments": "{not json"}
                ], "name": "Sprout"},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "motor stalled"}], "name": "OpenVent"},
                {"role": "assistant", "parts": [{"type": "text", "content": "a"}, {"type": "text", "content": "b"}], "name": "Sprout"}
            ])
        );
    }

    #[test]
    fn a_request_that_is_not_chat_completions_is_named() {
        for (request, error) in [
            (json!({}), "messages: expected a list, got {}"),
            (json!([1]), "messages[0]: expected an object, got 1"),
            (json!([{"content": "x"}]), "messages[0].role: expected a string"),
            (
                json!([{"role": "user", "content": 5}]),
                "messages[0].content: expected a string, a list of parts or null, got 5",
            ),
            (
                json!([{"role": "user", "content": [{"type": "text"}]}]),
                "messages[0].content[0].text: expected a string, got {\"type\":\"text\"}",
            ),
            (
                json!([{"role": "assistant", "tool_calls": [{"function": {}}]}]),
                "messages[0].tool_calls[0].function.name: expected a string",
            ),
        ] {
            assert_eq!(input_messages(&request).unwrap_err(), error, "{request}");
        }
    }
}
