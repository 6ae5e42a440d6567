//! `format_regex.match(text)` for the regex `_strptime.TimeRE` compiles
//! from a format, without compiling it: the format is read as a sequence of
//! nodes (a literal, a run of whitespace, a directive's group), and each
//! node's candidate ends are tried in the order `re`'s backtracking engine
//! tries them, so that the first match, and its groups, are Python's.
//!
//! The state of a match is most of a decision's stack on a device: it keeps
//! positions of the narrowest width that fits ([`Pos`]), a bounded choice
//! stack and a small failure cache, and gives up after a bounded number of
//! steps.

use super::unicode::ci_match;
use crate::text::py_is_space;
use crate::time::format::custom::{strptime_expansion, MONTHS, WEEKDAYS};
use crate::time::numeric::{
    alternatives, char_at, digit_value, match_atoms,
    Atom::{In, D},
};

// --- The format as a sequence of regex nodes ---------------------------------

/// One node of the format's regex.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Node {
    /// A literal character (case-insensitive).
    Lit(char),
    /// `\s+`: a run of whitespace in the format.
    Space,
    /// A directive's group, by its letter.
    Field(char),
}

/// A position in the format, possibly inside a `%c`/`%x`/`%X` expansion.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Cursor {
    at: usize,
    /// Composite directive (ASCII) being expanded and the offset inside
    /// its text: bytes, to keep backtracking frames small.
    sub: Option<(u8, u8)>,
}

impl Cursor {
    pub(super) const START: Cursor = Cursor { at: 0, sub: None };
}

/// Reads one node at `pos` of `s`; returns it and the bytes it took.
/// Composite directives are returned as `Field('c' | 'x' | 'X')`.
fn read_node(s: &str, pos: usize) -> Option<(Node, usize)> {
    let rest = s.get(pos..)?;
    let mut it = rest.char_indices();
    let (_, c) = it.next()?;
    if c == '%' {
        // Validated before: a directive follows.
        let (_, d) = it.next()?;
        let len = 1 + d.len_utf8();
        return Some((if d == '%' { Node::Lit('%') } else { Node::Field(d) }, len));
    }
    if py_is_space(c) {
        let end =
            rest.char_indices().find(|(_, c)| !py_is_space(*c)).map_or(rest.len(), |(i, _)| i);
        return Some((Node::Space, end));
    }
    Some((Node::Lit(c), c.len_utf8()))
}

/// The node at `cur` and the cursor after it.
pub(super) fn next_node(fmt: &str, cur: Cursor) -> Option<(Node, Cursor)> {
    let mut cur = cur;
    loop {
        if let Some((which, off)) = cur.sub {
            let exp = strptime_expansion(char::from(which))?;
            match read_node(exp, usize::from(off)) {
                Some((node, len)) => {
                    let off = u8::try_from(usize::from(off) + len).ok()?;
                    return Some((node, Cursor { at: cur.at, sub: Some((which, off)) }));
                }
                None => cur.sub = None,
            }
            continue;
        }
        let (node, len) = read_node(fmt, cur.at)?;
        let at = cur.at + len;
        match node {
            Node::Field(d) if strptime_expansion(d).is_some() => {
                cur = Cursor { at, sub: Some((u8::try_from(d).ok()?, 0)) };
            }
            _ => return Some((node, Cursor { at, sub: None })),
        }
    }
}

// --- Matching one node -----------------------------------------------------------

/// [`MONTHS`] in `__seqToRE`'s order for `%B`: longest first, ties in
/// calendar order (a stable sort by length, descending).
const MONTHS_LONGEST_FIRST: [u8; 12] = [8, 1, 10, 11, 0, 9, 7, 2, 3, 5, 6, 4];
/// [`WEEKDAYS`] in that order, for `%A`.
const WEEKDAYS_LONGEST_FIRST: [u8; 7] = [2, 3, 5, 1, 0, 4, 6];
/// Calendar order, for the abbreviations (all three letters long).
const IN_ORDER: [u8; 12] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];

