//! The canonical string of valid JSON, as `json.dumps(..., sort_keys=True)`
//! writes it: an iterative walk (one frame per open container, no
//! recursion), each object's members gathered, sorted and deduplicated, and
//! strings escaped with `ensure_ascii`.

use core::cmp::Ordering;

use super::floats::write_number;
use super::{at, offset, Bound, Offset, Sink};
use crate::json::{self, JsonStr, Kind};

/// Dumps a value known to fit the bounds.
pub(super) fn dump_whole<
    S: Sink,
    O: Offset,
    const DEPTH: usize,
    const MEMBERS: usize,
    const ENDS: usize,
>(
    text: &str,
    sink: &mut S,
) {
    let mut out = Buffered::<S, BLOCK>::new(Some(sink));
    // Cannot fail: the caller checked the bounds.
    let _ = dump::<_, O, DEPTH, MEMBERS, ENDS>(text, &mut out);
    out.flush();
}

/// Gathers the dump's many small pieces so the hash sees few large writes,
/// each of whole `N`-byte blocks but the last (SipHash takes eight bytes at
/// a time, so `N` is a multiple of eight: a write that ends inside a word
/// costs it a byte loop); with no inner sink, a dry run (the same code: a
/// device links one dump).
pub(super) struct Buffered<'s, S: Sink, const N: usize> {
    inner: Option<&'s mut S>,
    buf: [u8; N],
    len: usize,
}

/// The buffer's length on a device, and for any argument that fits the
/// small tape.
pub(super) const BLOCK: usize = 64;

impl<'s, S: Sink, const N: usize> Buffered<'s, S, N> {
    pub(super) fn new(inner: Option<&'s mut S>) -> Self {
        Buffered { inner, buf: [0; N], len: 0 }
    }

    /// Hands on what is pending, the end of the stream.
    pub(super) fn flush(&mut self) {
        self.hand_on(self.len);
    }

    /// Writes the first `n` buffered bytes to the inner sink and empties
    /// the buffer.
    fn hand_on(&mut self, n: usize) {
        if let (Some(pending), Some(inner)) = (self.buf.get(..n), self.inner.as_mut()) {
            if !pending.is_empty() {
                inner.write(pending);
            }
        }
        self.len = 0;
    }
}

impl<S: Sink, const N: usize> Sink for Buffered<'_, S, N> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let start = self.len;
        let end = start.saturating_add(bytes.len());
        match self.buf.get_mut(start..end) {
            // Most pieces are a few bytes (a separator, a short key): a
            // byte loop here costs less than a call to a copy routine.
            Some(room) => {
                for (to, &from) in room.iter_mut().zip(bytes) {
                    *to = from;
                }
                self.len = end;
            }
            None => self.write_past_block(bytes),
        }
    }
}

impl<S: Sink, const N: usize> Buffered<'_, S, N> {
    /// Writes a piece whose length is known where it is written (a
    /// bracket, a separator): a move or two, not a copy loop.
    #[inline]
    pub(super) fn put<const K: usize>(&mut self, piece: &[u8; K]) {
        let end = self.len.saturating_add(K);
        match self.buf.get_mut(self.len..end).and_then(|room| <&mut [u8; K]>::try_from(room).ok()) {
            Some(room) => {
                *room = *piece;
                self.len = end;
            }
            None => self.write_past_block(piece),
        }
    }

    /// A piece that does not fit: the buffer is filled and handed on, then
    /// whole blocks of the piece go straight to the inner sink, and the
    /// rest is buffered. The inner sink sees whole blocks only.
    #[inline(never)]
    fn write_past_block(&mut self, bytes: &[u8]) {
        let fill = N.saturating_sub(self.len).min(bytes.len());
        let (head, rest) = (bytes.get(..fill).unwrap_or(&[]), bytes.get(fill..).unwrap_or(&[]));
        if let Some(room) = self.buf.get_mut(self.len..) {
            crate::text::copy_bytes(room, head);
        }
        self.hand_on(N);
        let whole = rest.len() / N * N;
        let (blocks, tail) = (rest.get(..whole).unwrap_or(&[]), rest.get(whole..).unwrap_or(&[]));
        if let Some(inner) = self.inner.as_mut() {
            if !blocks.is_empty() {
                inner.write(blocks);
            }
        }
        crate::text::copy_bytes(&mut self.buf, tail);
        self.len = tail.len();
    }
}

