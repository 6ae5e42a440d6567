//! The request body, written in pieces: AgentScope 2.0.11's
//! `OpenAIChatFormatter.format` over the blocks a [`Conversation`] holds.

use embedded_io::Write;

use crate::conversation::{Block, Conversation, HintText, Message};

/// A Chat Completions request (`POST /v1/chat/completions`) for a context,
/// as AgentScope's `OpenAIChatFormatter` formats
/// `[SystemMsg(system_prompt)] + [UserMsg(summary) if any] + context`.
///
/// [`write_body`](Self::write_body) writes the body into any
/// [`embedded_io::Write`] as it goes (no heap, no buffer the size of the
/// body); [`body_len`](Self::body_len) is its length, for a
/// `Content-Length` header. The same inputs always give the same bytes, so
/// a request is a byte-exact prefix of the next one until the context is
/// compressed or a message's last segment grows (docs/openai.md).
///
/// What the formatter does, and so this writer:
///
/// - the system message is always sent, even for `""`; the summary only
///   when not empty, as a user message named `user`;
/// - a message's text blocks and tool calls gather into one message
///   (`content` `null` when it has calls and no text); a hint or a tool
///   result first sends what was gathered, so one message can become
///   several;
/// - a hint is a user message with no `name`, a [`HintText::Parts`] hint
///   one text part per part (none at all for an empty list);
/// - a tool result is a `tool` message whose `content` is its output;
/// - a message with neither text nor calls is left out; empty texts are
///   kept; [`Block::Other`] (thinking, data) is never sent.
///
/// ```
/// use envaware::openai::ChatRequest;
/// use envaware::{Block, Role, SliceConversation, SliceMessage, ToolResultState};
///
/// let reply = [
///     Block::Text("Opening vent 2."),
///     Block::ToolCall { id: "c1", name: "OpenVent", input: "{\"vent\": 2}" },
///     Block::ToolResult { id: "c1", name: "OpenVent", state: ToolResultState::Error, output: "stalled" },
/// ];
/// let context = [
///     SliceMessage { role: Role::User, name: "user", blocks: &[Block::Text("Cool the greenhouse.")] },
///     SliceMessage { role: Role::Assistant, name: "Rover", blocks: &reply },
/// ];
/// let request = ChatRequest { model: "gpt-4o-mini", system_prompt: "You run a greenhouse.", ..ChatRequest::default() };
/// let mut body = [0u8; 1024];
/// let mut out = &mut body[..];
/// request.write_body(&SliceConversation(&context), &mut out).unwrap();
/// let written = 1024 - out.len();
/// assert_eq!(written, request.body_len(&SliceConversation(&context)));
/// let body = core::str::from_utf8(&body[..written]).unwrap();
/// assert!(body.starts_with(r#"{"model":"gpt-4o-mini","messages":[{"role":"system","name":"system","content":[{"type":"text","text":"You run a greenhouse."}]},"#));
/// assert!(body.contains(r#"{"role":"tool","tool_call_id":"c1","content":"stalled","name":"OpenVent"}"#));
/// assert!(body.ends_with(r#"],"stream":false}"#));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatRequest<'a> {
    /// The `model` field.
    pub model: &'a str,
    /// The agent's system prompt: the first message, always sent.
    pub system_prompt: &'a str,
    /// The compressed summary AgentScope's `_prepare_model_input` puts
    /// after the system prompt; sent only when not empty.
    pub summary: Option<&'a str>,
    /// The `tools` array as raw JSON, written as it is; `None` leaves the
    /// key out.
    pub tools: Option<&'a str>,
    /// The `stream` field.
    pub stream: bool,
}

impl ChatRequest<'_> {
    /// Writes the whole body: `{"model":…,"messages":[…],"tools":…,"stream":…}`.
    ///
    /// # Errors
    ///
    /// The first error `out` returns; what was written before it stays
    /// written.
    pub fn write_body<C: Conversation, W: Write>(
        &self,
        context: &C,
        out: &mut W,
    ) -> Result<(), W::Error> {
        out.write_all(b"{\"model\":")?;
        write_str(out, self.model)?;
        out.write_all(b",\"messages\":")?;
        self.write_messages(context, out)?;
        if let Some(tools) = self.tools {
            out.write_all(b",\"tools\":")?;
            out.write_all(tools.as_bytes())?;
        }
        out.write_all(if self.stream { b",\"stream\":true}" } else { b",\"stream\":false}" })
    }

    /// The number of bytes [`write_body`](Self::write_body) writes.
    pub fn body_len<C: Conversation>(&self, context: &C) -> usize {
        let mut count = Count(0);
        // `Count` never fails.
        let _ = self.write_body(context, &mut count);
        count.0
    }

    /// Writes only the `messages` array, as AgentScope's formatter returns it.
    ///
    /// # Errors
    ///
    /// The first error `out` returns.
    pub fn write_messages<C: Conversation, W: Write>(
        &self,
        context: &C,
        out: &mut W,
    ) -> Result<(), W::Error> {
        let mut list = List { out, first: true };
        list.open_message(b"{\"role\":\"system\",\"name\":\"system\",\"content\":[")?;
        write_text_part(list.out, self.system_prompt)?;
        list.out.write_all(b"]}")?;
        if let Some(summary) = self.summary.filter(|s| !s.is_empty()) {
            list.open_message(b"{\"role\":\"user\",\"name\":\"user\",\"content\":[")?;
            write_text_part(list.out, summary)?;
            list.out.write_all(b"]}")?;
        }
        for index in (0..context.message_count()).rev() {
            if let Some(message) = context.newest(index) {
                list.message(&message)?;
            }
        }
        // The system message always opened the list.
        list.out.write_all(b"]")
    }
}