/// `LocaleTime` names (C locale) in `__seqToRE`'s order, from the tables
/// strftime writes (matched case-blind, so their capitals match as the
/// reference's lowercase pattern does).
fn names(d: char) -> impl Iterator<Item = &'static str> {
    let (list, order, full): (&[&str], &[u8], bool) = match d {
        'a' => (&WEEKDAYS, &IN_ORDER, false),
        'A' => (&WEEKDAYS, &WEEKDAYS_LONGEST_FIRST, true),
        'b' => (&MONTHS, &IN_ORDER, false),
        'B' => (&MONTHS, &MONTHS_LONGEST_FIRST, true),
        'p' => (&["am", "pm"], &IN_ORDER, true),
        // The host's zone names; on a UTC host only these.
        'Z' => (&["utc", "gmt"], &IN_ORDER, true),
        _ => (&[], &[], true),
    };
    order.iter().map_while(move |&i| list.get(usize::from(i))).map(move |n| {
        if full {
            *n
        } else {
            n.get(..3).unwrap_or(n)
        }
    })
}

fn match_name(text: &str, pos: usize, name: &str) -> Option<usize> {
    let mut p = pos;
    for n in name.chars() {
        let c = char_at(text, p)?;
        if !ci_match(n, c) {
            return None;
        }
        p += c.len_utf8();
    }
    Some(p)
}

/// Up to 8 candidate ends, in the order the regex engine tries them.
#[derive(Default)]
struct Ends {
    ends: [usize; 8],
    len: usize,
}

impl Ends {
    fn push(&mut self, e: usize) {
        if self.ends.get(..self.len).is_some_and(|s| s.contains(&e)) {
            return;
        }
        if let Some(slot) = self.ends.get_mut(self.len) {
            *slot = e;
            self.len += 1;
        }
    }
    fn get(&self, k: usize) -> Option<usize> {
        self.ends.get(..self.len)?.get(k).copied()
    }
}

/// `[0-9]{1,n}` greedy from `pos`: ends longest first (`\d` if `unicode`).
fn push_digit_run(out: &mut Ends, text: &str, pos: usize, max: usize, unicode: bool) {
    let mut ends = [0usize; 6];
    let mut n = 0;
    let mut p = pos;
    while n < max.min(6) {
        match char_at(text, p) {
            Some(c) if if unicode { digit_value(c).is_some() } else { c.is_ascii_digit() } => {
                p += c.len_utf8();
                if let Some(slot) = ends.get_mut(n) {
                    *slot = p;
                }
                n += 1;
            }
            _ => break,
        }
    }
    for e in ends.get(..n).unwrap_or(&[]).iter().rev() {
        out.push(*e);
    }
}

/// `%z`: `[+-]\d\d:?[0-5]\d(:?[0-5]\d(\.\d{1,6})?)?|(?-i:Z)`.
fn z_ends(text: &str, pos: usize, out: &mut Ends) {
    let Some(first) = char_at(text, pos) else { return };
    if first == 'Z' {
        out.push(pos + 1);
        return;
    }
    if first != '+' && first != '-' {
        return;
    }
    let Some(p) = match_atoms(text, pos + 1, &[D, D]) else { return };
    // `:?[0-5]\d`: with the colon if it is there (the other way then fails).
    let colon_then = |p: usize| -> Option<usize> {
        match char_at(text, p) {
            Some(':') => match_atoms(text, p + 1, &[In(b'0', b'5'), D]),
            _ => match_atoms(text, p, &[In(b'0', b'5'), D]),
        }
    };
    let Some(base) = colon_then(p) else { return };
    if let Some(sec) = colon_then(base) {
        if char_at(text, sec) == Some('.') {
            push_digit_run(out, text, sec + 1, 6, true);
        }
        out.push(sec);
    }
    out.push(base);
}

/// The candidate ends of `node` at `pos`, in the regex engine's order.
fn node_ends(node: Node, text: &str, pos: usize) -> Ends {
    let mut out = Ends::default();
    match node {
        Node::Lit(p) => {
            if let Some(c) = char_at(text, pos).filter(|c| ci_match(p, *c)) {
                out.push(pos + c.len_utf8());
            }
        }
        Node::Space => {} // handled lazily: runs can be long
        Node::Field('f') => push_digit_run(&mut out, text, pos, 6, false),
        Node::Field('z') => z_ends(text, pos, &mut out),
        Node::Field(d) => {
            for alt in alternatives(d) {
                if let Some(e) = match_atoms(text, pos, alt) {
                    out.push(e);
                }
            }
            for name in names(d) {
                if let Some(e) = match_name(text, pos, name) {
                    out.push(e);
                }
            }
        }
    }
    out
}

