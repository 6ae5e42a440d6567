//! The tool-error dimension: the newest message ends with the same call
//! failing `tool_retries_limit` times in a row.

use super::compiled::ValidConfig;
use super::ToolError;
use crate::args::{ArgumentKey, Comparison};
use crate::conversation::{Block, Conversation, Message, Role, ToolResultState};

/// The raw input of the call `id` in `msg`; the later of duplicate ids wins,
/// and a missing call reads as `""`, as in the reference's dict lookup.
pub(crate) fn call_input<'m, M: Message>(msg: &'m M, id: &str) -> &'m str {
    // Searching from the end, the first hit is the later duplicate.
    (0..msg.block_count())
        .rev()
        .find_map(|b| match msg.block(b) {
            Some(Block::ToolCall { id: call, input, .. }) if call == id => Some(input),
            _ => None,
        })
        .unwrap_or("")
}

/// The tool results of `msg`, newest first, as `(index, id, name, state)`.
fn tool_results<M: Message>(msg: &M) -> impl Iterator<Item = (usize, &str, &str, ToolResultState)> {
    (0..msg.block_count()).rev().filter_map(move |b| match msg.block(b) {
        Some(Block::ToolResult { id, name, state }) => Some((b, id, name, state)),
        _ => None,
    })
}

/// How many calls no looked-up id names a [`CallLookup`] walks past before
/// it gives up walking and searches the whole message for each id.
const PASSED_CALLS: usize = 16;

/// The inputs of a streak's calls, looked up newest result first in one
/// backward walk over the message, so a streak costs one pass, not one
/// search of the message per failed call.
///
/// The walk finds each id's call below the previous one's, which is where
/// it is when calls come in their results' order (AgentScope's own one by
/// one or in parallel batches). What the walk passed is either a call it
/// found for an earlier id of the streak, or one of at most
/// [`PASSED_CALLS`] kept in `passed`. When the input at hand does not
/// repeat the newest one, a later call with the same id, which the walk
/// may have passed, could be the one the reference reads: that verdict is
/// checked with [`call_input`], a whole search, which ends the count when
/// it holds. Messages in another order (or with more calls between) fall
/// back to that search for every id: the same answers, in quadratic time.
struct CallLookup<'m, M: Message> {
    msg: &'m M,
    /// Where the walk resumes: every call at or after it was passed.
    next: usize,
    /// The passed calls no looked-up id named, by position.
    passed: heapless::Vec<usize, PASSED_CALLS>,
    /// Too many calls passed: the walk has given up.
    exhausted: bool,
    /// How arguments compare (the engine's capacity).
    arguments: Comparison,
}

impl<'m, M: Message> CallLookup<'m, M> {
    fn new(msg: &'m M, arguments: Comparison) -> Self {
        CallLookup {
            msg,
            next: msg.block_count(),
            passed: heapless::Vec::new(),
            exhausted: false,
            arguments,
        }
    }

    fn call_at(&self, index: usize) -> Option<(&'m str, &'m str)> {
        match self.msg.block(index)? {
            Block::ToolCall { id, input, .. } => Some((id, input)),
            _ => None,
        }
    }

    /// The input of the newest call named `id` the walk can see (`""` for
    /// none): the reference's unless a call found for an earlier id of the
    /// streak has the same id. `None` once the walk has given up.
    fn walk(&mut self, id: &str) -> Option<&'m str> {
        if self.exhausted {
            return None;
        }
        // Passed calls are later than any call below `next`, newest first.
        let newest_passed =
            self.passed.iter().find_map(|&p| self.call_at(p).filter(|&(call, _)| call == id));
        if let Some((_, input)) = newest_passed {
            return Some(input);
        }
        while self.next > 0 {
            self.next -= 1;
            let Some((call, input)) = self.call_at(self.next) else { continue };
            if call == id {
                return Some(input);
            }
            if self.passed.push(self.next).is_err() {
                self.exhausted = true;
                return None;
            }
        }
        Some("")
    }

    /// Whether the call the reference reads for `id`, the one of the
    /// streak's `k`-th result (`k >= 1`, every earlier one repeating the
    /// newest), has arguments equal to `newest`.
    fn repeats(&mut self, id: &str, newest: ArgumentKey) -> bool {
        // Equal: whether the reference reads this call or one found for
        // an earlier id (which repeats the newest), the arguments repeat.
        if self.walk(id).is_some_and(|input| self.arguments.key(input) == newest) {
            return true;
        }
        self.arguments.key(call_input(self.msg, id)) == newest
    }
}

/// `_get_repeated_tool_error` on the newest message.
pub(crate) fn tool_error<M: Message>(
    cfg: &ValidConfig<'_>,
    last: &M,
    agent_name: &str,
) -> Option<ToolError> {
    if last.role() != Role::Assistant || last.name() != agent_name {
        return None;
    }
    let (result, _, tool_name, state) = tool_results(last).next()?;
    if state != ToolResultState::Error {
        return None;
    }
    // The trailing results that failed on the same tool, newest first.
    let streak = || {
        tool_results(last)
            .take_while(|&(_, _, name, state)| state == ToolResultState::Error && name == tool_name)
            .map(|(_, id, _, _)| id)
    };
    let limit = cfg.config.injection.tool_retries_limit;
    if (streak().count() as u64) < limit {
        return None;
    }
    let mut ids = streak();
    let mut lookup = CallLookup::new(last, cfg.arguments);
    let first = ids.next()?;
    // No call was found before the first: the walk's input is the reference's.
    let newest = cfg.arguments.key(lookup.walk(first).unwrap_or_else(|| call_input(last, first)));
    let count = 1 + ids.take_while(|id| lookup.repeats(id, newest)).count() as u64;
    (count >= limit).then_some(ToolError { count, result })
}

/// The tool-error rule on the conversation's newest message.
pub(crate) fn newest_tool_error<C: Conversation>(
    cfg: &ValidConfig<'_>,
    conv: &C,
    agent_name: &str,
) -> Option<ToolError> {
    conv.newest(0).and_then(|last| tool_error(cfg, &last, agent_name))
}
