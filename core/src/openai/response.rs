//! The model's reply: a Chat Completions response read back into the
//! blocks AgentScope 2.0.11's `OpenAIChatModel._parse_completion_response`
//! makes of it.

use core::fmt;

use crate::conversation::Block;
use crate::json::{self, DecodeError, JsonErrorKind, JsonStr, Kind, Value};

/// The most tool calls one reply may hold.
pub const MAX_TOOL_CALLS: usize = 8;

/// How deep a response may nest (a reply's own fields are 6 deep; tool
/// arguments are a string).
const MAX_DEPTH: usize = 32;

/// A non-streaming Chat Completions response, read.
///
/// [`blocks`](Self::blocks) are what AgentScope appends for the reply, in
/// its order: a thinking block (as [`Block::Other`]) when the message has a
/// non-empty `reasoning_content` (or `reasoning`), a [`Block::Text`] when
/// `content` is not empty, then one [`Block::ToolCall`] per tool call
/// (`id`, `function.name`, `function.arguments` as raw text). Append them
/// with one [`AgentContext::agent`](crate::AgentContext::agent) call: the
/// store takes all or nothing. A response with no choice has no block.
///
/// Strings are borrowed from the body, or, when they hold escapes, decoded
/// into the `scratch` buffer given to [`parse`](Self::parse).
///
/// ```
/// use envaware::openai::ChatResponse;
/// use envaware::Block;
///
/// let body = br#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Opening \"vent\" 2.",
///   "tool_calls":[{"id":"c1","type":"function","function":{"name":"OpenVent","arguments":"{\"vent\": 2}"}}]},
///   "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":9,"total_tokens":129}}"#;
/// let mut scratch = [0u8; 64];
/// let reply = ChatResponse::parse(body, &mut scratch).unwrap();
/// assert!(matches!(reply.blocks(), [Block::Text("Opening \"vent\" 2."), Block::ToolCall { id: "c1", name: "OpenVent", input: "{\"vent\": 2}" }]));
/// assert_eq!(reply.finish_reason(), Some("tool_calls"));
/// assert_eq!(reply.prompt_tokens(), Some(120));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ChatResponse<'a> {
    blocks: [Block<'a>; MAX_TOOL_CALLS + 2],
    len: usize,
    finish_reason: Option<&'a str>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// Where in a response a [`ResponseError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResponsePath {
    /// The whole body.
    Body,
    /// `choices`.
    Choices,
    /// `choices[0]`.
    Choice,
    /// `choices[0].message`.
    Message,
    /// `choices[0].message.<field>` (`content`, `reasoning_content`,
    /// `tool_calls`).
    MessageField(&'static str),
    /// `choices[0].finish_reason`.
    FinishReason,
    /// `choices[0].message.tool_calls[i]`.
    ToolCall(usize),
    /// `choices[0].message.tool_calls[i].<field>` (`id`, `function`,
    /// `function.name`, `function.arguments`).
    ToolCallField(usize, &'static str),
    /// `usage.<field>`.
    Usage(&'static str),
    /// In a streamed reply, data event `n` (from 0), at `<field>`
    /// (`choices[0].delta.content`, `choices[0].delta.tool_calls[].id`, …).
    Event(usize, &'static str),
}

impl fmt::Display for ResponsePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Body => f.write_str("the response"),
            Self::Choices => f.write_str("choices"),
            Self::Choice => f.write_str("choices[0]"),
            Self::Message => f.write_str("choices[0].message"),
            Self::MessageField(name) => write!(f, "choices[0].message.{name}"),
            Self::FinishReason => f.write_str("choices[0].finish_reason"),
            Self::ToolCall(i) => write!(f, "choices[0].message.tool_calls[{i}]"),
            Self::ToolCallField(i, name) => write!(f, "choices[0].message.tool_calls[{i}].{name}"),
            Self::Usage("") => f.write_str("usage"),
            Self::Usage(name) => write!(f, "usage.{name}"),
            Self::Event(n, "") => write!(f, "data event {n}"),
            Self::Event(n, field) => write!(f, "data event {n}: {field}"),
        }
    }
}

/// Why a response was refused: nothing of it is appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResponseError {
    /// The body is not UTF-8.
    NotUtf8,
    /// The body is not JSON.
    Json {
        /// What is wrong.
        kind: JsonErrorKind,
        /// The byte of the body where it was found.
        offset: usize,
    },
    /// A field is missing or has the wrong type.
    Expected {
        /// Where.
        path: ResponsePath,
        /// What it must be.
        expected: &'static str,
    },
    /// More tool calls than [`MAX_TOOL_CALLS`].
    TooManyToolCalls {
        /// How many the reply holds.
        count: usize,
    },
    /// A string with escapes does not fit what is left of the scratch
    /// buffer, or holds a lone surrogate.
    Scratch {
        /// The string.
        path: ResponsePath,
        /// The buffer's size.
        capacity: usize,
    },
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotUtf8 => f.write_str("the response is not UTF-8"),
            Self::Json { kind, offset } => {
                write!(f, "the response is not JSON: {kind} at byte {offset}")
            }
            Self::Expected { path, expected } => write!(f, "{path}: expected {expected}"),
            Self::TooManyToolCalls { count } => write!(
                f,
                "choices[0].message.tool_calls: {count} tool calls, at most {MAX_TOOL_CALLS} fit"
            ),
            Self::Scratch { path, capacity } => write!(
                f,
                "{path}: the decoded string does not fit the {capacity}-byte scratch buffer (or holds a lone surrogate)"
            ),
        }
    }
}