/// The `k`-th candidate end of `node` at `pos`.
fn nth_end(node: Node, text: &str, pos: usize, k: usize) -> Option<usize> {
    if node != Node::Space {
        return node_ends(node, text, pos).get(k);
    }
    // `\s+`, greedy: the whole run first, then one character less each time.
    let rest = text.get(pos..)?;
    let run = rest.char_indices().find(|(_, c)| !py_is_space(*c)).map_or(rest.len(), |(i, _)| i);
    let mut end = run;
    for _ in 0..k {
        let back = rest.get(..end)?.chars().next_back()?;
        end -= back.len_utf8();
    }
    (end > 0).then_some(pos + end)
}

// --- The match -------------------------------------------------------------------

/// A position the matcher keeps (in the text or the format, or a candidate
/// count): 16 bits when the text and the format are shorter than
/// `u16::MAX`, so that every position and count fits, else `usize`. The
/// matcher's state is most of a decision's stack on a device.
pub(super) trait Pos: Copy + PartialEq {
    /// Never a position: marks an empty failure-cache slot.
    const NONE: Self;
    const ZERO: Self;
    fn of(n: usize) -> Option<Self>;
    fn get(self) -> usize;
}

impl Pos for u16 {
    const NONE: Self = u16::MAX;
    const ZERO: Self = 0;
    fn of(n: usize) -> Option<Self> {
        u16::try_from(n).ok()
    }
    fn get(self) -> usize {
        usize::from(self)
    }
}

impl Pos for usize {
    const NONE: Self = usize::MAX;
    const ZERO: Self = 0;
    fn of(n: usize) -> Option<Self> {
        Some(n)
    }
    fn get(self) -> usize {
        self
    }
}

/// Group spans by directive letter (one per letter: repeats are refused).
pub(super) struct Captures<P> {
    spans: [(P, P); GROUP_LETTERS.len()],
}

const GROUP_LETTERS: &str = "dfHIGjmMSUwuVyYzABabpZW";

/// The span of a directive's group, whatever the width of its positions.
pub(super) trait Groups {
    fn span(&self, d: char) -> Option<(usize, usize)>;
    fn get<'t>(&self, text: &'t str, d: char) -> Option<&'t str> {
        let (a, b) = self.span(d)?;
        text.get(a..b)
    }
}

impl<P: Pos> Captures<P> {
    pub(super) fn new() -> Self {
        Captures { spans: [(P::ZERO, P::ZERO); GROUP_LETTERS.len()] }
    }
    fn slot(d: char) -> Option<usize> {
        GROUP_LETTERS.find(d)
    }
    fn set(&mut self, d: char, span: (usize, usize)) -> Option<()> {
        if let Some(s) = Self::slot(d).and_then(|i| self.spans.get_mut(i)) {
            *s = (P::of(span.0)?, P::of(span.1)?);
        }
        Some(())
    }
}

impl<P: Pos> Groups for Captures<P> {
    fn span(&self, d: char) -> Option<(usize, usize)> {
        let (a, b) = *self.spans.get(Self::slot(d)?)?;
        Some((a.get(), b.get()))
    }
}

/// Bound on the matcher's steps, so no input can make it spin: ordinary
/// formats take a few dozen steps, and random searches over the most
/// ambiguous formats (every numeric directive adjacent) stayed under 400.
const STEP_BUDGET: u32 = 50_000;

/// Backtracking frames for one match. The frames on the stack are for
/// distinct nodes of one path through the format, and a frame is only kept
/// for a node with a second viable candidate: one of the 12 directives with
/// several candidate ends (`%d %f %H %I %j %m %M %S %U %W %V %z`; each letter
/// at most once, else the format is refused), whitespace before `%d` (whose
/// ` [1-9]` alternative starts with a space) or whitespace ending the
/// format. So at most 14 are ever used: 16 never overflow.
const MAX_FRAMES: usize = 16;

/// A choice point: the node at `at`/`sub`, matched at `pos`, whose
/// candidate `next` is the one to try when backtracking to it.
#[derive(Clone, Copy)]
struct Frame<P> {
    at: P,
    /// The cursor's `sub`, packed as [`pack_sub`] packs it: 8-byte frames
    /// with 16-bit positions, where `Option<(u8, u8)>` would make them 10.
    sub: u16,
    pos: P,
    next: P,
}

impl<P: Pos> Frame<P> {
    fn cursor(&self) -> Cursor {
        let [which, off] = self.sub.to_be_bytes();
        Cursor { at: self.at.get(), sub: (self.sub != 0).then_some((which, off)) }
    }
}

/// (node, position) pairs where the rest of the match failed: matching has
/// no back-references, so a failure there is a failure whatever came
/// before. 32 slots, kept as two arrays with the 16-bit half apart: 64
/// bytes less than triples.
struct FailureCache<'a, P> {
    at: &'a mut [(P, P); 32],
    sub: &'a mut [u16; 32],
}

