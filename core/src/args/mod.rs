//! Tool-argument equality, exactly as AgentScope's `_get_repeated_tool_error`.
//!
//! The reference compares two tool calls' arguments as Python strings: for
//! each raw argument text it takes `json.dumps(json.loads(raw),
//! sort_keys=True)` when `json.loads` accepts the text, else `raw.strip()`.
//! [`write_canonical`] produces that exact string as a byte stream into a
//! [`Sink`], never holding it whole; [`argument_key`] hashes it (SipHash-1-3,
//! 128 bits, fixed key) into an [`ArgumentKey`], so two arguments are equal
//! exactly when their keys are (up to a 128-bit hash collision).
//!
//! What the canonical string is, as Python builds it:
//!
//! - object keys sorted by code point (a lone surrogate escape is a code point
//!   U+D800..U+DFFF, an escaped pair one non-BMP code point), a duplicate key
//!   keeping its last value; separators `", "` and `": "`; `{}` and `[]` when
//!   empty;
//! - strings with `ensure_ascii`: `\"` `\\` `\n` `\r` `\t` `\b` `\f`, every
//!   other character outside `0x20..=0x7e` as lowercase `\u00xx`, a non-BMP
//!   character as a lowercase surrogate pair;
//! - integers as their digits (`-0` is `0`); floats as Python's `repr`
//!   (shortest round-trip digits, fixed notation for exponents -4..=15 with
//!   `.0` when integral, else `1e+16`, `1.5e-05`); `Infinity`, `-Infinity`,
//!   `NaN` (so `1e400` is `Infinity`); `true`, `false`, `null`. Without the
//!   default feature `python-floats` (for small flash), a float is written as
//!   its exact decimal in the same layout, which is `repr` exactly for up to
//!   15 significant digits within 1e-307..1e308;
//! - the fallback `raw.strip()` removes Python's whitespace: Rust's
//!   [`char::is_whitespace`] plus U+001C..U+001F. So an invalid text can equal
//!   a valid one: `"\u{a0}{\"a\": 1}"` strips to the dump of `{"a":1}`.
//!
//! # One pass when the tokens fit
//!
//! The parse that validates the text also records where each token is (a
//! tape: `(start, end)` per string or scalar, a container's extent as a
//! tape index, and whether a string is plain: its own dump, printable
//! ASCII and escapes that `json.dumps` writes as they stand, such as `\n`
//! or a lowercase `\u00e9`). When every token fits the tape (64 tokens, 256 bytes of stack
//! on a device; 16,384 on the host for larger arguments), the canonical
//! string is written from it: plain strings and numbers already in
//! Python's form as they stand, an object's keys ordered by insertion (keys
//! already in order cost one comparison each) or, on the host, sorted by
//! six-byte windows of their text compared as integers. Past the tape,
//! the walk below reads the text again for each object.
//!
//! # Capacity: chosen by type
//!
//! Sorting needs the member positions of every object open along the current
//! path. They live in a fixed scratch of `MAX_MEMBERS` entries shared by all
//! levels, nesting is bounded by `MAX_DEPTH`, and positions are offsets of
//! a fixed width, which bounds the text to `MAX_LEN` bytes. Nothing is
//! recursive: one small frame per open container. A [`Capacity`] sets the
//! bounds:
//!
//! | [`Capacity`] | `MAX_DEPTH` | `MAX_MEMBERS` | `MAX_LEN` | stack |
//! |---|---|---|---|---|
//! | [`DeviceCapacity`] (the default: [`argument_key`], [`Engine::new`](crate::Engine::new)) | 32 | 128 | 65,535 B | a 64-token tape of 4-byte entries; past it 8-byte frames, 2-byte entries, a heapsort: under 1.1 KB |
//! | [`HostCapacity`] ([`Engine::with_argument_capacity`](crate::Engine::with_argument_capacity)) | 1,024 | 65,536 | 4 GiB | a 16,384-token tape (128 KB), 44 KB to write it and 128 KB to sort its keys: about 300 KB; past it 16-byte frames, 4-byte entries, a 12 KB cache of container ends: about 285 KB |
//!
//! The host capacity covers every argument the reference answers: it raises
//! `RecursionError` from about 985 levels. A program links only the
//! capacities it names, so a device build never carries the host's code or
//! stack, whatever else the workspace uses.
//!
//! Valid JSON past a bound is not canonicalized: it is compared as
//! `raw.strip()`, like invalid JSON, and [`write_canonical`] says so with
//! [`Canonical::Fallback`]. This is a deliberate difference (the README's
//! table): two equal calls that differ only in key order or spacing past the
//! bounds compare unequal; identical retries, the case the rule exists for,
//! still compare equal. [`write_canonical_with`] takes other bounds.