/// The `messages` array being written: `[` before the first, `,` between.
struct List<'w, W> {
    out: &'w mut W,
    first: bool,
}

impl<W: Write> List<'_, W> {
    fn open_message(&mut self, head: &[u8]) -> Result<(), W::Error> {
        self.out.write_all(if core::mem::replace(&mut self.first, false) { b"[" } else { b"," })?;
        self.out.write_all(head)
    }

    /// One context message: its segments, each cut by a hint or a tool
    /// result, which are messages of their own.
    fn message<M: Message>(&mut self, message: &M) -> Result<(), W::Error> {
        let count = message.block_count();
        let mut start = 0;
        for index in 0..count {
            match message.block(index) {
                Some(Block::Hint { text, .. }) => {
                    self.segment(message, start..index)?;
                    self.hint(text)?;
                    start = index + 1;
                }
                Some(Block::ToolResult { id, name, output, .. }) => {
                    self.segment(message, start..index)?;
                    self.open_message(b"{\"role\":\"tool\",\"tool_call_id\":")?;
                    write_str(self.out, id)?;
                    self.out.write_all(b",\"content\":")?;
                    write_str(self.out, output)?;
                    self.out.write_all(b",\"name\":")?;
                    write_str(self.out, name)?;
                    self.out.write_all(b"}")?;
                    start = index + 1;
                }
                _ => {}
            }
        }
        self.segment(message, start..count)
    }

    /// The text blocks and tool calls of `blocks` as one message, unless
    /// there are none: read twice rather than held.
    fn segment<M: Message>(
        &mut self,
        message: &M,
        blocks: core::ops::Range<usize>,
    ) -> Result<(), W::Error> {
        let kept = |want_text: bool| {
            blocks.clone().filter_map(|i| message.block(i)).filter(move |b| match b {
                Block::Text(_) => want_text,
                Block::ToolCall { .. } => !want_text,
                _ => false,
            })
        };
        let has_text = kept(true).next().is_some();
        let has_calls = kept(false).next().is_some();
        if !has_text && !has_calls {
            return Ok(());
        }
        self.open_message(b"{\"role\":")?;
        write_str(self.out, message.role().name())?;
        self.out.write_all(b",\"name\":")?;
        write_str(self.out, message.name())?;
        self.out.write_all(b",\"content\":")?;
        if has_text {
            let mut sep = b"[";
            for block in kept(true) {
                if let Block::Text(text) = block {
                    self.out.write_all(sep)?;
                    write_text_part(self.out, text)?;
                    sep = b",";
                }
            }
            self.out.write_all(b"]")?;
        } else {
            self.out.write_all(b"null")?;
        }
        if has_calls {
            let mut sep: &[u8] = b",\"tool_calls\":[";
            for block in kept(false) {
                if let Block::ToolCall { id, name, input } = block {
                    self.out.write_all(sep)?;
                    self.out.write_all(b"{\"id\":")?;
                    write_str(self.out, id)?;
                    self.out.write_all(b",\"type\":\"function\",\"function\":{\"name\":")?;
                    write_str(self.out, name)?;
                    self.out.write_all(b",\"arguments\":")?;
                    write_str(self.out, input)?;
                    self.out.write_all(b"}}")?;
                    sep = b",";
                }
            }
            self.out.write_all(b"]")?;
        }
        self.out.write_all(b"}")
    }

    /// A hint: a user message with no name; a list hint with no part is
    /// not sent.
    fn hint(&mut self, text: HintText<'_>) -> Result<(), W::Error> {
        let parts = text.parts();
        if parts.is_empty() {
            return Ok(());
        }
        self.open_message(b"{\"role\":\"user\",\"content\":[")?;
        let mut sep: &[u8] = b"";
        for part in parts {
            self.out.write_all(sep)?;
            write_text_part(self.out, part)?;
            sep = b",";
        }
        self.out.write_all(b"]}")
    }
}

/// `{"type":"text","text":…}`.
fn write_text_part<W: Write>(out: &mut W, text: &str) -> Result<(), W::Error> {
    out.write_all(b"{\"type\":\"text\",\"text\":")?;
    write_str(out, text)?;
    out.write_all(b"}")
}

/// `text` as a JSON string: UTF-8 as it is, `"` `\` and control
/// characters escaped, as serde_json escapes them.
pub(crate) fn write_str<W: Write>(out: &mut W, text: &str) -> Result<(), W::Error> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.write_all(b"\"")?;
    let bytes = text.as_bytes();
    let mut clean = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.write_all(bytes.get(clean..i).unwrap_or_default())?;
        if short.is_empty() {
            out.write_all(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ])?;
        } else {
            out.write_all(short)?;
        }
        clean = i + 1;
    }
    out.write_all(bytes.get(clean..).unwrap_or_default())?;
    out.write_all(b"\"")
}

/// A writer that only counts.
struct Count(usize);

impl embedded_io::ErrorType for Count {
    type Error = core::convert::Infallible;
}

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
