//! The tool-error dimension: the newest message ends with the same call
//! failing `tool_retries_limit` times in a row.
//!
//! The reference reads, for each failed result of the trailing streak
//! (newest first, the same tool), the input of the newest call with its id
//! (`""` when none), and counts while the arguments repeat the newest
//! result's. Two ways to get there, one answer:
//! - [`evaluate`] reads a whole message once, newest result first, as the
//!   reference does (the full scan);
//! - [`Streak`] keeps what [`evaluate`] would find as blocks are appended to
//!   the message, in constant time per block for the shapes AgentScope
//!   produces, and calls [`evaluate`] itself when an append could change
//!   what it cannot see (a call re-using the id of a result it counted).
//!
//! Both find a result's call with the same two helpers: [`in_run_near`]
//! (constant time, when the call is next to the previous one found and
//! within the trailing run of calls that share one key) and [`latest_call`]
//! (the whole search, in time linear in the distance).

use super::compiled::ValidConfig;
use super::ToolError;
use crate::args::{ArgumentKey, Comparison};
use crate::conversation::{Block, Conversation, Message, Role, ToolResultState};

/// The newest call named `id` among `msg`'s blocks before `end`: its
/// position and raw input. With duplicate ids the later call wins, as in
/// the reference's `{id: input}` map.
fn latest_call<'m, M: Message>(msg: &'m M, id: &str, end: usize) -> Option<(usize, &'m str)> {
    // Searching from the end, the first hit is the later duplicate.
    (0..end.min(msg.block_count())).rev().find_map(|b| match msg.block(b) {
        Some(Block::ToolCall { id: call, input, .. }) if call == id => Some((b, input)),
        _ => None,
    })
}

/// The raw input of the call `id` in `msg`; the later of duplicate ids wins,
/// and a missing call reads as `""`, as in the reference's dict lookup.
#[cfg(test)]
pub(crate) fn call_input<'m, M: Message>(msg: &'m M, id: &str) -> &'m str {
    latest_call(msg, id, msg.block_count()).map_or("", |(_, input)| input)
}

/// The tool results among `msg`'s blocks before `end`, newest first, as
/// `(index, id, name, state)`.
fn tool_results<M: Message>(
    msg: &M,
    end: usize,
) -> impl Iterator<Item = (usize, &str, &str, ToolResultState)> {
    (0..end.min(msg.block_count())).rev().filter_map(move |b| match msg.block(b) {
        Some(Block::ToolResult { id, name, state, .. }) => Some((b, id, name, state)),
        _ => None,
    })
}

/// The id and tool name of the tool result at `index`.
fn result_at<M: Message>(msg: &M, index: usize) -> Option<(&str, &str)> {
    match msg.block(index)? {
        Block::ToolResult { id, name, .. } => Some((id, name)),
        _ => None,
    }
}

/// The trailing run of calls whose arguments share one key: every call at
/// or after `start` (up to the blocks it was worked out on) has `key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    key: ArgumentKey,
    start: usize,
}

/// The trailing run of calls among `msg`'s blocks before `end`.
fn trailing_run<M: Message>(msg: &M, end: usize, arguments: Comparison) -> Option<Run> {
    let mut run: Option<Run> = None;
    for b in (0..end.min(msg.block_count())).rev() {
        let Some(Block::ToolCall { input, .. }) = msg.block(b) else { continue };
        let key = arguments.key(input);
        match run {
            Some(r) if r.key != key => break,
            _ => run = Some(Run { key, start: b }),
        }
    }
    run
}

/// How far from the call found last [`in_run_near`] looks: enough for a
/// call and its result one after another, a parallel batch answered in
/// either order, and a few other blocks between.
const NEAR: usize = 4;