impl<'a> ChatResponse<'a> {
    /// Reads a response body. Strings with escapes are decoded into
    /// `scratch`; the reply's texts never need more than the body's size.
    ///
    /// # Errors
    ///
    /// A [`ResponseError`] naming the field; a field AgentScope does not
    /// read is not checked.
    pub fn parse(body: &'a [u8], scratch: &'a mut [u8]) -> Result<Self, ResponseError> {
        let capacity = scratch.len();
        let text = core::str::from_utf8(body).map_err(|_| ResponseError::NotUtf8)?;
        let root = json::parse(text, MAX_DEPTH)
            .map_err(|e| ResponseError::Json { kind: e.kind, offset: e.offset })?;
        let mut reply = ChatResponse {
            blocks: [Block::Other; MAX_TOOL_CALLS + 2],
            len: 0,
            finish_reason: None,
            prompt_tokens: None,
            completion_tokens: None,
        };
        let mut read = Reader { scratch, capacity };
        object(root, ResponsePath::Body)?;
        if let Some(usage) = member(root, "usage").filter(|u| u.kind() != Kind::Null) {
            object(usage, ResponsePath::Usage(""))?;
            reply.prompt_tokens = count(usage, "prompt_tokens")?;
            reply.completion_tokens = count(usage, "completion_tokens")?;
        }
        let choices = member(root, "choices").filter(|c| c.kind() != Kind::Null);
        let Some(choice) = choices.map(|c| array(c, ResponsePath::Choices)).transpose()? else {
            return Ok(reply);
        };
        let Some(choice) = choice.items().next() else { return Ok(reply) };
        object(choice, ResponsePath::Choice)?;
        reply.finish_reason = match member(choice, "finish_reason") {
            None => None,
            Some(v) if v.kind() == Kind::Null => None,
            Some(v) => Some(read.str(v, ResponsePath::FinishReason)?),
        };
        let message = member(choice, "message").ok_or(ResponseError::Expected {
            path: ResponsePath::Message,
            expected: "an object",
        })?;
        object(message, ResponsePath::Message)?;
        let reasoning = ["reasoning_content", "reasoning"]
            .into_iter()
            .find_map(|name| member(message, name).filter(|v| v.kind() == Kind::String));
        if reasoning.and_then(|r| r.as_str()).is_some_and(|s| !s.raw().is_empty()) {
            reply.push(Block::Other);
        }
        if let Some(content) = read.optional_str(message, "content")? {
            if !content.is_empty() {
                reply.push(Block::Text(content));
            }
        }
        let calls = member(message, "tool_calls").filter(|c| c.kind() != Kind::Null);
        if let Some(calls) = calls {
            array(calls, ResponsePath::MessageField("tool_calls"))?;
            let count = calls.items().count();
            if count > MAX_TOOL_CALLS {
                return Err(ResponseError::TooManyToolCalls { count });
            }
            for (i, call) in calls.items().enumerate() {
                object(call, ResponsePath::ToolCall(i))?;
                let id = read.field_str(call, "id", ResponsePath::ToolCallField(i, "id"))?;
                let function = member(call, "function").ok_or(ResponseError::Expected {
                    path: ResponsePath::ToolCallField(i, "function"),
                    expected: "an object",
                })?;
                object(function, ResponsePath::ToolCallField(i, "function"))?;
                let name = read.field_str(
                    function,
                    "name",
                    ResponsePath::ToolCallField(i, "function.name"),
                )?;
                let input = read.field_str(
                    function,
                    "arguments",
                    ResponsePath::ToolCallField(i, "function.arguments"),
                )?;
                reply.push(Block::ToolCall { id, name, input });
            }
        }
        Ok(reply)
    }