/// Container ends found while skipping values, in a direct-mapped cache of
/// `N` entries. Collecting an object's members skips each value to find
/// the next key, so without it a chain of nested objects is read once per
/// level; with it, once. The host has one; a device (`N` = 0) reads again.
pub(super) struct Ends<O, const N: usize> {
    /// `(start, end)` of a container; start 0 (the outermost value, never
    /// skipped) marks a free slot.
    pub(super) slots: [(O, O); N],
    /// The start of each container open during one skip, by depth.
    opens: [O; N],
}

impl<O: Offset, const N: usize> Ends<O, N> {
    pub(super) fn new() -> Self {
        Ends { slots: [(O::default(), O::default()); N], opens: [O::default(); N] }
    }

    /// Offset just past the (validated) value at `start`, remembering the
    /// end of every container inside it.
    pub(super) fn skip(&mut self, text: &str, start: usize) -> Option<usize> {
        let b = text.as_bytes();
        if N == 0 || !matches!(b.get(start), Some(b'{' | b'[')) {
            return json::value_end(b, start);
        }
        if let Some(&(s, e)) = self.slots.get(start % N) {
            if at(s) == start && s != O::default() {
                return Some(at(e));
            }
        }
        let mut depth = 0usize;
        let mut i = start;
        loop {
            match b.get(i)? {
                b'{' | b'[' => {
                    if let Some(slot) = self.opens.get_mut(depth) {
                        *slot = offset(i).ok()?;
                    }
                    depth += 1;
                    i += 1;
                }
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    i += 1;
                    if let Some(&open) = self.opens.get(depth) {
                        if let Some(slot) = self.slots.get_mut(at(open) % N) {
                            *slot = (open, offset(i).ok()?);
                        }
                    }
                    if depth == 0 {
                        return Some(i);
                    }
                }
                b'"' => i = json::string_end(b, i)?,
                _ => i += 1,
            }
        }
    }
}