/// A call named `id` among the blocks within [`NEAR`] of `near` (and the
/// one just before `end`), at or after `run.start` and before `end`.
///
/// When there is one, the newest call named `id` (the one the reference
/// reads) is at or after it, so within the run: its arguments' key is
/// `run.key`, whichever call it is.
fn in_run_near<M: Message>(msg: &M, id: &str, near: usize, run: Run, end: usize) -> Option<usize> {
    let is_call = |b: usize| {
        (run.start..end).contains(&b)
            && matches!(msg.block(b), Some(Block::ToolCall { id: call, .. }) if call == id)
    };
    let around = (0..=NEAR).flat_map(|d| [near.checked_add(d), near.checked_sub(d)]).flatten();
    end.checked_sub(1).into_iter().chain(around).find(|&b| is_call(b))
}

/// How many calls no looked-up id names a [`CallLookup`] walks past before
/// it gives up walking.
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
/// checked, which ends the count when it holds. Once the walk has given up
/// (results in their calls' reverse order), each id's call is looked for
/// next to the previous one found, within the trailing run of calls that
/// share one key ([`in_run_near`]), and only then by a whole search.
struct CallLookup<'m, M: Message> {
    msg: &'m M,
    /// The blocks read: those before `end`.
    end: usize,
    /// Where the walk resumes: every call at or after it was passed.
    next: usize,
    /// The passed calls no looked-up id named, by position.
    passed: heapless::Vec<usize, PASSED_CALLS>,
    /// Too many calls passed: the walk has given up.
    exhausted: bool,
    /// The trailing run of calls, once worked out (after the walk gave up).
    run: Option<Option<Run>>,
    /// The position of the call found last.
    found: usize,
    /// How arguments compare (the engine's capacity).
    arguments: Comparison,
}

impl<'m, M: Message> CallLookup<'m, M> {
    fn new(msg: &'m M, end: usize, arguments: Comparison) -> Self {
        let end = end.min(msg.block_count());
        CallLookup {
            msg,
            end,
            next: end,
            passed: heapless::Vec::new(),
            exhausted: false,
            run: None,
            found: end,
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
        let newest_passed = self.passed.iter().find_map(|&p| {
            self.call_at(p).filter(|&(call, _)| call == id).map(|(_, input)| (p, input))
        });
        if let Some((p, input)) = newest_passed {
            self.found = p;
            return Some(input);
        }
        while self.next > 0 {
            self.next -= 1;
            let Some((call, input)) = self.call_at(self.next) else { continue };
            if call == id {
                self.found = self.next;
                return Some(input);
            }
            if self.passed.push(self.next).is_err() {
                self.exhausted = true;
                return None;
            }
        }
        Some("")
    }

    /// The key of the arguments the reference reads for `id`: found next to
    /// the previous call within the run, else by the whole search.
    fn exact_key(&mut self, id: &str) -> ArgumentKey {
        let run = *self.run.get_or_insert_with(|| trailing_run(self.msg, self.end, self.arguments));
        if let Some(run) = run {
            if let Some(at) = in_run_near(self.msg, id, self.found, run, self.end) {
                self.found = at;
                return run.key;
            }
        }
        let latest = latest_call(self.msg, id, self.end);
        if let Some((at, _)) = latest {
            self.found = at;
        }
        self.arguments.key(latest.map_or("", |(_, input)| input))
    }

    /// The key of the newest result's call (no call was found before it, so
    /// the walk's input is the reference's).
    fn newest(&mut self, id: &str) -> ArgumentKey {
        match self.walk(id) {
            Some(input) => self.arguments.key(input),
            None => self.exact_key(id),
        }
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
        self.exact_key(id) == newest
    }
}

/// The newest failed result of a message, and the results that repeat it:
/// the tool-error rule's finding, before the limit is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Newest {
    /// The newest tool result's position (it failed).
    result: usize,
    /// The key of its call's arguments.
    key: ArgumentKey,
    /// The trailing failed results of its tool whose calls repeat its
    /// arguments, itself included.
    count: u64,
    /// The result just older than those, when it failed on the same tool
    /// and only its arguments differ: a later call with its id can make it
    /// repeat, and the count go on past it.
    boundary: Option<usize>,
}

