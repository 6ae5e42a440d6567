//! The canonical string in one pass over the text: the parse that validates
//! it records where every token is (a tape of `(start, end)` positions), and
//! the dump is written from the tape, copying runs of bytes that are already
//! canonical. An object whose keys are in order is written as it stands;
//! only one whose keys are not is sorted. A value whose tokens do not fit
//! the tape is dumped by the walk in `canonical.rs`, which reads the text
//! again for each object.

use core::cmp::Ordering;

use super::canonical::{write_quoted, write_scalar_text, Buffered};
use super::{at, Offset, Sink};
use crate::json::{self, Visit};

/// The tokens of a value in document order, at most `N`: a scalar or a
/// plain string (its own dump: printable ASCII and escapes `json.dumps`
/// writes as they stand) as its
/// `(start, end)` in the text, any other string as `(end, start)`; a
/// container as `(start, past)`, `past` being the index of the first token
/// after it (while it is open, the index of its parent's token, plus one:
/// the open containers are a stack threaded through the tape).
pub(super) struct Tape<'v, O, const N: usize> {
    /// Borrowed, not owned: a vector inside a struct is zeroed whole when
    /// the struct is made (128 KB on the host), one on its own is not.
    tokens: &'v mut heapless::Vec<(O, O), N>,
    /// The innermost open container's tape index plus one; 0 for none.
    innermost: usize,
    /// A token did not fit (or a position did not fit `O`).
    full: bool,
}

impl<'v, O: Offset, const N: usize> Tape<'v, O, N> {
    /// A tape recording into `tokens`, an empty vector.
    pub(super) fn new(tokens: &'v mut heapless::Vec<(O, O), N>) -> Self {
        Tape { tokens, innermost: 0, full: false }
    }

    /// Every token, when all of them fit.
    pub(super) fn tokens(&self) -> Option<&[(O, O)]> {
        (!self.full).then_some(self.tokens.as_slice())
    }

    fn push(&mut self, a: usize, b: usize) {
        let pushed = match (O::of(a), O::of(b)) {
            (Some(a), Some(b)) => self.tokens.push((a, b)).is_ok(),
            _ => false,
        };
        self.full |= !pushed;
    }
}

impl<O: Offset, const N: usize> Visit for Tape<'_, O, N> {
    fn open(&mut self, at: usize) {
        let index = self.tokens.len();
        self.push(at, self.innermost);
        self.innermost = index.saturating_add(1);
    }

    fn close(&mut self) {
        let past = O::of(self.tokens.len());
        if let (Some(token), Some(past)) =
            (self.innermost.checked_sub(1).and_then(|i| self.tokens.get_mut(i)), past)
        {
            self.innermost = at(token.1);
            token.1 = past;
        }
    }

    /// A string that is not plain is recorded backwards, `(end, start)`:
    /// the one bit the emitter needs, at no cost in room.
    fn token(&mut self, start: usize, end: usize, plain: bool) {
        if plain {
            self.push(start, end);
        } else {
            self.push(end, start);
        }
    }
}

/// An open container of the dump.
#[derive(Clone, Copy)]
struct Frame<O> {
    object: bool,
    /// Whether the next item is preceded by `", "`.
    comma: bool,
    /// Array: the tape index of the next item. Object: the scratch index
    /// of the next member's key (its sorted members run to the scratch's
    /// end while it is the innermost object open).
    next: O,
    /// Array: the tape index just past it. Object: where its members start
    /// in the scratch.
    end: O,
}

/// Where the token after the value at tape index `i` is.
fn past<O: Offset>(text: &[u8], tape: &[(O, O)], i: usize) -> usize {
    match tape.get(i) {
        Some(&(start, past)) if matches!(text.get(at(start)), Some(b'{' | b'[')) => at(past),
        _ => i.saturating_add(1),
    }
}

/// The span of the string token at tape index `i`, and whether it is
/// plain.
fn string<O: Offset>(tape: &[(O, O)], i: usize) -> (usize, usize, bool) {
    let (a, c) = tape.get(i).map_or((0, 0), |&(a, c)| (at(a), at(c)));
    if a < c {
        (a, c, true)
    } else {
        (c, a, false)
    }
}

/// The key at tape index `k` against the one at `l`, as Python orders `str`.
fn cmp_keys<O: Offset>(text: &str, tape: &[(O, O)], k: O, l: O) -> Ordering {
    json::cmp_keys_at(text, string(tape, at(k)).0, string(tape, at(l)).0)
}

/// Writes the key at `start..end` of `b` (a plain one: its own dump) and
/// the `": "` after it: in one piece when the text has it there.
fn write_key<S: Sink>(b: &[u8], start: usize, end: usize, out: &mut S) {
    let with_colon = end.saturating_add(2);
    match b.get(start..with_colon) {
        Some([.., b'"', b':', b' ']) => out.write(b.get(start..with_colon).unwrap_or(&[])),
        _ => {
            out.write(b.get(start..end).unwrap_or(&[]));
            out.write(b": ");
        }
    }
}