/// An open container of the dump, as offsets into the value's text (or
/// into the scratch): 8 bytes on a device.
#[derive(Clone, Copy)]
pub(super) struct Frame<O> {
    kind: FrameKind,
    /// Array: where to read the next item. Object: the first of its sorted
    /// members in the scratch (they run to the scratch's end while the
    /// object is the innermost one open).
    a: O,
    /// Object: the next member to write, in the scratch.
    b: O,
    /// Object: the offset just past its closing brace.
    c: O,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum FrameKind {
    ArrayFirst,
    ArrayRest,
    Object,
}

/// Writes the (validated) value `text` as Python's `json.dumps(...,
/// sort_keys=True)`, iteratively: nesting costs a frame, not a call.
pub(super) fn dump<
    S: Sink,
    O: Offset,
    const DEPTH: usize,
    const MEMBERS: usize,
    const ENDS: usize,
>(
    text: &str,
    out: &mut S,
) -> Result<(), Bound> {
    let mut frames: heapless::Vec<Frame<O>, DEPTH> = heapless::Vec::new();
    let mut scratch: heapless::Vec<O, MEMBERS> = heapless::Vec::new();
    let mut ends = Ends::<O, ENDS>::new();
    open(text, 0, &mut frames, &mut scratch, &mut ends, out)?;
    loop {
        let Some(top) = frames.last_mut() else {
            return Ok(());
        };
        let value_start = match top.kind {
            FrameKind::ArrayFirst | FrameKind::ArrayRest => {
                match json::next_element(text, at(top.a)) {
                    Some(item) => {
                        if top.kind == FrameKind::ArrayRest {
                            out.write(b", ");
                        }
                        top.kind = FrameKind::ArrayRest;
                        item
                    }
                    None => {
                        out.write(b"]");
                        let end = json::skip_ws(text.as_bytes(), at(top.a)).saturating_add(1);
                        frames.pop();
                        closed(&mut frames, end)?;
                        continue;
                    }
                }
            }
            FrameKind::Object => {
                let next = at(top.b);
                match scratch.get(next) {
                    Some(&key) => {
                        if top.b != top.a {
                            out.write(b", ");
                        }
                        top.b = offset(at(top.b).saturating_add(1))?;
                        let key = at(key);
                        let name = json::key_at(text, key).unwrap_or(JsonStr::from_validated(""));
                        write_string(name, out);
                        out.write(b": ");
                        match json::member_value(text, key, name) {
                            Some(value) => value,
                            None => continue,
                        }
                    }
                    None => {
                        out.write(b"}");
                        let (start, end) = (at(top.a), at(top.c));
                        frames.pop();
                        scratch.truncate(start);
                        closed(&mut frames, end)?;
                        continue;
                    }
                }
            }
        };
        open(text, value_start, &mut frames, &mut scratch, &mut ends, out)?;
    }
}

/// A container ending at `end` was closed: an array around it reads on from
/// there (an object around it reads its members from the scratch).
pub(super) fn closed<O: Offset, const DEPTH: usize>(
    frames: &mut heapless::Vec<Frame<O>, DEPTH>,
    end: usize,
) -> Result<(), Bound> {
    if let Some(parent) = frames.last_mut() {
        if parent.kind != FrameKind::Object {
            parent.a = offset(end)?;
        }
    }
    Ok(())
}

/// Writes the scalar at `start`, or writes the container's opening bracket
/// there and pushes its frame (collecting, sorting and deduplicating an
/// object's members).
pub(super) fn open<
    S: Sink,
    O: Offset,
    const DEPTH: usize,
    const MEMBERS: usize,
    const ENDS: usize,
>(
    text: &str,
    start: usize,
    frames: &mut heapless::Vec<Frame<O>, DEPTH>,
    scratch: &mut heapless::Vec<O, MEMBERS>,
    ends: &mut Ends<O, ENDS>,
    out: &mut S,
) -> Result<(), Bound> {
    let b = text.as_bytes();
    let frame = match b.get(start) {
        Some(b'{') => {
            let first = scratch.len();
            let mut pos = start.saturating_add(1);
            while let Some(key) = json::next_element(text, pos) {
                scratch.push(offset(key)?).map_err(|_| Bound::Members)?;
                let value =
                    json::key_at(text, key).and_then(|name| json::member_value(text, key, name));
                pos = match value.and_then(|v| ends.skip(text, v)) {
                    Some(end) => end,
                    None => break,
                };
            }
            let end = json::skip_ws(b, pos).saturating_add(1);
            let run = scratch.get_mut(first..).unwrap_or(&mut []);
            // Keys already in strictly increasing order (often so) need
            // neither sorting nor deduplication.
            let sorted = run.windows(2).all(|w| match w {
                [x, y] => json::cmp_keys_at(text, at(*x), at(*y)) == Ordering::Less,
                _ => true,
            });
            if !sorted {
                let span = |x: O| {
                    let start = at(x).saturating_add(1);
                    (
                        start,
                        json::key_at(text, at(x))
                            .map_or(start, |key| start.saturating_add(key.raw().len())),
                    )
                };
                let kept = O::sort(b, &span, run, &|x, y| json::cmp_keys_at(text, at(x), at(y)));
                scratch.truncate(first.saturating_add(kept));
            }
            out.write(b"{");
            let first = offset(first)?;
            Frame { kind: FrameKind::Object, a: first, b: first, c: offset(end)? }
        }
        Some(b'[') => {
            out.write(b"[");
            Frame {
                kind: FrameKind::ArrayFirst,
                a: offset(start.saturating_add(1))?,
                b: O::default(),
                c: O::default(),
            }
        }
        _ => {
            let Some((value, end)) = json::value_at(text, start) else {
                return Ok(());
            };
            write_scalar(value, out);
            // An array around it reads on from its end.
            return closed(frames, end);
        }
    };
    frames.push(frame).map_err(|_| Bound::Depth)
}

pub(super) fn write_scalar<S: Sink>(value: json::Value<'_>, out: &mut S) {
    let raw = value.raw();
    match value.kind() {
        Kind::String => {
            if let Some(s) = value.as_str() {
                write_string(s, out);
            }
        }
        // Containers are opened by the caller.
        Kind::Object | Kind::Array => {}
        _ => write_scalar_text(raw.as_bytes(), out),
    }
}

/// Writes a (validated) number, literal or plain string (see `tape`):
/// `true`, `false`, `null`, `NaN`, `Infinity`, `-Infinity` and a plain
/// string are their own dump.
pub(super) fn write_scalar_text<S: Sink>(raw: &[u8], out: &mut S) {
    match raw {
        [b'0'..=b'9', ..] | [b'-', b'0'..=b'9', ..] => write_number(raw, out),
        _ => out.write(raw),
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

pub(super) fn write_u16_escape<S: Sink>(unit: u32, out: &mut S) {
    let digit = |shift: u32| HEX.get(((unit >> shift) & 0xf) as usize).copied().unwrap_or(b'0');
    out.write(&[b'\\', b'u', digit(12), digit(8), digit(4), digit(0)]);
}

/// Writes the (validated) string token at `start..end` of `text`, quotes
/// included, as [`write_string`] does.
pub(super) fn write_quoted<S: Sink>(text: &str, start: usize, end: usize, out: &mut S) {
    write_string(
        JsonStr::from_validated(
            text.get(start.saturating_add(1)..end.saturating_sub(1)).unwrap_or(""),
        ),
        out,
    );
}

/// Writes a string as Python's `json.dumps` with `ensure_ascii=True`.
pub(super) fn write_string<S: Sink>(s: JsonStr<'_>, out: &mut S) {
    out.write(b"\"");
    let mut rest = s.raw();
    while !rest.is_empty() {
        // Printable ASCII other than `\` (a raw `"` cannot occur) is its
        // own dump: write such runs whole.
        let plain = json::printable_run(rest.as_bytes());
        let (run, tail) = (rest.get(..plain).unwrap_or(""), rest.get(plain..).unwrap_or(""));
        if !run.is_empty() {
            out.write(run.as_bytes());
        }
        let mut code_points = JsonStr::from_validated(tail).code_points();
        if let Some(c) = code_points.next() {
            write_code_point(c, out);
        }
        rest = code_points.rest();
    }
    out.write(b"\"");
}

/// Writes one decoded code point as `json.dumps` with `ensure_ascii=True`.
pub(super) fn write_code_point<S: Sink>(c: u32, out: &mut S) {
    {
        match c {
            0x22 => out.write(b"\\\""),
            0x5c => out.write(b"\\\\"),
            0x0a => out.write(b"\\n"),
            0x0d => out.write(b"\\r"),
            0x09 => out.write(b"\\t"),
            0x08 => out.write(b"\\b"),
            0x0c => out.write(b"\\f"),
            0x20..=0x7e => out.write(&[c as u8]),
            0x10000.. => {
                let v = c.wrapping_sub(0x10000);
                write_u16_escape(0xd800 | ((v >> 10) & 0x3ff), out);
                write_u16_escape(0xdc00 | (v & 0x3ff), out);
            }
            _ => write_u16_escape(c, out),
        }
    }
}