/// `_get_repeated_tool_error`'s count on `msg`'s blocks before `end`, and
/// where the newest result's call was found.
fn evaluate<M: Message>(
    cfg: &ValidConfig<'_>,
    msg: &M,
    end: usize,
) -> (Option<Newest>, Option<usize>) {
    let mut results = tool_results(msg, end);
    let Some((result, first, tool_name, ToolResultState::Error)) = results.next() else {
        return (None, None);
    };
    let mut lookup = CallLookup::new(msg, end, cfg.arguments);
    let key = lookup.newest(first);
    let found = (lookup.found < lookup.end).then_some(lookup.found);
    let mut newest = Newest { result, key, count: 1, boundary: None };
    for (b, id, name, state) in results {
        if state != ToolResultState::Error || name != tool_name {
            break;
        }
        if !lookup.repeats(id, key) {
            newest.boundary = Some(b);
            break;
        }
        newest.count = newest.count.saturating_add(1);
    }
    (Some(newest), found)
}

/// What the tool-error rule finds in one message, kept as blocks are
/// appended to it: constant time per block for calls and results one after
/// another, or in parallel batches answered in either order, when the
/// calls that end the message share their arguments (a retry streak), and
/// for a call and its result one after another in any case.
///
/// A fixed size, whatever the message's length: the newest failed result
/// and its count, the trailing run of calls that share one key, and where
/// the newest result's call was found. An appended call that re-uses the
/// id of the newest result, or of the result that stopped the count, with
/// arguments that could change the count, makes it [`evaluate`] the
/// message again; one with other arguments than the streak's is checked
/// against the streak's ids (time linear in the streak).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Streak {
    /// The blocks observed.
    blocks: usize,
    /// The trailing run of calls among them.
    run: Option<Run>,
    /// Where the newest located call is (where the next is looked for).
    cursor: usize,
    /// The newest result's finding, when the newest result failed.
    newest: Option<Newest>,
}

impl Streak {
    /// What the rule finds in all of `msg`, read once.
    pub(crate) fn of<M: Message>(cfg: &ValidConfig<'_>, msg: &M) -> Self {
        let end = msg.block_count();
        let (newest, found) = evaluate(cfg, msg, end);
        let run = trailing_run(msg, end, cfg.arguments);
        Streak { blocks: end, run, cursor: found.unwrap_or(end), newest }
    }

    /// Observes the blocks appended to `msg`: those from index `first` on.
    /// When `first` is not the count of blocks observed, reads `msg` again.
    pub(crate) fn append<M: Message>(&mut self, cfg: &ValidConfig<'_>, msg: &M, first: usize) {
        if first != self.blocks {
            *self = Streak::of(cfg, msg);
            return;
        }
        for b in first..msg.block_count() {
            self.observe(cfg, msg, b);
        }
    }

    /// The rule's verdict on the blocks observed.
    pub(crate) fn verdict(&self, cfg: &ValidConfig<'_>) -> Option<ToolError> {
        verdict(cfg, self.newest)
    }

    fn observe<M: Message>(&mut self, cfg: &ValidConfig<'_>, msg: &M, b: usize) {
        match msg.block(b) {
            Some(Block::ToolCall { id, input, .. }) => {
                let key = cfg.arguments.key(input);
                if self.run.is_none_or(|r| r.key != key) {
                    self.run = Some(Run { key, start: b });
                }
                self.blocks = b + 1;
                if let Some(newest) = self.newest {
                    self.newest = self.called(cfg, msg, newest, id, key, b);
                }
            }
            Some(Block::ToolResult { id, name, state, .. }) => {
                self.newest = match state {
                    ToolResultState::Error => Some(self.failed(cfg, msg, id, name, b)),
                    _ => None,
                };
                self.blocks = b + 1;
            }
            _ => self.blocks = b + 1,
        }
    }