    /// Reads a streamed reply: the body of a `stream: true` response, its
    /// Server-Sent Events (`data: {chunk}` lines, up to `data: [DONE]`),
    /// accumulated as AgentScope 2.0.11's
    /// `OpenAIChatModel._parse_stream_response` and its `ChatResponse`
    /// accumulate them: the deltas' `content` joined into one text, a
    /// thinking block when a delta has a non-empty `reasoning_content` (or
    /// `reasoning`), and one tool call per block id (a delta's `id`, else the
    /// first `id` of its `index`), its name the first one given for the
    /// index (`unknown` when none), its arguments the deltas' joined; the
    /// blocks in the order each first appeared. `usage` and
    /// `finish_reason` are the last ones given. The accumulated strings are
    /// written into `scratch`; at most [`MAX_TOOL_CALLS`] calls.
    ///
    /// ```
    /// use envaware::openai::ChatResponse;
    /// use envaware::Block;
    ///
    /// let body = concat!(
    ///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Opening \"}}]}\n\n",
    ///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"vent 2.\"}}]}\n\n",
    ///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"OpenVent\",\"arguments\":\"{\\\"vent\"}}]}}]}\n\n",
    ///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\": 2}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
    ///     "data: [DONE]\n\n",
    /// );
    /// let mut scratch = [0u8; 64];
    /// let reply = ChatResponse::parse_stream(body.as_bytes(), &mut scratch)?;
    /// assert!(matches!(reply.blocks(), [Block::Text("Opening vent 2."), Block::ToolCall { id: "c1", name: "OpenVent", input: "{\"vent\": 2}" }]));
    /// assert_eq!(reply.finish_reason(), Some("tool_calls"));
    /// # Ok::<(), envaware::openai::ResponseError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ResponseError`] naming the data event and the field; the
    /// accumulated strings not fitting `scratch`.
    pub fn parse_stream(body: &'a [u8], scratch: &'a mut [u8]) -> Result<Self, ResponseError> {
        let capacity = scratch.len();
        let text = core::str::from_utf8(body).map_err(|_| ResponseError::NotUtf8)?;
        let mut reply = ChatResponse {
            blocks: [Block::Other; MAX_TOOL_CALLS + 2],
            len: 0,
            finish_reason: None,
            prompt_tokens: None,
            completion_tokens: None,
        };
        // The first pass: what the blocks are, in order, and the calls'
        // ids and names; the second joins each block's pieces.
        let mut order = [Piece::Thinking; MAX_TOOL_CALLS + 2];
        let mut blocks = 0;
        let mut calls: [Call<'a>; MAX_TOOL_CALLS] = [Call::EMPTY; MAX_TOOL_CALLS];
        let mut call_count = 0;
        let mut finish = None;
        let seen = |piece: Piece, order: &mut [Piece; MAX_TOOL_CALLS + 2], blocks: &mut usize| {
            if !order.get(..*blocks).unwrap_or_default().contains(&piece) {
                if let Some(slot) = order.get_mut(*blocks) {
                    *slot = piece;
                    *blocks += 1;
                }
            }
        };
        for event in events(text) {
            let (n, chunk) = event?;
            if let Some(usage) = member(chunk, "usage").filter(|u| u.kind() != Kind::Null) {
                object(usage, ResponsePath::Usage(""))?;
                reply.prompt_tokens = count(usage, "prompt_tokens")?;
                reply.completion_tokens = count(usage, "completion_tokens")?;
            }
            let Some(delta) = delta(chunk, n)? else { continue };
            if let Some(f) = member(delta.1, "finish_reason").and_then(|f| f.as_str()) {
                finish = Some(f);
            }
            let delta = delta.0;
            if thinking(delta) {
                seen(Piece::Thinking, &mut order, &mut blocks);
            }
            if content(delta, n)?.is_some_and(|c| !c.raw().is_empty()) {
                seen(Piece::Text, &mut order, &mut blocks);
            }
            for call in tool_calls(delta, n)? {
                let (index, id, name, _) = call?;
                let held = calls.get(..call_count).unwrap_or_default();
                let known = held.iter().position(|c| c.index == index);
                let key = match (id, known.and_then(|k| held.get(k))) {
                    (Some(id), _) if !id.raw().is_empty() => id,
                    (_, Some(call)) => call.id,
                    _ => {
                        let path = ResponsePath::Event(n, "choices[0].delta.tool_calls[].id");
                        return Err(ResponseError::Expected { path, expected: "a string" });
                    }
                };
                if known.is_none() {
                    let slot = calls
                        .get_mut(call_count)
                        .ok_or(ResponseError::TooManyToolCalls { count: call_count + 1 })?;
                    *slot = Call { index, id: key, name: name.filter(|n| !n.raw().is_empty()) };
                    call_count += 1;
                }
                // A block per id: a later delta of the index with another
                // id starts another block (AgentScope keys them by id).
                let same = |c: &Call<'_>| c.id.code_points().eq(key.code_points());
                let block = match calls.get(..call_count).unwrap_or_default().iter().position(same)
                {
                    Some(k) => k,
                    None => {
                        // Its own name, else the one its index was first given.
                        let stored = known.and_then(|k| calls.get(k)).and_then(|c| c.name);
                        let name = name.filter(|n| !n.raw().is_empty()).or(stored);
                        let slot = calls
                            .get_mut(call_count)
                            .ok_or(ResponseError::TooManyToolCalls { count: call_count + 1 })?;
                        *slot = Call { index, id: key, name };
                        call_count += 1;
                        call_count - 1
                    }
                };
                seen(Piece::Call(block), &mut order, &mut blocks);
            }
        }
        let mut rest = scratch;
        let decode = |rest: &mut &'a mut [u8],
                      path,
                      parts: &mut dyn Iterator<Item = JsonStr<'a>>| {
            json::decode_into(rest, parts).map_err(|_| ResponseError::Scratch { path, capacity })
        };
        for piece in order.iter().take(blocks) {
            match *piece {
                Piece::Thinking => reply.push(Block::Other),
                Piece::Text => {
                    let path = ResponsePath::MessageField("content");
                    let mut parts = events(text).filter_map(|e| {
                        let (n, chunk) = e.ok()?;
                        content(delta(chunk, n).ok()??.0, n).ok()?
                    });
                    reply.push(Block::Text(decode(&mut rest, path, &mut parts)?));
                }
                Piece::Call(k) => {
                    let Some(&call) = calls.get(k) else { continue };
                    let path = ResponsePath::ToolCallField(k, "function.arguments");
                    let mut id_part = core::iter::once(call.id);
                    let id = decode(&mut rest, ResponsePath::ToolCallField(k, "id"), &mut id_part)?;
                    let name = match call.name {
                        Some(name) => {
                            let path = ResponsePath::ToolCallField(k, "function.name");
                            decode(&mut rest, path, &mut core::iter::once(name))?
                        }
                        None => "unknown",
                    };
                    // A delta without an id goes to its index's first block.
                    let first_of = move |i: u64| {
                        calls.iter().take(call_count).find(|c| c.index == i).map(|c| c.id)
                    };
                    // One event's calls at a time (`from_fn` keeps one
                    // iterator where nested `flat_map`s kept four: the
                    // stack a streamed reply costs).
                    let mut all = events(text);
                    let mut in_event = None;
                    let mut parts = core::iter::from_fn(move || loop {
                        if let Some(c) = in_event.as_mut().and_then(Iterator::next) {
                            let c: Result<CallDelta<'_>, ResponseError> = c;
                            let Ok((i, id, _, args)) = c else { continue };
                            let key = match id.filter(|id: &JsonStr<'_>| !id.raw().is_empty()) {
                                Some(id) => id,
                                None => match first_of(i) {
                                    Some(id) => id,
                                    None => continue,
                                },
                            };
                            if key.code_points().eq(call.id.code_points()) {
                                if let Some(args) = args {
                                    return Some(args);
                                }
                            }
                            continue;
                        }
                        let (n, chunk) = all.next()?.ok()?;
                        in_event = delta(chunk, n)
                            .ok()
                            .flatten()
                            .and_then(|(delta, _)| tool_calls(delta, n).ok());
                    });
                    let input = decode(&mut rest, path, &mut parts)?;
                    reply.push(Block::ToolCall { id, name, input });
                }
            }
        }
        reply.finish_reason = finish.map(|f| f.raw());
        Ok(reply)
    }