use core::cmp::Ordering;

use crate::json;
use crate::text::py_strip;

use canonical::{dump, dump_whole, Buffered, BLOCK};

// The canonical form, in the order Python builds it: the iterative dump
// (containers, strings, scalars), the members' sort, the numbers.
mod canonical;
mod floats;
mod sip;
mod sort;
mod tape;
#[cfg(test)]
mod tests;

/// [`DeviceCapacity`]'s depth bound: the default's.
pub const MAX_DEPTH: usize = DeviceCapacity::MAX_DEPTH;
/// [`DeviceCapacity`]'s member bound: the default's.
pub const MAX_MEMBERS: usize = DeviceCapacity::MAX_MEMBERS;
/// [`DeviceCapacity`]'s length bound: the default's.
pub const MAX_LEN: usize = DeviceCapacity::MAX_LEN;

/// How large an argument the comparison canonicalizes. Past a bound, valid
/// JSON is compared as `raw.strip()` ([`Canonical::Fallback`]).
/// Implemented by [`DeviceCapacity`] and [`HostCapacity`] only.
pub trait Capacity: sealed::Sealed {
    /// Deepest container nesting that is canonicalized (the outermost
    /// container is level 1).
    const MAX_DEPTH: usize;
    /// Most object members (counted with duplicates) that may be open at
    /// once along one path through the document.
    const MAX_MEMBERS: usize;
    /// Longest valid JSON value (without surrounding whitespace) that is
    /// canonicalized.
    const MAX_LEN: usize;

    /// Writes `raw`'s canonical string into `sink` within these bounds and
    /// says which path produced it.
    fn write_canonical<S: Sink>(raw: &str, sink: &mut S) -> Canonical;

    /// The key of `raw`: the hash of its canonical string within these
    /// bounds.
    fn argument_key(raw: &str) -> ArgumentKey {
        let mut sink = HashSink::new();
        Self::write_canonical(raw, &mut sink);
        sink.finish()
    }
}

mod sealed {
    pub trait Sealed {
        /// The capacity's name, for `Debug` and `defmt`.
        const NAME: &'static str;
    }
    impl Sealed for super::DeviceCapacity {
        const NAME: &'static str = "DeviceCapacity";
    }
    impl Sealed for super::HostCapacity {
        const NAME: &'static str = "HostCapacity";
    }
}

/// How an engine compares tool arguments: the key function of the
/// [`Capacity`] it was given, chosen once. Only the capacities a program
/// names are linked into it.
#[derive(Clone, Copy)]
pub(crate) struct Comparison {
    key: fn(&str) -> ArgumentKey,
    capacity: &'static str,
}

impl Comparison {
    /// Comparing at capacity `C`.
    pub(crate) fn of<C: Capacity>() -> Self {
        Comparison { key: C::argument_key, capacity: <C as sealed::Sealed>::NAME }
    }

    /// The key of `raw` at the chosen capacity.
    pub(crate) fn key(&self, raw: &str) -> ArgumentKey {
        (self.key)(raw)
    }
}

impl Default for Comparison {
    fn default() -> Self {
        Comparison::of::<DeviceCapacity>()
    }
}

impl core::fmt::Debug for Comparison {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.capacity)
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Comparison {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.capacity);
    }
}

/// The capacity of a device, and the default: 32 levels, 128 open members,
/// 65,535 bytes, with about 1 KB of stack (16-bit offsets, a 64-token
/// tape, a heapsort past it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCapacity;

impl Capacity for DeviceCapacity {
    const MAX_DEPTH: usize = 32;
    const MAX_MEMBERS: usize = 128;
    const MAX_LEN: usize = u16::MAX as usize;

    fn write_canonical<S: Sink>(raw: &str, sink: &mut S) -> Canonical {
        write_canonical_in::<S, u16, 32, 128, 0, false>(raw, sink)
    }
}

/// The capacity of a host (the sim, the differential tests): 1,024 levels,
/// 65,536 open members and 4 GiB, so every argument AgentScope answers
/// compares as it does; about 300 KB of stack for the largest arguments
/// (32-bit offsets, `core`'s quicksort, a cache of container ends).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCapacity;

impl Capacity for HostCapacity {
    const MAX_DEPTH: usize = json::DEPTH_CAPACITY;
    const MAX_MEMBERS: usize = 65_536;
    const MAX_LEN: usize = u32::MAX as usize;