    /// The result at `b`, named `id`, of tool `name`, failed.
    fn failed<M: Message>(
        &mut self,
        cfg: &ValidConfig<'_>,
        msg: &M,
        id: &str,
        name: &str,
        b: usize,
    ) -> Newest {
        let key = self.locate(cfg, msg, id, b);
        let same_tool =
            self.newest.filter(|n| result_at(msg, n.result).is_some_and(|r| r.1 == name));
        match same_tool {
            // A result adds no call: the older ones keep their arguments.
            Some(n) if n.key == key => {
                Newest { result: b, key, count: n.count.saturating_add(1), ..n }
            }
            Some(n) => Newest { result: b, key, count: 1, boundary: Some(n.result) },
            None => Newest { result: b, key, count: 1, boundary: None },
        }
    }

    /// The key of the arguments the reference reads for the result at
    /// `end` named `id`.
    fn locate<M: Message>(
        &mut self,
        cfg: &ValidConfig<'_>,
        msg: &M,
        id: &str,
        end: usize,
    ) -> ArgumentKey {
        if let Some(run) = self.run {
            if let Some(at) = in_run_near(msg, id, self.cursor, run, end) {
                self.cursor = at;
                return run.key;
            }
        }
        let latest = latest_call(msg, id, end);
        if let Some((at, _)) = latest {
            self.cursor = at;
        }
        cfg.arguments.key(latest.map_or("", |(_, input)| input))
    }

    /// The call at `b`, named `id`, with arguments `key`, was appended: the
    /// results named `id` now read it.
    fn called<M: Message>(
        &self,
        cfg: &ValidConfig<'_>,
        msg: &M,
        n: Newest,
        id: &str,
        key: ArgumentKey,
        b: usize,
    ) -> Option<Newest> {
        let again = || evaluate(cfg, msg, b + 1).0;
        if key == n.key {
            // The counted results keep repeating; the one that stopped the
            // count may now repeat too.
            return match n.boundary {
                Some(r) if result_at(msg, r).is_none_or(|r| r.0 == id) => again(),
                _ => Some(n),
            };
        }
        if result_at(msg, n.result).is_none_or(|r| r.0 == id) {
            // The newest result's arguments changed.
            return again();
        }
        // Other arguments: the newest counted result named `id`, if any,
        // no longer repeats, and stops the count.
        let older = tool_results(msg, n.result)
            .take(usize::try_from(n.count.saturating_sub(1)).unwrap_or(usize::MAX));
        for (k, (r, result_id, _, _)) in older.enumerate() {
            if result_id == id {
                return Some(Newest { count: k as u64 + 1, boundary: Some(r), ..n });
            }
        }
        Some(n)
    }
}

/// `_get_repeated_tool_error` on the newest message.
pub(crate) fn tool_error<M: Message>(
    cfg: &ValidConfig<'_>,
    last: &M,
    agent_name: &str,
) -> Option<ToolError> {
    if !applies(last, agent_name) {
        return None;
    }
    verdict(cfg, evaluate(cfg, last, last.block_count()).0)
}

/// The verdict on a finding: a tool error when the count reaches the limit.
fn verdict(cfg: &ValidConfig<'_>, newest: Option<Newest>) -> Option<ToolError> {
    let limit = cfg.config.injection.tool_retries_limit;
    newest.filter(|n| n.count >= limit).map(|n| ToolError { count: n.count, result: n.result })
}

/// Whether the rule reads `msg` for `agent_name`: the agent's own message.
pub(crate) fn applies<M: Message>(msg: &M, agent_name: &str) -> bool {
    msg.role() == Role::Assistant && msg.name() == agent_name
}

/// The tool-error rule on the conversation's newest message.
pub(crate) fn newest_tool_error<C: Conversation>(
    cfg: &ValidConfig<'_>,
    conv: &C,
    agent_name: &str,
) -> Option<ToolError> {
    conv.newest(0).and_then(|last| tool_error(cfg, &last, agent_name))
}