    fn push(&mut self, block: Block<'a>) {
        if let Some(slot) = self.blocks.get_mut(self.len) {
            *slot = block;
            self.len += 1;
        }
    }

    /// The blocks AgentScope appends for this reply, in order.
    pub fn blocks(&self) -> &[Block<'a>] {
        self.blocks.get(..self.len).unwrap_or_default()
    }

    /// The reply's text, if it has one.
    pub fn text(&self) -> Option<&'a str> {
        self.blocks().iter().find_map(|b| match b {
            Block::Text(t) => Some(*t),
            _ => None,
        })
    }

    /// `choices[0].finish_reason` (`"stop"`, `"tool_calls"`, `"length"`…).
    pub fn finish_reason(&self) -> Option<&'a str> {
        self.finish_reason
    }

    /// `usage.prompt_tokens`: the next step's input tokens, for the
    /// context-length rule.
    pub fn prompt_tokens(&self) -> Option<u64> {
        self.prompt_tokens
    }

    /// `usage.completion_tokens`.
    pub fn completion_tokens(&self) -> Option<u64> {
        self.completion_tokens
    }
}

/// A block of a streamed reply, by the order it first appeared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Thinking,
    Text,
    /// The `k`th tool call block.
    Call(usize),
}

/// A streamed tool call block: the index it came at, its id (its key) and
/// the first name given for the index.
#[derive(Debug, Clone, Copy)]
struct Call<'a> {
    index: u64,
    id: JsonStr<'a>,
    name: Option<JsonStr<'a>>,
}