    fn write_canonical<S: Sink>(raw: &str, sink: &mut S) -> Canonical {
        write_canonical_in::<S, u32, { json::DEPTH_CAPACITY }, 65_536, 1024, true>(raw, sink)
    }
}

/// A position in the argument's text (or in the scratch): `u16` keeps a
/// device's frames small, `u32` lifts the length bound on the host.
trait Offset: Copy + Ord + Default {
    /// The largest position, as an index.
    const MAX: usize;
    /// The position as an index (lossless: offsets are at most 32 bits).
    fn index(self) -> usize;
    /// `n` as a position, if it fits.
    fn of(n: usize) -> Option<Self>;
    /// Orders the members of one object (`run`, in document order) by
    /// `cmp`, their keys' order, keeping the last of equal keys (moved to
    /// the front); returns how many are kept. `span` gives each key's
    /// content in `text`.
    fn sort(
        text: &[u8],
        span: &dyn Fn(Self) -> (usize, usize),
        run: &mut [Self],
        cmp: &dyn Fn(Self, Self) -> Ordering,
    ) -> usize;
    /// The tape's order of one object's keys (`run`, in document order):
    /// sorted by `cmp`, the last of equal keys kept; returns how many are.
    fn order(
        text: &[u8],
        span: &dyn Fn(Self) -> (usize, usize),
        run: &mut [Self],
        cmp: &dyn Fn(Self, Self) -> Ordering,
    ) -> usize;
}

impl Offset for u16 {
    const MAX: usize = u16::MAX as usize;
    fn index(self) -> usize {
        usize::from(self)
    }
    fn of(n: usize) -> Option<Self> {
        u16::try_from(n).ok()
    }
    /// A device sorts with a heapsort (key, then position: the last of
    /// equal keys is the last of their run): no recursion, a few words of
    /// stack.
    fn sort(
        _: &[u8],
        _: &dyn Fn(Self) -> (usize, usize),
        run: &mut [Self],
        cmp: &dyn Fn(Self, Self) -> Ordering,
    ) -> usize {
        sort::heapsort(run, |x, y| cmp(x, y).then(x.cmp(&y)) == Ordering::Less);
        sort::dedup_last(run, &|x, y| cmp(x, y) == Ordering::Equal)
    }
    /// A device's tape holds at most 32 keys: ordered by insertion, keys
    /// in order at one comparison each.
    fn order(
        _: &[u8],
        _: &dyn Fn(Self) -> (usize, usize),
        run: &mut [Self],
        cmp: &dyn Fn(Self, Self) -> Ordering,
    ) -> usize {
        sort::insert_last(run, cmp)
    }
}

impl Offset for u32 {
    const MAX: usize = u32::MAX as usize;
    fn index(self) -> usize {
        self as usize
    }
    fn of(n: usize) -> Option<Self> {
        u32::try_from(n).ok()
    }
    /// The host sorts by windows of the keys' bytes (integers compared),
    /// else with `core`'s pattern-defeating quicksort (key, then position),
    /// which compares about half as often as a heapsort.
    fn sort(
        text: &[u8],
        span: &dyn Fn(Self) -> (usize, usize),
        run: &mut [Self],
        cmp: &dyn Fn(Self, Self) -> Ordering,
    ) -> usize {
        if let Some(kept) = sort::by_window(text, span, run, cmp) {
            return kept;
        }
        run.sort_unstable_by(|&x, &y| cmp(x, y).then(x.cmp(&y)));
        sort::dedup_last(run, &|x, y| cmp(x, y) == Ordering::Equal)
    }
    /// The host's tape may hold thousands of keys: unless already in
    /// order, sorted.
    fn order(
        text: &[u8],
        span: &dyn Fn(Self) -> (usize, usize),
        run: &mut [Self],
        cmp: &dyn Fn(Self, Self) -> Ordering,
    ) -> usize {
        // Strictly increasing keys need neither sorting nor deduplication.
        if run.windows(2).all(|w| matches!(w, [x, y] if cmp(*x, *y) == Ordering::Less)) {
            return run.len();
        }
        Self::sort(text, span, run, cmp)
    }
}

/// An offset as an index.
fn at<O: Offset>(offset: O) -> usize {
    offset.index()
}

/// `n` as an offset; past the offsets' width, the length bound is passed.
fn offset<O: Offset>(n: usize) -> Result<O, Bound> {
    O::of(n).ok_or(Bound::Length)
}