/// Writes the value the tape of `text` holds as `json.dumps(...,
/// sort_keys=True)` into `sink`, `D` levels deep at most, with `M` keys at
/// most (the caller checked both: the parse bounds the depth, the tape the
/// keys), through a buffer of `B` bytes. Not inlined: its frame and the
/// parse's are never on the stack together.
#[inline(never)]
pub(super) fn emit<S: Sink, O: Offset, const D: usize, const M: usize, const B: usize>(
    text: &str,
    tape: &[(O, O)],
    sink: &mut S,
) {
    let mut out = Buffered::<S, B>::new(Some(sink));
    write_tape::<_, O, D, M, B>(text, tape, &mut out);
    out.flush();
}

/// [`emit`]'s walk, into the buffer.
fn write_tape<S: Sink, O: Offset, const D: usize, const M: usize, const B: usize>(
    text: &str,
    tape: &[(O, O)],
    out: &mut Buffered<'_, S, B>,
) {
    let b = text.as_bytes();
    let mut frames: heapless::Vec<Frame<O>, D> = heapless::Vec::new();
    let mut scratch: heapless::Vec<O, M> = heapless::Vec::new();
    let mut value = 0;
    loop {
        if let Some(frame) = write_value(text, tape, value, &mut scratch, out) {
            // Cannot fail: the parse bounded the depth by `D`.
            let _ = frames.push(frame);
        }
        // The next value to write, closing what has no more.
        loop {
            let Some(top) = frames.last_mut() else {
                return;
            };
            let next = at(top.next);
            let item = if top.object {
                scratch.get(next).map(|&key| at(key))
            } else {
                (next < at(top.end)).then_some(next)
            };
            let Some(item) = item else {
                if top.object {
                    out.put(b"}");
                    scratch.truncate(at(top.end));
                } else {
                    out.put(b"]");
                }
                frames.pop();
                continue;
            };
            let comma = core::mem::replace(&mut top.comma, true);
            let after = if top.object { next.saturating_add(1) } else { past(b, tape, item) };
            top.next = O::of(after).unwrap_or(top.end);
            value = item;
            if top.object {
                if comma {
                    out.put(b", ");
                }
                match string(tape, item) {
                    (start, end, true) => write_key(b, start, end, out),
                    (start, end, false) => {
                        write_quoted(text, start, end, out);
                        out.put(b": ");
                    }
                }
                value = item.saturating_add(1);
            } else if comma {
                out.put(b", ");
            }
            break;
        }
    }
}

/// Writes the value at tape index `i`: a scalar whole, a container's
/// opening bracket, returning its frame (an object's members gathered into
/// the scratch in key order, the last of equal keys kept).
fn write_value<S: Sink, O: Offset, const M: usize, const B: usize>(
    text: &str,
    tape: &[(O, O)],
    i: usize,
    scratch: &mut heapless::Vec<O, M>,
    out: &mut Buffered<'_, S, B>,
) -> Option<Frame<O>> {
    let b = text.as_bytes();
    let &(start, end) = tape.get(i)?;
    let (start, end) = (at(start), at(end));
    match b.get(start) {
        Some(b'{') => {
            let first = scratch.len();
            let mut k = i.saturating_add(1);
            while k < end {
                // Cannot fail: the tape holds at most `M` keys.
                let _ = scratch.push(O::of(k)?);
                k = past(b, tape, k.saturating_add(1));
            }
            let run = scratch.get_mut(first..).unwrap_or(&mut []);
            let span = |x: O| {
                let (start, end, _) = string(tape, at(x));
                (start.saturating_add(1), end.saturating_sub(1))
            };
            let kept = O::order(b, &span, run, &|x, y| cmp_keys(text, tape, x, y));
            scratch.truncate(first.saturating_add(kept));
            out.put(b"{");
            let first = O::of(first)?;
            Some(Frame { object: true, comma: false, next: first, end: first })
        }
        Some(b'[') => {
            out.put(b"[");
            Some(Frame {
                object: false,
                comma: false,
                next: O::of(i.saturating_add(1))?,
                end: O::of(end)?,
            })
        }
        // A string recorded backwards: escapes or non-ASCII to write.
        _ if start > end => {
            write_quoted(text, end, start, out);
            None
        }
        // A plain string, a number or a literal.
        _ => {
            write_scalar_text(b.get(start..end)?, out);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::args::tests::Writes;
    use std::vec::Vec;

    /// The fast path's point is one write instead of two: a key that the
    /// text follows with `": "` goes out with it in one piece; otherwise
    /// the key and the separator are written apart (the same string).
    #[test]
    fn a_key_followed_by_its_separator_in_the_text_is_written_in_one_piece() {
        let mut one = Writes(Vec::new());
        write_key(b"{\"ab\": 1}", 1, 5, &mut one);
        assert_eq!(one.0, [b"\"ab\": ".to_vec()]);
        for text in [&b"{\"ab\":1}"[..], b"{\"ab\" : 1}", b"{\"ab\""] {
            let mut two = Writes(Vec::new());
            write_key(text, 1, 5, &mut two);
            assert_eq!(
                two.0,
                [b"\"ab\"".to_vec(), b": ".to_vec()],
                "{:?}",
                std::str::from_utf8(text)
            );
        }
    }
}