impl Call<'_> {
    const EMPTY: Call<'static> = Call { index: 0, id: JsonStr::EMPTY, name: None };
}

/// The data events of a Server-Sent Events body, up to `data: [DONE]`:
/// each `data:` line's JSON, numbered from 0.
fn events(text: &str) -> impl Iterator<Item = Result<(usize, Value<'_>), ResponseError>> + '_ {
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .take_while(|data| *data != "[DONE]")
        .enumerate()
        .map(move |(n, data)| {
            let offset = (data.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
            let chunk = json::parse(data, MAX_DEPTH)
                .map_err(|e| ResponseError::Json { kind: e.kind, offset: offset + e.offset })?;
            object(chunk, ResponsePath::Event(n, ""))?;
            Ok((n, chunk))
        })
}

/// A chunk's `choices[0]`'s `delta`, and the choice: `None` when the
/// chunk has no choice (a usage chunk).
fn delta<'a>(chunk: Value<'a>, n: usize) -> Result<Option<(Value<'a>, Value<'a>)>, ResponseError> {
    let Some(choices) = member(chunk, "choices").filter(|c| c.kind() != Kind::Null) else {
        return Ok(None);
    };
    array(choices, ResponsePath::Event(n, "choices"))?;
    let Some(choice) = choices.items().next() else { return Ok(None) };
    object(choice, ResponsePath::Event(n, "choices[0]"))?;
    let delta = member(choice, "delta").ok_or(ResponseError::Expected {
        path: ResponsePath::Event(n, "choices[0].delta"),
        expected: "an object",
    })?;
    object(delta, ResponsePath::Event(n, "choices[0].delta"))?;
    Ok(Some((delta, choice)))
}

/// Whether a delta has thinking: a non-empty `reasoning_content`, or when
/// that is not a string, a non-empty `reasoning`.
fn thinking(delta: Value<'_>) -> bool {
    let field = |name| member(delta, name).and_then(|v| v.as_str());
    match member(delta, "reasoning_content").filter(|v| v.kind() == Kind::String) {
        Some(v) => v.as_str().is_some_and(|s| !s.raw().is_empty()),
        None => field("reasoning").is_some_and(|s| !s.raw().is_empty()),
    }
}

/// A delta's `content`: a string, or absent or `null`.
fn content<'a>(delta: Value<'a>, n: usize) -> Result<Option<JsonStr<'a>>, ResponseError> {
    match member(delta, "content") {
        None => Ok(None),
        Some(v) if v.kind() == Kind::Null => Ok(None),
        Some(v) => v.as_str().map(Some).ok_or(ResponseError::Expected {
            path: ResponsePath::Event(n, "choices[0].delta.content"),
            expected: "a string",
        }),
    }
}

/// A tool call delta: its index, id, name and arguments (each optional
/// but the index).
type CallDelta<'a> = (u64, Option<JsonStr<'a>>, Option<JsonStr<'a>>, Option<JsonStr<'a>>);

