//! The conversation view: how the rules read an agent's context.

use crate::time::CreatedAt;

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Role {
    /// A user message.
    User,
    /// An assistant (agent) message: the only role whose blocks are scanned.
    Assistant,
    /// A system message.
    System,
}

impl Role {
    /// Parses AgentScope's role string (`"user"`, `"assistant"`, `"system"`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "system" => Some(Role::System),
            _ => None,
        }
    }

    /// AgentScope's name for the role.
    pub fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        }
    }
}

/// The state of a tool result, as AgentScope's `ToolResultState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ToolResultState {
    /// The tool succeeded.
    Success,
    /// The tool failed: the only state the repeated-failure rule counts.
    Error,
    /// The tool was interrupted.
    Interrupted,
    /// The call was denied by the permission system.
    Denied,
    /// The tool is still running (AgentScope's default state).
    Running,
}

impl ToolResultState {
    /// Parses AgentScope's state string.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "success" => Some(Self::Success),
            "error" => Some(Self::Error),
            "interrupted" => Some(Self::Interrupted),
            "denied" => Some(Self::Denied),
            "running" => Some(Self::Running),
            _ => None,
        }
    }

    /// AgentScope's name for the state.
    pub fn name(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Interrupted => "interrupted",
            Self::Denied => "denied",
            Self::Running => "running",
        }
    }
}

/// The text of a hint block.
///
/// AgentScope allows a hint to be a plain string or a list of blocks; the
/// rules read the concatenation of the list's text blocks (joined with `""`).
/// Callers pass only the text parts, in order.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HintText<'a> {
    /// A plain string hint.
    Single(&'a str),
    /// The text parts of a list hint, to be read as one concatenated string.
    Parts(&'a [&'a str]),
}

impl<'a> HintText<'a> {
    /// The text parts, in order (one part for a plain string).
    pub fn parts(&self) -> &[&'a str] {
        match self {
            HintText::Single(s) => core::slice::from_ref(s),
            HintText::Parts(p) => p,
        }
    }
}

/// One content block of a message, as the rules see it.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Block<'a> {
    /// A hint block (`HintBlock`): injected runtime state or another hint.
    Hint {
        /// The hint's source; injections are recognised by it.
        source: Option<&'a str>,
        /// The hint's text.
        text: HintText<'a>,
        /// When the hint was created (`created_at`): the instant a watch's
        /// time rules count from; `None` when unknown.
        created_at: Option<CreatedAt>,
    },
    /// A tool call (`ToolCallBlock`).
    ToolCall {
        /// The call id, which its result repeats.
        id: &'a str,
        /// The tool name.
        name: &'a str,
        /// The raw argument string, as the model produced it.
        input: &'a str,
    },
    /// A tool result (`ToolResultBlock`).
    ToolResult {
        /// The id of the call this result answers.
        id: &'a str,
        /// The tool name.
        name: &'a str,
        /// The execution state.
        state: ToolResultState,
        /// The tool's output as the model is sent it (AgentScope's
        /// `convert_tool_result_to_string`: a list's text blocks joined with
        /// `"\n"`); the rules never read it, a request
        /// (module `openai`, feature `openai`) does. `""` when not kept.
        output: &'a str,
    },
    /// A text block (`TextBlock`): never read by the rules, sent in a
    /// request (module `openai`, feature `openai`).
    Text(&'a str),
    /// Any other block (thinking, data): kept, never read and never sent.
    Other,
}

/// One message of the conversation.
pub trait Message {
    /// The sender's role.
    fn role(&self) -> Role;
    /// The sender's name.
    fn name(&self) -> &str;
    /// How many content blocks the message holds.
    fn block_count(&self) -> usize;
    /// Block `index`, oldest first; `None` past the end.
    fn block(&self, index: usize) -> Option<Block<'_>>;
}

impl<M: Message + ?Sized> Message for &M {
    fn role(&self) -> Role {
        (**self).role()
    }
    fn name(&self) -> &str {
        (**self).name()
    }
    fn block_count(&self) -> usize {
        (**self).block_count()
    }
    fn block(&self, index: usize) -> Option<Block<'_>> {
        (**self).block(index)
    }
}

/// A conversation the rules can read, newest message first.
///
/// The rules never own the context. They read it through [`Conversation`],
/// newest message first, so a caller can keep its messages anywhere: in the
/// fixed-capacity [`ContextStore`](crate::store::ContextStore) shipped with
/// this crate, in a host `Vec`, or in flash.
pub trait Conversation {
    /// The view of one message.
    type Message<'m>: Message
    where
        Self: 'm;

    /// How many messages there are.
    fn message_count(&self) -> usize;

