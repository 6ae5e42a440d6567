use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, vec};

use proptest::prelude::*;

use super::*;
use crate::conversation::{Block, Conversation, Message, Role, SliceConversation, SliceMessage};
use crate::store::ContextStore;

fn parse(body: &str) -> Result<Vec<String>, ResponseError> {
    let mut scratch = [0u8; 64];
    let reply = ChatResponse::parse(body.as_bytes(), &mut scratch)?;
    Ok(reply
        .blocks()
        .iter()
        .map(|b| match b {
            Block::Text(t) => format!("text {t}"),
            Block::ToolCall { id, name, input } => format!("call {id} {name} {input}"),
            Block::Other => "thinking".to_string(),
            other => format!("{other:?}"),
        })
        .collect())
}

fn message(inner: &str) -> String {
    format!(r#"{{"choices":[{{"index":0,"message":{inner},"finish_reason":"stop"}}]}}"#)
}

#[test]
fn a_reply_becomes_the_blocks_agentscope_appends() {
    let body = message(
        r#"{"role":"assistant","reasoning_content":"hm","content":"a\nb","tool_calls":[
        {"id":"c1","type":"function","function":{"name":"Read","arguments":"{\"p\": 1}"}},
        {"id":"c2","type":"function","function":{"name":"Bash","arguments":""}}]}"#,
    );
    assert_eq!(
        parse(&body).unwrap(),
        ["thinking", "text a\nb", "call c1 Read {\"p\": 1}", "call c2 Bash "]
    );
    // Empty or null content and reasoning add no block; no choice, nothing.
    assert_eq!(parse(&message(r#"{"content":"","reasoning":""}"#)).unwrap(), Vec::<String>::new());
    assert_eq!(
        parse(&message(r#"{"content":null,"tool_calls":null}"#)).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(parse(r#"{"choices":[]}"#).unwrap(), Vec::<String>::new());
    assert_eq!(parse(r#"{"object":"chat.completion"}"#).unwrap(), Vec::<String>::new());
    // Only the first choice; the last of duplicate keys, as Python reads them.
    let two =
        r#"{"choices":[{"message":{"content":"x","content":"y"}},{"message":{"content":"z"}}]}"#;
    assert_eq!(parse(two).unwrap(), ["text y"]);
}

#[test]
fn usage_and_finish_reason_are_read() {
    let body = r#"{"choices":[{"message":{"content":"k"},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":2}}"#;
    let mut scratch = [0u8; 0];
    let reply = ChatResponse::parse(body.as_bytes(), &mut scratch).unwrap();
    assert_eq!(
        (reply.finish_reason(), reply.prompt_tokens(), reply.completion_tokens(), reply.text()),
        (Some("length"), Some(7), Some(2), Some("k"))
    );
}

#[test]
fn a_malformed_response_names_the_field() {
    let cases: &[(&str, &str)] = &[
        ("[1]", "the response: expected an object"),
        (r#"{"choices":{}}"#, "choices: expected an array"),
        (r#"{"choices":[1]}"#, "choices[0]: expected an object"),
        (r#"{"choices":[{}]}"#, "choices[0].message: expected an object"),
        (r#"{"choices":[{"message":[]}]}"#, "choices[0].message: expected an object"),
        (&message(r#"{"content":5}"#), "choices[0].message.content: expected a string"),
        (&message(r#"{"tool_calls":{}}"#), "choices[0].message.tool_calls: expected an array"),
        (
            &message(r#"{"tool_calls":[{"id":"a","function":{"name":"n","arguments":"{}"}},3]}"#),
            "choices[0].message.tool_calls[1]: expected an object",
        ),
        (
            &message(r#"{"tool_calls":[{"function":{"name":"n","arguments":"{}"}}]}"#),
            "choices[0].message.tool_calls[0].id: expected a string",
        ),
        (
            &message(r#"{"tool_calls":[{"id":"a"}]}"#),
            "choices[0].message.tool_calls[0].function: expected an object",
        ),
        (
            &message(r#"{"tool_calls":[{"id":"a","function":{"arguments":"{}"}}]}"#),
            "choices[0].message.tool_calls[0].function.name: expected a string",
        ),
        (
            &message(r#"{"tool_calls":[{"id":"a","function":{"name":"n","arguments":{}}}]}"#),
            "choices[0].message.tool_calls[0].function.arguments: expected a string",
        ),
        (
            r#"{"choices":[{"message":{},"finish_reason":1}]}"#,
            "choices[0].finish_reason: expected a string",
        ),
        (r#"{"usage":3}"#, "usage: expected an object"),
        (r#"{"usage":{"prompt_tokens":-1}}"#, "usage.prompt_tokens: expected a whole number"),
        (r#"{"choices":[}"#, "the response is not JSON: expecting value at byte 12"),
        ("", "the response is not JSON: expecting value at byte 0"),
    ];
    for (body, want) in cases {
        let err = parse(body).unwrap_err();
        assert_eq!(err.to_string(), *want, "{body}");
    }
    let bad = [b'{', 0xff, b'}'];
    assert_eq!(ChatResponse::parse(&bad, &mut []).unwrap_err(), ResponseError::NotUtf8);
}

#[test]
fn an_oversized_reply_is_refused() {
    let call = r#"{"id":"a","function":{"name":"n","arguments":"{}"}}"#;
    let calls = |n: usize| message(&format!(r#"{{"tool_calls":[{}]}}"#, vec![call; n].join(",")));
    assert_eq!(parse(&calls(MAX_TOOL_CALLS)).unwrap().len(), MAX_TOOL_CALLS);
    assert_eq!(
        parse(&calls(MAX_TOOL_CALLS + 1)).unwrap_err(),
        ResponseError::TooManyToolCalls { count: MAX_TOOL_CALLS + 1 }
    );
    // An escaped string is decoded into the scratch buffer: 64 bytes here.
    let long = format!(r#"{{"content":"\n{}"}}"#, "x".repeat(63));
    assert_eq!(parse(&message(&long)).unwrap(), [format!("text \n{}", "x".repeat(63))]);
    let longer = format!(r#"{{"content":"\n{}"}}"#, "x".repeat(64));
    assert_eq!(
        parse(&message(&longer)).unwrap_err(),
        ResponseError::Scratch { path: ResponsePath::MessageField("content"), capacity: 64 }
    );
    // A lone surrogate cannot be UTF-8.
    assert!(matches!(
        parse(&message(r#"{"content":"\ud800"}"#)),
        Err(ResponseError::Scratch { .. })
    ));
    // Nesting past the bound is refused, not recursed into.
    let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
    assert!(matches!(parse(&deep), Err(ResponseError::Json { .. })));
}

#[test]
fn a_reply_too_large_for_the_store_is_not_half_appended() {
    let body = message(
        r#"{"content":"0123456789","tool_calls":[{"id":"c1","function":{"name":"Read","arguments":"{}"}}]}"#,
    );
    let mut scratch = [0u8; 8];
    let reply = ChatResponse::parse(body.as_bytes(), &mut scratch).unwrap();
    // Room for the name, the text and the call's id, not its name.
    let mut store = ContextStore::<4, 4, 20>::new();
    store.push_message(Role::User, "u", &[Block::Other]).unwrap();
    let before = store.message_count();
    assert!(store.push_message(Role::Assistant, "agent", reply.blocks()).is_err());
    assert_eq!(store.message_count(), before);
}

proptest! {
    /// No body makes the reader panic, and what it accepts it reads again
    /// the same way (the blocks borrow the body or the scratch buffer).
    #[test]
    fn any_body_is_read_or_refused(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut scratch = [0u8; 32];
        let _ = ChatResponse::parse(&body, &mut scratch);
        let _ = ChatResponse::parse_stream(&body, &mut scratch);
    }

    /// Streamed chunks of any shape are read or refused, never panic, and
    /// never give more calls than fit.
    #[test]
    fn any_stream_is_read_or_refused(
        deltas in proptest::collection::vec(
            ("[a-z\" ]{0,4}", 0u8..12, prop::option::of("[a-c]{0,2}"), prop::option::of("[A-C]{0,2}"), "[{}a:]{0,3}"),
            0..12,
        ),
    ) {
        let body: String = deltas.iter().map(|(text, index, id, name, args)| {
            let id = id.as_ref().map_or(String::new(), |id| format!(r#","id":"{id}""#));
            let name = name.as_ref().map_or(String::new(), |n| format!(r#""name":"{n}","#));
            format!(
                "data: {{\"choices\":[{{\"delta\":{{\"content\":{:?},\"tool_calls\":[{{\"index\":{index}{id},\"function\":{{{name}\"arguments\":{:?}}}}}]}}}}]}}\n\n",
                text, args
            )
        }).collect();
        let mut scratch = [0u8; 256];
        if let Ok(reply) = ChatResponse::parse_stream(body.as_bytes(), &mut scratch) {
            prop_assert!(reply.blocks().len() <= MAX_TOOL_CALLS + 2);
        }
    }

    /// A request's own tool calls, sent back as a reply, read back as the
    /// same blocks.
    #[test]
    fn a_reply_reads_back_what_was_written(
        text in "[a-z\"\\\\\n é]{0,12}",
        calls in proptest::collection::vec(("[a-z0-9]{1,4}", "[A-Za-z]{1,6}", "[{}\":a-z0-9 ]{0,12}"), 0..MAX_TOOL_CALLS),
    ) {
        let mut out = Vec::new();
        out.extend_from_slice(br#"{"choices":[{"message":{"content":"#);
        request::write_str(&mut out, &text).unwrap();
        out.extend_from_slice(br#","tool_calls":["#);
        for (i, (id, name, input)) in calls.iter().enumerate() {
            if i > 0 { out.push(b','); }
            out.extend_from_slice(br#"{"id":"#);
            request::write_str(&mut out, id).unwrap();
            out.extend_from_slice(br#","type":"function","function":{"name":"#);
            request::write_str(&mut out, name).unwrap();
            out.extend_from_slice(br#","arguments":"#);
            request::write_str(&mut out, input).unwrap();
            out.extend_from_slice(b"}}");
        }
        out.extend_from_slice(b"]}}]}");
        let mut scratch = vec![0u8; out.len()];
        let reply = ChatResponse::parse(&out, &mut scratch).unwrap();
        let mut want: Vec<String> = Vec::new();
        if !text.is_empty() { want.push(format!("text {text}")); }
        for (id, name, input) in &calls { want.push(format!("call {id} {name} {input}")); }
        let got: Vec<String> = reply.blocks().iter().map(|b| match b {
            Block::Text(t) => format!("text {t}"),
            Block::ToolCall { id, name, input } => format!("call {id} {name} {input}"),
            other => format!("{other:?}"),
        }).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn the_request_is_one_json_value_and_its_length_is_body_len() {
    let blocks = [
        Block::Text("a\u{1}\"\\"),
        Block::Hint {
            source: None,
            text: crate::conversation::HintText::Parts(&[]),
            created_at: None,
        },
        Block::Other,
    ];
    let context = [SliceMessage { role: Role::Assistant, name: "R", blocks: &blocks }];
    let request =
        ChatRequest { model: "m", tools: Some("[]"), stream: true, ..ChatRequest::default() };
    let mut out = Vec::new();
    request.write_body(&SliceConversation(&context), &mut out).unwrap();
    assert_eq!(out.len(), request.body_len(&SliceConversation(&context)));
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        r#"{"model":"m","messages":[{"role":"system","name":"system","content":[{"type":"text","text":""}]},{"role":"assistant","name":"R","content":[{"type":"text","text":"a\u0001\"\\"}]}],"tools":[],"stream":true}"#
    );
    let _ = context[0].block_count();
}

/// The blocks a streamed reply gives, as text.
fn stream(events: &[&str]) -> Result<Vec<String>, ResponseError> {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    let mut scratch = [0u8; 512];
    let reply = ChatResponse::parse_stream(body.as_bytes(), &mut scratch)?;
    Ok(reply.blocks().iter().map(|b| format!("{b:?}")).collect())
}

/// A chunk of `delta`.
fn chunk(delta: &str) -> String {
    format!(
        r#"{{"id":"x","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}]}}"#
    )
}

#[test]
fn a_streamed_reply_accumulates_as_agentscope_does() {
    let events = [
        chunk(r#"{"role":"assistant","content":""}"#),
        chunk(r#"{"reasoning_content":"hm"}"#),
        chunk(r#"{"content":"Opening \"vent\" "}"#),
        chunk(r#"{"content":"2."}"#),
        // Two calls by index; the id and name come once, the arguments in
        // pieces, interleaved.
        chunk(
            r#"{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"OpenVent","arguments":"{\"ve"}}]}"#,
        ),
        chunk(
            r#"{"tool_calls":[{"index":1,"id":"c2","function":{"name":"Water","arguments":""}}]}"#,
        ),
        chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"nt\": 2}"}}]}"#),
        chunk(r#"{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}"#),
        r#"{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.into(),
        // A usage chunk has no choice.
        r#"{"id":"x","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}"#.into(),
        "[DONE]".into(),
        // Nothing after [DONE] is read.
        "not json".into(),
    ];
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    assert_eq!(
        stream(&refs).unwrap(),
        [
            "Other",
            r#"Text("Opening \"vent\" 2.")"#,
            r#"ToolCall { id: "c1", name: "OpenVent", input: "{\"vent\": 2}" }"#,
            r#"ToolCall { id: "c2", name: "Water", input: "{}" }"#,
        ]
    );
    let body: String = refs.iter().map(|e| format!("data: {e}\r\n\r\n")).collect();
    let mut scratch = [0u8; 512];
    let reply = ChatResponse::parse_stream(body.as_bytes(), &mut scratch).unwrap();
    assert_eq!(reply.finish_reason(), Some("tool_calls"));
    assert_eq!((reply.prompt_tokens(), reply.completion_tokens()), (Some(12), Some(3)));
}

#[test]
fn a_streamed_block_s_place_is_where_it_first_appeared() {
    // A text after a call comes after it; an empty content is no text; a
    // call with no name is `unknown`; a delta with another id for the same
    // index is another block (AgentScope keys its blocks by id), named as
    // its delta says; a delta with no id goes to its index's first block.
    let events = [
        chunk(r#"{"tool_calls":[{"index":0,"id":"a","function":{"arguments":"1"}}]}"#),
        chunk(r#"{"content":""}"#),
        chunk(r#"{"content":"done"}"#),
        chunk(r#"{"tool_calls":[{"index":0,"id":"b","function":{"name":"X","arguments":"2"}}]}"#),
        chunk(r#"{"tool_calls":[{"index":0,"function":{"arguments":"3"}}]}"#),
    ];
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    assert_eq!(
        stream(&refs).unwrap(),
        [
            r#"ToolCall { id: "a", name: "unknown", input: "13" }"#,
            r#"Text("done")"#,
            r#"ToolCall { id: "b", name: "X", input: "2" }"#,
        ]
    );
    // No event at all: no block.
    assert_eq!(stream(&[]).unwrap(), Vec::<String>::new());
}

#[test]
fn a_malformed_stream_names_the_event_and_the_field() {
    let err = stream(&[&chunk(r#"{"content":"a"}"#), "{nope"]).unwrap_err();
    assert!(matches!(err, ResponseError::Json { .. }), "{err}");
    let err = stream(&[&chunk(r#"{"content":5}"#)]).unwrap_err();
    assert_eq!(err.to_string(), "data event 0: choices[0].delta.content: expected a string");
    let err = stream(&[&chunk(r#"{"content":"a"}"#), &chunk(r#"{"tool_calls":[{"id":"c"}]}"#)])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "data event 1: choices[0].delta.tool_calls[].index: expected a whole number"
    );
    let err = stream(&[&chunk(r#"{"tool_calls":[{"index":0}]}"#)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "data event 0: choices[0].delta.tool_calls[].id: expected a string"
    );
    let err = stream(&[r#"{"choices":[{"index":0}]}"#]).unwrap_err();
    assert_eq!(err.to_string(), "data event 0: choices[0].delta: expected an object");
    // More calls than fit, and strings that do not fit the scratch buffer.
    let calls: Vec<String> = (0..=MAX_TOOL_CALLS)
        .map(|i| chunk(&format!(r#"{{"tool_calls":[{{"index":{i},"id":"c{i}","function":{{"name":"T","arguments":"{{}}"}}}}]}}"#)))
        .collect();
    let refs: Vec<&str> = calls.iter().map(String::as_str).collect();
    assert_eq!(stream(&refs).unwrap_err(), ResponseError::TooManyToolCalls { count: 9 });
    let body = format!("data: {}\n\n", chunk(r#"{"content":"0123456789"}"#));
    let err = ChatResponse::parse_stream(body.as_bytes(), &mut [0u8; 4]).unwrap_err();
    assert_eq!(
        err,
        ResponseError::Scratch { path: ResponsePath::MessageField("content"), capacity: 4 }
    );
}

#[test]
fn a_streamed_reply_and_the_same_reply_whole_give_the_same_blocks() {
    let whole = message(
        r#"{"role":"assistant","content":"Vent \"2\" is open.","tool_calls":[{"id":"c1","type":"function","function":{"name":"OpenVent","arguments":"{\"vent\": 2}"}}]}"#,
    );
    let events = [
        chunk(r#"{"role":"assistant","content":""}"#),
        chunk(r#"{"content":"Vent \"2\""}"#),
        chunk(r#"{"content":" is open."}"#),
        chunk(
            r#"{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"OpenVent","arguments":"{\"vent\": 2}"}}]}"#,
        ),
    ];
    let refs: Vec<&str> = events.iter().map(String::as_str).collect();
    let blocks = |body: &[u8], streamed: bool| {
        let mut scratch = [0u8; 128];
        let reply = match streamed {
            true => ChatResponse::parse_stream(body, &mut scratch).unwrap(),
            false => ChatResponse::parse(body, &mut scratch).unwrap(),
        };
        format!("{:?}", reply.blocks())
    };
    let body: String = refs.iter().map(|e| format!("data: {e}\n\n")).collect();
    assert_eq!(blocks(body.as_bytes(), true), blocks(whole.as_bytes(), false));
}