/// A delta's tool calls.
fn tool_calls<'a>(
    delta: Value<'a>,
    n: usize,
) -> Result<impl Iterator<Item = Result<CallDelta<'a>, ResponseError>> + 'a, ResponseError> {
    let calls = member(delta, "tool_calls").filter(|c| c.kind() != Kind::Null);
    if let Some(calls) = calls {
        array(calls, ResponsePath::Event(n, "choices[0].delta.tool_calls"))?;
    }
    let expected = move |field, expected| ResponseError::Expected {
        path: ResponsePath::Event(n, field),
        expected,
    };
    let optional = move |object: Value<'a>, name, field| match member(object, name) {
        None => Ok(None),
        Some(v) if v.kind() == Kind::Null => Ok(None),
        Some(v) => v.as_str().map(Some).ok_or(expected(field, "a string")),
    };
    Ok(calls.into_iter().flat_map(|c| c.items()).map(move |call| {
        object(call, ResponsePath::Event(n, "choices[0].delta.tool_calls[]"))?;
        let index = member(call, "index")
            .and_then(|i| i.number_text()?.parse().ok())
            .ok_or(expected("choices[0].delta.tool_calls[].index", "a whole number"))?;
        let id = optional(call, "id", "choices[0].delta.tool_calls[].id")?;
        let (mut name, mut args) = (None, None);
        if let Some(f) = member(call, "function").filter(|f| f.kind() != Kind::Null) {
            object(f, ResponsePath::Event(n, "choices[0].delta.tool_calls[].function"))?;
            name = optional(f, "name", "choices[0].delta.tool_calls[].function.name")?;
            args = optional(f, "arguments", "choices[0].delta.tool_calls[].function.arguments")?;
        }
        Ok((index, id, name, args))
    }))
}

/// Reads strings, decoding those with escapes into the scratch buffer.
struct Reader<'s> {
    scratch: &'s mut [u8],
    capacity: usize,
}

impl<'s> Reader<'s> {
    fn str(&mut self, value: Value<'s>, path: ResponsePath) -> Result<&'s str, ResponseError> {
        let s: JsonStr<'s> =
            value.as_str().ok_or(ResponseError::Expected { path, expected: "a string" })?;
        if !s.raw().contains('\\') {
            return Ok(s.raw());
        }
        json::decode_into(&mut self.scratch, core::iter::once(s)).map_err(|e| match e {
            DecodeError::Full | DecodeError::NotUtf8 => {
                ResponseError::Scratch { path, capacity: self.capacity }
            }
        })
    }

    fn field_str(
        &mut self,
        object: Value<'s>,
        name: &'static str,
        path: ResponsePath,
    ) -> Result<&'s str, ResponseError> {
        let value =
            member(object, name).ok_or(ResponseError::Expected { path, expected: "a string" })?;
        self.str(value, path)
    }

    /// A message field that is a string, `null` or absent.
    fn optional_str(
        &mut self,
        message: Value<'s>,
        name: &'static str,
    ) -> Result<Option<&'s str>, ResponseError> {
        match member(message, name) {
            None => Ok(None),
            Some(v) if v.kind() == Kind::Null => Ok(None),
            Some(v) => self.str(v, ResponsePath::MessageField(name)).map(Some),
        }
    }
}

/// Member `name` of an object: the last one, as Python's `json` keeps.
fn member<'a>(object: Value<'a>, name: &str) -> Option<Value<'a>> {
    object.members().filter(|(key, _)| key.eq_str(name)).last().map(|(_, v)| v)
}

fn object(value: Value<'_>, path: ResponsePath) -> Result<(), ResponseError> {
    match value.kind() {
        Kind::Object => Ok(()),
        _ => Err(ResponseError::Expected { path, expected: "an object" }),
    }
}

fn array(value: Value<'_>, path: ResponsePath) -> Result<Value<'_>, ResponseError> {
    match value.kind() {
        Kind::Array => Ok(value),
        _ => Err(ResponseError::Expected { path, expected: "an array" }),
    }
}

/// A token count: absent or `null` is `None`.
fn count(usage: Value<'_>, name: &'static str) -> Result<Option<u64>, ResponseError> {
    match member(usage, name) {
        None => Ok(None),
        Some(v) if v.kind() == Kind::Null => Ok(None),
        Some(v) => {
            v.number_text().and_then(|n| n.parse().ok()).map(Some).ok_or(ResponseError::Expected {
                path: ResponsePath::Usage(name),
                expected: "a whole number",
            })
        }
    }
}

impl core::error::Error for ResponseError {}