impl<P: Pos> FailureCache<'_, P> {
    /// Whether the node at the cursor `key` ([`cursor_key`]) failed at `pos`.
    fn contains(&self, key: (usize, u16), pos: usize) -> bool {
        self.at
            .iter()
            .zip(self.sub.iter())
            .any(|(f, sub)| f.0.get() == key.0 && *sub == key.1 && f.1.get() == pos)
    }

    /// Records a failure, over whatever its slot held.
    fn insert(&mut self, key: (usize, u16), pos: P) -> Option<()> {
        let slot = (key.0 ^ pos.get().wrapping_mul(31)) % self.at.len();
        if let (Some(f), Some(sub)) = (self.at.get_mut(slot), self.sub.get_mut(slot)) {
            *f = (P::of(key.0)?, pos);
            *sub = key.1;
        }
        Some(())
    }
}

/// The state of one match.
struct Matcher<'a, P> {
    fmt: &'a str,
    text: &'a str,
    caps: &'a mut Captures<P>,
    steps: &'a mut u32,
    /// The choice points, oldest first; `depth` of them are live.
    stack: &'a mut [Frame<P>; MAX_FRAMES],
    depth: usize,
    failed: FailureCache<'a, P>,
}

/// Python's `format_regex.match(text)`: the first match in backtracking
/// order, anchored at the start but not at the end. Returns its end.
///
/// Advances node by node through the format; where a node fails, returns
/// to the newest choice point that has another candidate.
pub(super) fn regex_match<P: Pos>(
    fmt: &str,
    text: &str,
    caps: &mut Captures<P>,
    steps: &mut u32,
) -> Option<usize> {
    // The arrays are locals the matcher borrows: built in place, where a
    // struct that owned them is built aside and copied (opt-level "z"),
    // taking their size twice on the stack.
    let mut stack = [Frame { at: P::NONE, sub: 0, pos: P::NONE, next: P::NONE }; MAX_FRAMES];
    let mut failed_at = [(P::NONE, P::NONE); 32];
    let mut failed_sub = [0u16; 32];
    let failed = FailureCache { at: &mut failed_at, sub: &mut failed_sub };
    let mut m = Matcher { fmt, text, caps, steps, stack: &mut stack, depth: 0, failed };
    let (mut cur, mut pos) = (Cursor::START, 0usize);
    loop {
        m.step()?;
        let Some((node, after)) = next_node(fmt, cur) else { return Some(pos) };
        (cur, pos) = match m.advance(node, cur, after, pos)? {
            Some(end) => (after, end),
            None => m.backtrack()?,
        };
    }
}

impl<P: Pos> Matcher<'_, P> {
    /// Counts one step; `None` once the budget is spent.
    fn step(&mut self) -> Option<()> {
        *self.steps += 1;
        (*self.steps <= STEP_BUDGET).then_some(())
    }

    /// Matches `node` (at `cur`, followed by the node at `after`) at `pos`
    /// with its first candidate: `Some(end)`, or `Some(None)` if it fails
    /// there. Keeps a choice point only if a later candidate could be
    /// followed by the next node: this keeps the stack to one frame per
    /// adjacent numeric directive or so. `None` aborts the match.
    fn advance(
        &mut self,
        node: Node,
        cur: Cursor,
        after: Cursor,
        pos: usize,
    ) -> Option<Option<usize>> {
        if self.failed.contains(cursor_key(cur), pos) {
            return Some(None);
        }
        let Some(end) = nth_end(node, self.text, pos, 0) else { return Some(None) };
        if !matches!(node, Node::Lit(_)) && self.viable_candidate(node, after, pos, 1).is_some() {
            let frame = self.stack.get_mut(self.depth)?;
            *frame = Frame {
                at: P::of(cur.at)?,
                sub: pack_sub(cur.sub),
                pos: P::of(pos)?,
                next: P::of(1)?,
            };
            self.depth += 1;
        }
        self.capture(node, pos, end)?;
        Some(Some(end))
    }

    /// Backtracks to the newest choice point with another viable candidate
    /// and takes it: the cursor and the position after it. Choice points
    /// with none left are dropped, and remembered as failures. `None` when
    /// none is left (no match) or the budget is spent.
    fn backtrack(&mut self) -> Option<(Cursor, usize)> {
        loop {
            self.step()?;
            let top = self.depth.checked_sub(1)?;
            let frame = *self.stack.get(top)?;
            let (node, after) = next_node(self.fmt, frame.cursor())?;
            let pos = frame.pos.get();
            match self.viable_candidate(node, after, pos, frame.next.get()) {
                Some((k, end)) => {
                    if let Some(f) = self.stack.get_mut(top) {
                        f.next = P::of(k.saturating_add(1))?;
                    }
                    self.capture(node, pos, end)?;
                    return Some((after, end));
                }
                None => {
                    self.failed.insert((frame.at.get(), frame.sub), frame.pos)?;
                    self.depth = top;
                }
            }
        }
    }

    /// The first candidate of `node` at `pos`, from the `k`-th on, that the
    /// node at `after` can start at: its index and its end.
    ///
    /// Inlined into both callers: out of line it would put a frame of its
    /// own between the matcher's state and the candidate search, 64 bytes
    /// more on a device. ([`Self::capture`] stays out of line: it calls
    /// nothing deep, and inlined twice it took 40 bytes more flash.)
    #[inline(always)]
    fn viable_candidate(
        &self,
        node: Node,
        after: Cursor,
        pos: usize,
        k: usize,
    ) -> Option<(usize, usize)> {
        let mut k = k;
        loop {
            let end = nth_end(node, self.text, pos, k)?;
            if viable(self.fmt, after, self.text, end) {
                return Some((k, end));
            }
            k += 1;
        }
    }

    /// Records the group of `node` if it is a directive.
    fn capture(&mut self, node: Node, start: usize, end: usize) -> Option<()> {
        if let Node::Field(d) = node {
            self.caps.set(d, (start, end))?;
        }
        Some(())
    }
}