    /// The message `index` places before the newest (`0` is the newest);
    /// `None` past the oldest.
    fn newest(&self, index: usize) -> Option<Self::Message<'_>>;
}

/// A view of a conversation that counts the messages read through it
/// ([`AgentContext::messages_read`](crate::AgentContext::messages_read),
/// and the tests that show a decision's cost).
pub(crate) struct Counted<'c, C> {
    inner: &'c C,
    reads: core::cell::Cell<usize>,
}

impl<'c, C> Counted<'c, C> {
    /// A view of `inner` that has read nothing yet.
    pub(crate) fn new(inner: &'c C) -> Self {
        Counted { inner, reads: core::cell::Cell::new(0) }
    }

    /// The messages read through this view so far.
    pub(crate) fn reads(&self) -> usize {
        self.reads.get()
    }
}

impl<C: Conversation> Conversation for Counted<'_, C> {
    type Message<'m>
        = C::Message<'m>
    where
        Self: 'm;

    fn message_count(&self) -> usize {
        self.inner.message_count()
    }

    fn newest(&self, index: usize) -> Option<Self::Message<'_>> {
        self.reads.set(self.reads.get() + 1);
        self.inner.newest(index)
    }
}

/// A message held as plain slices: handy for tests and host tools.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SliceMessage<'a> {
    /// The sender's role.
    pub role: Role,
    /// The sender's name.
    pub name: &'a str,
    /// The content blocks, oldest first.
    pub blocks: &'a [Block<'a>],
}

impl Message for SliceMessage<'_> {
    fn role(&self) -> Role {
        self.role
    }
    fn name(&self) -> &str {
        self.name
    }
    fn block_count(&self) -> usize {
        self.blocks.len()
    }
    fn block(&self, index: usize) -> Option<Block<'_>> {
        self.blocks.get(index).copied()
    }
}

/// A conversation held as a slice of messages, oldest first.
#[derive(Debug, Clone, Copy)]
pub struct SliceConversation<'a>(pub &'a [SliceMessage<'a>]);

impl<'a> Conversation for SliceConversation<'a> {
    type Message<'m>
        = SliceMessage<'a>
    where
        Self: 'm;

    fn message_count(&self) -> usize {
        self.0.len()
    }

    fn newest(&self, index: usize) -> Option<SliceMessage<'a>> {
        let len = self.0.len();
        if index >= len {
            return None;
        }
        self.0.get(len - 1 - index).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_and_state_names_are_agentscopes_both_ways() {
        for role in [Role::User, Role::Assistant, Role::System] {
            assert_eq!(Role::from_name(role.name()), Some(role));
        }
        assert_eq!(Role::System.name(), "system");
        for state in [
            ToolResultState::Success,
            ToolResultState::Error,
            ToolResultState::Interrupted,
            ToolResultState::Denied,
            ToolResultState::Running,
        ] {
            assert_eq!(ToolResultState::from_name(state.name()), Some(state));
        }
        assert_eq!(ToolResultState::Error.name(), "error");
        // Exact and case-sensitive, as AgentScope's string enums.
        for unknown in ["", "User", "tool", "ERROR", "failed"] {
            assert_eq!(Role::from_name(unknown), None, "{unknown:?}");
            assert_eq!(ToolResultState::from_name(unknown), None, "{unknown:?}");
        }
    }

    #[test]
    fn a_slice_conversation_reads_newest_first() {
        let message = |name| SliceMessage { role: Role::User, name, blocks: &[] };
        let messages = [message("a"), message("b"), message("c")];
        let conversation = SliceConversation(&messages);
        assert_eq!(conversation.message_count(), 3);
        let names: [Option<&str>; 4] =
            core::array::from_fn(|i| conversation.newest(i).map(|m| m.name));
        assert_eq!(names, [Some("c"), Some("b"), Some("a"), None]);
        assert!(SliceConversation(&[]).newest(0).is_none());
    }

    #[test]
    // The borrows are what is tested: `impl Message for &M`.
    #[allow(clippy::needless_borrows_for_generic_args, clippy::needless_borrow)]
    fn a_borrowed_message_reads_as_the_message() {
        fn view<M: Message>(m: M) -> (Role, usize, bool, bool) {
            let call = matches!(m.block(0), Some(Block::ToolCall { id: "c1", .. }));
            (m.role(), m.block_count(), call, m.block(2).is_none())
        }
        let blocks = [Block::ToolCall { id: "c1", name: "OpenVent", input: "{}" }, Block::Other];
        let message = SliceMessage { role: Role::Assistant, name: "rover", blocks: &blocks };
        assert_eq!(view(&message), (Role::Assistant, 2, true, true));
        assert_eq!(view(&&message), view(message));
        assert_eq!(Message::name(&&message), "rover");
    }
}