/// The capacity tried first: a small argument never pays for the scratch of
/// a large one (the host's scratch is large, and a frame of it has to be
/// probed page by page).
const SMALL_DEPTH: usize = 32;
const SMALL_MEMBERS: usize = 128;

/// Receives the canonical string, in pieces.
pub trait Sink {
    /// Appends `bytes` (the pieces of a UTF-8 string, in order).
    fn write(&mut self, bytes: &[u8]);
}

/// The canonical string of a tool argument, hashed: equal keys mean equal
/// strings (up to a 128-bit hash collision).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ArgumentKey(u128);

impl ArgumentKey {
    /// The 128-bit hash value.
    pub fn as_u128(self) -> u128 {
        self.0
    }
}

// Any fixed key will do: the keys are compared with each other only, never
// stored or sent.
const KEY0: u64 = 0x656e_7661_7761_7265; // "envaware"
const KEY1: u64 = 0x6172_6775_6d65_6e74; // "argument"

/// A [`Sink`] that hashes what it receives with SipHash-1-3 (128 bits) under
/// a fixed key. Only the byte stream counts, not how it is split.
#[derive(Debug, Clone)]
pub struct HashSink {
    hasher: sip::Sip13,
}

impl HashSink {
    /// A hasher that has seen nothing.
    pub fn new() -> Self {
        HashSink { hasher: sip::Sip13::new(KEY0, KEY1) }
    }

    /// The key of everything written so far.
    pub fn finish(&self) -> ArgumentKey {
        ArgumentKey(self.hasher.finish128())
    }
}

impl Default for HashSink {
    fn default() -> Self {
        Self::new()
    }
}

impl Sink for HashSink {
    fn write(&mut self, bytes: &[u8]) {
        self.hasher.write(bytes);
    }
}

/// Which of the reference's two paths produced the canonical string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Canonical {
    /// `json.loads` accepts the text: the string is its sorted `json.dumps`.
    Json,
    /// `json.loads` rejects the text: the string is `raw.strip()`.
    RawStripped,
    /// Valid JSON past a bound: the string is `raw.strip()`, where the
    /// reference would give the sorted dump (see the module docs).
    Fallback(Bound),
}

/// The bound that sent a valid argument to [`Canonical::Fallback`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Bound {
    /// Containers nest deeper than the depth bound.
    Depth,
    /// More object members are open at once than the scratch holds.
    Members,
    /// The value is longer than [`MAX_LEN`] bytes.
    Length,
}

/// The key of `raw`: the hash of its canonical string at the default
/// [`DeviceCapacity`] (bounds [`MAX_DEPTH`] and [`MAX_MEMBERS`]).
pub fn argument_key(raw: &str) -> ArgumentKey {
    DeviceCapacity::argument_key(raw)
}

/// Writes `raw`'s canonical string into `sink` at the default
/// [`DeviceCapacity`] (bounds [`MAX_DEPTH`] and [`MAX_MEMBERS`]) and says
/// which path produced it.
pub fn write_canonical<S: Sink>(raw: &str, sink: &mut S) -> Canonical {
    DeviceCapacity::write_canonical(raw, sink)
}

/// [`write_canonical`] with other bounds: `DEPTH` levels of nesting (at most
/// 1,024) and `MEMBERS` open object members, with the device's offsets
/// (so at most [`MAX_LEN`] bytes).
///
/// Stack: `MEMBERS` offsets of scratch and `DEPTH` frames of three offsets
/// (2 bytes each), plus about 250 bytes; an argument within 32 levels and
/// 128 members uses only that much of it.
pub fn write_canonical_with<S: Sink, const DEPTH: usize, const MEMBERS: usize>(
    raw: &str,
    sink: &mut S,
) -> Canonical {
    write_canonical_in::<S, u16, DEPTH, MEMBERS, 0, false>(raw, sink)
}

/// The canonical string within `DEPTH` and `MEMBERS`, positions as `O`:
/// from the parse's tape when the value's tokens fit it (a large tape when
/// `LARGE`), else by the walk over the text, with a cache of `ENDS`
/// container ends for arguments past the small capacity.
fn write_canonical_in<
    S: Sink,
    O: Offset,
    const DEPTH: usize,
    const MEMBERS: usize,
    const ENDS: usize,
    const LARGE: bool,
>(
    raw: &str,
    sink: &mut S,
) -> Canonical {
    let parsed = if LARGE && raw.len() > SMALL_TAPE_BYTES {
        via_tape::<S, O, DEPTH, LARGE_TAPE, { LARGE_TAPE / 2 }, LARGE_BLOCK>(raw, MEMBERS, sink)
    } else {
        via_tape::<S, O, DEPTH, SMALL_TAPE, { SMALL_TAPE / 2 }, BLOCK>(raw, MEMBERS, sink)
    };
    match parsed {
        None => Canonical::Json,
        Some(parsed) => via_walk::<S, O, DEPTH, MEMBERS, ENDS>(raw, parsed, sink),
    }
}

