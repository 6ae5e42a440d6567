//! The replay's context: each message as written (AgentScope `Msg` JSON,
//! for `--emit-scenarios`) and as the core reads it, kept side by side so
//! that no step converts the whole context again.
//!
//! Every change goes through a method here that also tells the
//! [`Decider`], so the tracker it holds sees each append and eviction in
//! order, as on a device. Messages are numbered from the first ever held
//! (`sequence`), so that positions survive a compression.

use std::collections::{HashMap, VecDeque};

use envaware::Conversation;
use serde_json::Value;

use super::decide::Decider;
use crate::scenario::{self, OwnedBlock, OwnedMessage, VecConversation};

/// The context as the replay holds it.
#[derive(Debug, Default)]
pub(super) struct Context {
    json: VecDeque<Value>,
    read: VecDeque<OwnedMessage>,
    /// The sequence number of the oldest message held.
    first: u64,
    /// Each tool call id: the newest message holding it, and the name of
    /// its first call there (what a scan from the newest message finds).
    calls: HashMap<String, (u64, String)>,
}

impl Context {
    /// The messages as written, oldest first.
    pub(super) fn json(&self) -> &VecDeque<Value> {
        &self.json
    }

    /// How many messages are held.
    pub(super) fn len(&self) -> usize {
        self.read.len()
    }

    /// The message with sequence number `seq`, if still held.
    pub(super) fn at(&self, seq: u64) -> Option<&OwnedMessage> {
        self.read.get(usize::try_from(seq.checked_sub(self.first)?).ok()?)
    }

    /// The sequence number of the newest message (of the next one when empty).
    pub(super) fn newest_seq(&self) -> u64 {
        self.first + self.read.len() as u64 - u64::from(!self.read.is_empty())
    }

    /// The sequence numbers of the messages held, oldest first.
    pub(super) fn seqs(&self) -> std::ops::Range<u64> {
        self.first..self.first + self.read.len() as u64
    }

    /// The newest message as written, to extend in place.
    pub(super) fn newest_json(&self) -> Option<&Value> {
        self.json.back()
    }

    /// The name of the call with `id` in the newest message holding one.
    pub(super) fn call_name(&self, id: &str) -> Option<&str> {
        self.calls.get(id).filter(|(seq, _)| *seq >= self.first).map(|(_, name)| name.as_str())
    }

    /// Appends a message, checked as `eval` checks a context's; `at` names
    /// it in errors.
    pub(super) fn push(
        &mut self,
        msg: Value,
        at: &str,
        decider: &mut Decider<'_>,
    ) -> Result<(), String> {
        let read = scenario::parse_message(&msg, at)?;
        index_calls(&mut self.calls, self.first + self.read.len() as u64, &read.blocks);
        self.json.push_back(msg);
        self.read.push_back(read);
        decider.pushed(self);
        Ok(())
    }

    /// Appends blocks to the newest message (the agent's own, by the
    /// caller's check), after checking them as an assistant's.
    pub(super) fn extend_newest(
        &mut self,
        blocks: Vec<Value>,
        decider: &mut Decider<'_>,
    ) -> Result<(), String> {
        let checked = check_blocks(&blocks)?;
        let seq = self.newest_seq();
        index_calls(&mut self.calls, seq, &checked);
        let (Some(Value::Object(json)), Some(read)) = (self.json.back_mut(), self.read.back_mut())
        else {
            return Err("no message to extend".into());
        };
        let Some(Value::Array(content)) = json.get_mut("content") else {
            return Err("the newest message has no list of blocks".into());
        };
        content.extend(blocks);
        let first = read.blocks.len();
        read.blocks.extend(checked);
        decider.appended(self, first);
        Ok(())
    }

    /// Keeps only the newest `keep` messages; returns how many went.
    pub(super) fn compress(&mut self, keep: usize, decider: &mut Decider<'_>) -> usize {
        let drop = self.len().saturating_sub(keep);
        self.json.drain(..drop);
        self.read.drain(..drop);
        self.first += drop as u64;
        decider.evicted(self, drop);
        drop
    }

    /// Replaces the whole context with `json`, already read as `read`.
    pub(super) fn replace(
        &mut self,
        json: Vec<Value>,
        read: VecConversation,
        decider: &mut Decider<'_>,
    ) {
        // Numbering goes on: nothing held before can be mistaken for a new message.
        self.first += self.read.len() as u64;
        self.json = json.into();
        self.read = read.0.into();
        self.calls.clear();
        for (seq, msg) in self.seqs().zip(&self.read) {
            index_calls(&mut self.calls, seq, &msg.blocks);
        }
        decider.replaced(self);
    }
}

impl Conversation for Context {
    type Message<'m> = &'m OwnedMessage;
    fn message_count(&self) -> usize {
        self.read.len()
    }
    fn newest(&self, index: usize) -> Option<&OwnedMessage> {
        self.read.len().checked_sub(index + 1).and_then(|i| self.read.get(i))
    }
}

/// Indexes the tool calls among `blocks` of message `seq`: a newer message
/// wins, and within one message the first call with an id.
fn index_calls(calls: &mut HashMap<String, (u64, String)>, seq: u64, blocks: &[OwnedBlock]) {
    for block in blocks {
        if let OwnedBlock::ToolCall { id, name, .. } = block {
            match calls.get_mut(id) {
                Some(known) if known.0 == seq => {}
                Some(known) => *known = (seq, name.clone()),
                None => {
                    calls.insert(id.clone(), (seq, name.clone()));
                }
            }
        }
    }
}

/// Blocks the replay appends for the agent, checked as an assistant
/// message's by the reference's rules, and read.
pub(super) fn check_blocks(blocks: &[Value]) -> Result<Vec<OwnedBlock>, String> {
    let msg = serde_json::json!({"name": "x", "role": "assistant", "content": blocks});
    scenario::parse_message(&msg, "context[0]")
        .map(|m| m.blocks)
        .map_err(|e| e.replacen("context[0].content", "block", 1))
}