/// Whether the node at `cur` can start matching at `pos` (a necessary
/// condition for the rest of the match; true at the end of the format).
fn viable(fmt: &str, cur: Cursor, text: &str, pos: usize) -> bool {
    match next_node(fmt, cur) {
        None => true,
        Some((node, _)) => nth_end(node, text, pos, 0).is_some(),
    }
}

fn cursor_key(c: Cursor) -> (usize, u16) {
    (c.at, pack_sub(c.sub))
}

/// A cursor's `sub` in 16 bits: the letter, then the offset; 0 for none.
fn pack_sub(sub: Option<(u8, u8)>) -> u16 {
    match sub {
        None => 0,
        // Never 0: the letter is not NUL.
        Some((w, off)) => u16::from(w) << 8 | u16::from(off),
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::time::parse_time;
    use crate::time::tests::iso;
    use std::string::String;
    use std::vec::Vec;

    /// `_strptime`'s alternations, as CPython 3.11 builds them in the C
    /// locale: `sorted(names, key=len, reverse=True)` of the lowercase
    /// names (a stable sort), abbreviations as listed.
    #[test]
    fn names_are_in_seq_to_re_order() {
        let lower = |list: &[&str], full: bool| -> Vec<String> {
            let mut v: Vec<String> = list
                .iter()
                .map(|n| if full { n.to_lowercase() } else { n[..3].to_lowercase() })
                .collect();
            v.sort_by_key(|n| core::cmp::Reverse(n.len()));
            v
        };
        let got = |d: char| -> Vec<String> { names(d).map(str::to_lowercase).collect() };
        assert_eq!(got('B'), lower(&MONTHS, true));
        assert_eq!(got('b'), lower(&MONTHS, false));
        assert_eq!(got('A'), lower(&WEEKDAYS, true));
        assert_eq!(got('a'), lower(&WEEKDAYS, false));
        assert_eq!(got('B')[..3], ["september", "february", "november"]);
        assert_eq!(got('A')[..2], ["wednesday", "thursday"]);
        assert_eq!(got('a')[..2], ["mon", "tue"]);
        assert_eq!(got('p'), ["am", "pm"]);
        assert_eq!(got('Z'), ["utc", "gmt"]);
        assert_eq!(names('x').count(), 0);
    }

    #[test]
    fn ambiguous_formats_stay_within_budget() {
        let fmt = "%f%Y%G%y%j%d%H%M%S%m%I%U%W%V%w%u%z";
        let text = "1178643464812321171115+97123-";
        let mut caps = Captures::<u16>::new();
        let mut steps = 0;
        let _ = regex_match(fmt, text, &mut caps, &mut steps);
        assert!(steps < 1000, "{steps}");
        // Long whitespace runs before literals are not choice points.
        let fmt = " 1".repeat(100);
        let text = "  1".repeat(100);
        assert!(parse_time(&text, &fmt).is_some());
    }

    #[test]
    fn the_failure_cache_holds_each_failure_by_its_whole_key() {
        let (mut at, mut sub) = ([(u16::NONE, u16::NONE); 32], [0u16; 32]);
        let mut cache = FailureCache { at: &mut at, sub: &mut sub };
        // Slots 30, 31, 0 and 17: all kept (a hash of `|` or `&` instead of
        // `^` would put two in one slot, `/` instead of `%` one past the end).
        let failures =
            [((1, 0), 1), ((31, 0), 0), ((0, pack_sub(Some((b'c', 2)))), 0), ((5000, 0), 7)];
        for (key, pos) in failures {
            assert_eq!(cache.insert(key, u16::of(pos).unwrap()), Some(()));
        }
        for (key, pos) in failures {
            assert!(cache.contains(key, pos), "{key:?} {pos}");
        }
        // Another node, position or place inside an expansion is no failure.
        for (key, pos) in [
            ((2, 0), 1),
            ((1, 0), 2),
            ((0, pack_sub(Some((b'c', 3)))), 0),
            ((0, 0), 0),
            ((5000, 1), 7),
        ] {
            assert!(!cache.contains(key, pos), "{key:?} {pos}");
        }
    }

    #[test]
    fn a_frame_gives_back_the_place_inside_an_expansion() {
        for sub in [None, Some((b'c', 0)), Some((b'x', 7)), Some((b'X', 255))] {
            let frame = Frame { at: 3u16, sub: pack_sub(sub), pos: 0, next: 1 };
            assert_eq!(frame.cursor(), Cursor { at: 3, sub }, "{sub:?}");
        }
    }

    #[test]
    fn the_step_budget_ends_a_long_match() {
        // One step per node, and each literal character is one: a format of
        // 50,001 characters is past the budget, where Python still matches.
        for (len, matches) in [(49_000, true), (50_001, false)] {
            let lit = "x".repeat(len);
            let parsed = parse_time(&std::format!("{lit}2026"), &std::format!("{lit}%Y"));
            assert_eq!(parsed.is_some(), matches, "{len}");
        }
    }

    #[test]
    fn digit_runs_and_whitespace_take_what_python_takes() {
        // `%f` is `[0-9]{1,6}`: never the space that `%d`'s ` [1-9]` starts with.
        let parsed = parse_time("1 2", "%f%d").map(|r| iso(r.naive));
        assert_eq!(parsed.as_deref(), Some("1900-01-02T00:00:00.100000"));
        // Whitespace in the format is `\s+`: at least one character.
        assert_eq!(parse_time("202603", "%Y %m"), None);
    }

    #[test]
    fn the_deepest_choice_stack_fits() {
        // Every choice-capable node is a live choice point when the match
        // ends: leading whitespace before `%d`, the 11 directives with a
        // shorter candidate the next node can start at, and the trailing
        // whitespace (`%V` before it cannot be one, nor `%W` before `%z`:
        // `%Y` sits between). 13 frames with ASCII spaces, within
        // `MAX_FRAMES`; 12 with ideographic ones (` [1-9]` is ASCII).
        let fmt = "  %d%f%H%I%j%m%M%S%U%W%Y%z%V  ";
        let text = "  12123456121112311121212122026+01001212  ";
        for text in [text, &text.replace(' ', "\u{3000}")] {
            let (mut narrow, mut wide) = (Captures::<u16>::new(), Captures::<usize>::new());
            assert_eq!(regex_match(fmt, text, &mut narrow, &mut 0), Some(text.len()));
            assert_eq!(regex_match(fmt, text, &mut wide, &mut 0), Some(text.len()));
            for d in GROUP_LETTERS.chars() {
                assert_eq!(narrow.span(d), wide.span(d), "{d}");
            }
            assert_eq!(narrow.get(text, 'z'), Some("+010012"));
        }
        // Past 16-bit positions, the same match with `usize` ones.
        let fmt = std::format!("%Y{}%m%d", " ".repeat(70_000));
        let parsed = parse_time("2026 7 5", &fmt).map(|r| iso(r.naive));
        assert_eq!(parsed.as_deref(), Some("2026-07-05T00:00:00.000000"));
        // A choice point (`%d` as "11" or "1") past 65,535 bytes of format.
        let fmt = std::format!("%Y{}%d%m", " ".repeat(70_000));
        let parsed = parse_time("2026 111", &fmt).map(|r| iso(r.naive));
        assert_eq!(parsed.as_deref(), Some("2026-01-11T00:00:00.000000"));
    }
}