/// The canonical string by the walk over the text, from the parse that
/// `via_tape` handed back. Not inlined, as `via_tape`.
#[inline(never)]
fn via_walk<S: Sink, O: Offset, const DEPTH: usize, const MEMBERS: usize, const ENDS: usize>(
    raw: &str,
    parsed: Parsed<'_>,
    sink: &mut S,
) -> Canonical {
    let path = match parsed {
        Ok((value, counts)) => {
            let text = value.raw();
            if text.len() > O::MAX {
                Canonical::Fallback(Bound::Length)
            } else if counts.keys <= MEMBERS.min(SMALL_MEMBERS) && counts.depth <= SMALL_DEPTH {
                // Everything fits: no dry run needed.
                dump_whole::<S, O, SMALL_DEPTH, SMALL_MEMBERS, 0>(text, sink);
                return Canonical::Json;
            } else if counts.keys <= MEMBERS {
                // The parse checked the depth, and no path can hold more
                // members than the whole document.
                dump_whole::<S, O, DEPTH, MEMBERS, ENDS>(text, sink);
                return Canonical::Json;
            } else {
                // A dry run first: the sink must not see a partial dump
                // before the member bound turns out to be exceeded.
                match dump::<_, O, DEPTH, MEMBERS, ENDS>(text, &mut Buffered::<S, BLOCK>::new(None))
                {
                    Ok(()) => {
                        dump_whole::<S, O, DEPTH, MEMBERS, ENDS>(text, sink);
                        return Canonical::Json;
                    }
                    Err(bound) => Canonical::Fallback(bound),
                }
            }
        }
        Err(e) if e.kind == json::JsonErrorKind::TooDeep => {
            // Too deep to canonicalize; tell invalid text apart anyway.
            match json::parse(raw, json::DEPTH_CAPACITY) {
                Err(e) if e.kind != json::JsonErrorKind::TooDeep => Canonical::RawStripped,
                _ => Canonical::Fallback(Bound::Depth),
            }
        }
        Err(_) => Canonical::RawStripped,
    };
    sink.write(py_strip(raw).as_bytes());
    path
}

/// Tokens a tape holds: a small tape first, so a small argument never pays
/// for the stack of a large one; the host's large one past
/// `SMALL_TAPE_BYTES` bytes (a text holds at most one token per two bytes,
/// plus one).
const SMALL_TAPE: usize = 64;
const SMALL_TAPE_BYTES: usize = 2 * SMALL_TAPE - 2;
const LARGE_TAPE: usize = 16_384;
/// The dump's buffer for the large tape: a large argument's hash sees an
/// eighth as many writes as through the small one's.
const LARGE_BLOCK: usize = 8 * BLOCK;

/// The parse, and what the walk over the text needs of it.
type Parsed<'t> = Result<(json::Value<'t>, json::Counts), json::JsonError>;

/// Parses `raw` into a tape of `N` tokens and, when it is valid JSON whose
/// tokens all fit and whose `members` bound cannot be passed, writes its
/// canonical string from the tape (`None`); else hands the parse back for
/// the walk over the text. Not inlined: the walk's frame and the tape's
/// are never on the stack together.
#[inline(never)]
fn via_tape<
    't,
    S: Sink,
    O: Offset,
    const DEPTH: usize,
    const N: usize,
    const M: usize,
    const B: usize,
>(
    raw: &'t str,
    members: usize,
    sink: &mut S,
) -> Option<Parsed<'t>> {
    let mut tokens = heapless::Vec::new();
    let mut tape = tape::Tape::<O, N>::new(&mut tokens);
    let parsed = json::parse_visited(raw, DEPTH, &mut tape);
    if let (Ok((value, counts)), Some(tokens)) = (&parsed, tape.tokens()) {
        // No path holds more members than the document; and each key has
        // a value token, so at most `N / 2 = M` keys fit the tape. The
        // length bound is the value's (its tokens may all fit `O` while
        // the spaces before a closing bracket do not): past it, the walk
        // says `Fallback(Length)`.
        if counts.keys <= members && value.raw().len() <= O::MAX {
            tape::emit::<_, O, DEPTH, M, B>(raw, tokens, sink);
            return None;
        }
    }
    Some(parsed)
}
