//! A validating JSON reader with exactly the acceptance of Python's `json.loads`.
//!
//! [`parse`] accepts a text exactly when CPython 3.11's `json.loads` (C scanner,
//! `strict=True`) accepts the same `str`, except for the nesting bound, which
//! the caller gives instead of Python's recursion limit:
//!
//! - whitespace around tokens is only space, tab, line feed and carriage
//!   return; a leading byte-order mark (U+FEFF) is an error, as is any text
//!   after the value;
//! - `true`, `false`, `null` and Python's extensions `NaN`, `Infinity`,
//!   `-Infinity`;
//! - numbers `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`, ASCII digits
//!   only; an integer (no fraction, no exponent) with more than 4300 digits is
//!   an error, as Python's `int` refuses to convert it;
//! - strings with no raw control character below U+0020, escapes `\"` `\\`
//!   `\/` `\b` `\f` `\n` `\r` `\t` `\uXXXX`; a lone surrogate escape is valid.
//!
//! The parser is iterative: nesting costs one bit of a fixed stack, never a
//! call frame, so hostile input cannot overflow the stack.
//!
//! A validated [`Value`] is its exact text plus its [`Kind`]; members, items
//! and strings are read lazily from that text, without copying or allocating.
//! [`JsonStr`] decodes escapes the way Python does: a `\uD83D\uDE00` pair is
//! one code point, a lone surrogate stays a code point of its own.

use core::fmt;

mod value;
pub(crate) use self::value::{
    cmp_keys_at, key_at, member_value, next_element, string_end, value_at, value_end,
};
pub use self::value::{JsonStr, Members, Value};

/// Why [`decode_into`] failed.
#[cfg(feature = "openai")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The strings do not fit what is left of the buffer.
    Full,
    /// A string holds a lone surrogate, which UTF-8 cannot hold.
    NotUtf8,
}

/// Decodes `parts` one after the other into the front of `*rest`, which
/// then starts after them; the decoded text borrows the buffer, so that
/// strings with escapes need no heap.
#[cfg(feature = "openai")]
pub(crate) fn decode_into<'a, 'p>(
    rest: &mut &'a mut [u8],
    parts: impl Iterator<Item = JsonStr<'p>>,
) -> Result<&'a str, DecodeError> {
    let buf = core::mem::take(rest);
    let mut cursor = Cursor { buf, len: 0 };
    for part in parts {
        part.write_to(&mut cursor).map_err(|e| match e {
            StrError::LoneSurrogate => DecodeError::NotUtf8,
            _ => DecodeError::Full,
        })?;
    }
    let Cursor { buf, len } = cursor;
    let (done, left) = buf.split_at_mut_checked(len).ok_or(DecodeError::Full)?;
    *rest = left;
    core::str::from_utf8(done).map_err(|_| DecodeError::NotUtf8)
}

#[cfg(feature = "openai")]
struct Cursor<'a> {
    buf: &'a mut [u8],
    len: usize,
}

#[cfg(feature = "openai")]
impl fmt::Write for Cursor<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        // Equal lengths; a zip keeps the copy free of a length check.
        dst.iter_mut().zip(s.bytes()).for_each(|(d, b)| *d = b);
        self.len = end;
        Ok(())
    }
}

/// The deepest nesting [`parse`] can track: a larger `max_depth` acts as this.
///
/// Tracking costs one bit per level (128 bytes of stack in all).
pub const DEPTH_CAPACITY: usize = 1024;

/// Python's default `sys.int_info.default_max_str_digits`: the most digits an
/// integer literal may have.
pub const MAX_INT_DIGITS: usize = 4300;

/// What a JSON value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Kind {
    /// `{...}`.
    Object,
    /// `[...]`.
    Array,
    /// `"..."`.
    String,
    /// A number (integer or float); see [`Value::number_text`].
    Number,
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// `NaN` (a Python extension).
    NaN,
    /// `Infinity` (a Python extension).
    Infinity,
    /// `-Infinity` (a Python extension).
    NegInfinity,
}

/// Why a text is not JSON as Python reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// The text starts with a byte-order mark (U+FEFF).
    ByteOrderMark,
    /// A value was expected (also: the text is empty or only whitespace).
    ExpectedValue,
    /// An object member must start with a string key.
    ExpectedKey,
    /// A `:` must follow an object key.
    ExpectedColon,
    /// A `,` or the closing bracket must follow a value in a container.
    ExpectedCommaOrEnd,
    /// A string has no closing quote.
    UnterminatedString,
    /// A string holds a raw control character (below U+0020).
    ControlCharacter,
    /// A backslash escape is not one JSON knows, or `\u` lacks 4 hex digits.
    InvalidEscape,
    /// An integer has more digits than Python's `int` reads (4,300).
    IntegerTooLong,
    /// Containers nest deeper than the reader's limit (1,024 levels for a
    /// configuration).
    TooDeep,
    /// Something other than whitespace follows the value.
    TrailingData,
}

impl JsonErrorKind {
    fn describe(self) -> &'static str {
        match self {
            JsonErrorKind::ByteOrderMark => "unexpected byte-order mark",
            JsonErrorKind::ExpectedValue => "expecting value",
            JsonErrorKind::ExpectedKey => "expecting property name enclosed in double quotes",
            JsonErrorKind::ExpectedColon => "expecting ':' delimiter",
            JsonErrorKind::ExpectedCommaOrEnd => "expecting ',' delimiter or closing bracket",
            JsonErrorKind::UnterminatedString => "unterminated string",
            JsonErrorKind::ControlCharacter => "invalid control character in string",
            JsonErrorKind::InvalidEscape => "invalid escape",
            JsonErrorKind::IntegerTooLong => "integer exceeds 4300 digits",
            JsonErrorKind::TooDeep => "nesting exceeds the depth limit",
            JsonErrorKind::TrailingData => "extra data after the value",
        }
    }
}

impl fmt::Display for JsonErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// A rejected text: what is wrong and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JsonError {
    /// What is wrong.
    pub kind: JsonErrorKind,
    /// Byte offset in the text where it was found.
    pub offset: usize,
}

impl JsonError {
    /// Where the error is in `text`, the text [`parse`] was given, as
    /// Python's `json` says it: the line (from 1, lines ending at `\n`) and
    /// the column (in characters, from 1).
    pub fn line_column(&self, text: &str) -> (usize, usize) {
        let before = text.as_bytes().get(..self.offset).unwrap_or(text.as_bytes());
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |newline| newline + 1);
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        // A character starts at every byte that is not a UTF-8 continuation.
        let column = 1 + before
            .get(line_start..)
            .unwrap_or(&[])
            .iter()
            .filter(|&&b| b & 0xC0 != 0x80)
            .count();
        (line, column)
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.kind, self.offset)
    }
}

impl core::error::Error for JsonError {}

/// Why a [`JsonStr`] could not be written as UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StrError {
    /// The string holds a lone surrogate escape, which UTF-8 cannot encode.
    LoneSurrogate,
    /// The writer failed.
    Fmt,
}

impl fmt::Display for StrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StrError::LoneSurrogate => "string holds a lone surrogate",
            StrError::Fmt => "writer failed",
        })
    }
}

impl core::error::Error for StrError {}

fn error(kind: JsonErrorKind, offset: usize) -> JsonError {
    JsonError { kind, offset }
}

/// Which containers are open, one bit per level (set = object), in words
/// of the target's width (a 64-bit shift is a library call on a 32-bit
/// core).
struct Nesting {
    bits: [usize; DEPTH_CAPACITY / usize::BITS as usize],
    len: usize,
}

impl Nesting {
    const BITS: usize = usize::BITS as usize;

    fn push(&mut self, object: bool) -> bool {
        let Some(word) = self.bits.get_mut(self.len / Self::BITS) else {
            return false;
        };
        let mask = 1 << (self.len % Self::BITS);
        if object {
            *word |= mask;
        } else {
            *word &= !mask;
        }
        self.len += 1;
        true
    }

    fn pop(&mut self) {
        self.len = self.len.saturating_sub(1);
    }

    /// `Some(true)` inside an object, `Some(false)` inside an array.
    fn top(&self) -> Option<bool> {
        let index = self.len.checked_sub(1)?;
        let word = self.bits.get(index / Self::BITS)?;
        Some(word & (1 << (index % Self::BITS)) != 0)
    }
}

#[inline(always)]
fn is_ws(b: u8) -> bool {
    // Most bytes are above the space: one comparison for them.
    b <= b' ' && matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Past the whitespace at `i`: for the reading of validated text.
pub(crate) fn skip_ws(b: &[u8], i: usize) -> usize {
    skip_ws_inline(b, i)
}

/// [`skip_ws`] inlined: the parser's token boundaries, where a call would
/// cost more than the loop (most boundaries have no whitespace or one
/// space).
#[inline(always)]
fn skip_ws_inline(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if !is_ws(c) {
            break;
        }
        i += 1;
    }
    i
}

fn skip_digits(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

fn is_hex4(b: &[u8], i: usize) -> bool {
    i.checked_add(4)
        .and_then(|end| b.get(i..end))
        .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
}

/// Bytes a word holds: the strings are scanned a word at a time.
const WORD: usize = size_of::<usize>();
/// `byte` in every byte of a word.
const fn lanes(byte: u8) -> usize {
    usize::MAX / 0xff * byte as usize
}

/// The bytes of `word` that are zero, as the top bit of their byte: exact
/// up to the first one (a borrow may flag bytes after it).
fn zero_lanes(word: usize) -> usize {
    word.wrapping_sub(lanes(0x01)) & !word & lanes(0x80)
}

/// The word at `i` in `b`, its first byte lowest, if `b` holds it whole;
/// never on a 32-bit target, which reads bytes: there the words' code
/// costs more flash than its instructions save (short strings).
fn word_at(b: &[u8], i: usize) -> Option<usize> {
    if cfg!(target_pointer_width = "32") {
        return None;
    }
    let bytes = b.get(i..i.checked_add(WORD)?)?;
    <[u8; WORD]>::try_from(bytes).ok().map(usize::from_le_bytes)
}

/// The bytes of `word` that end the plain run (a quote, a backslash or a
/// control byte: the byte loop's business), and those that are not
/// printable ASCII (DEL or above, which `json.dumps` escapes), each as
/// the top bit of its byte: exact up to the first of each.
fn stops(word: usize) -> (usize, usize) {
    let control = word.wrapping_sub(lanes(0x20)) & !word & lanes(0x80);
    let special = zero_lanes(word ^ lanes(b'"')) | zero_lanes(word ^ lanes(b'\\')) | control;
    let escaped = (word & lanes(0x80)) | zero_lanes(word ^ lanes(0x7f));
    (special, escaped)
}

/// Where the first byte of `word` that ends the plain run is, as a count
/// of bytes (`WORD` for none), and where the first byte that is not
/// printable ASCII is, likewise ([`stops`]).
fn ordinary_run(word: usize) -> (usize, usize) {
    let (special, escaped) = stops(word);
    ((special.trailing_zeros() / 8) as usize, (escaped.trailing_zeros() / 8) as usize)
}

/// How many bytes `b` starts with that are printable ASCII but `"` and
/// `\`: a run that `json.dumps` writes as it stands. A word at a time.
pub(crate) fn printable_run(b: &[u8]) -> usize {
    let mut i = 0;
    while let Some(word) = word_at(b, i) {
        let (special, escaped) = ordinary_run(word);
        let run = special.min(escaped);
        i += run;
        if run < WORD {
            return i;
        }
    }
    i + b
        .get(i..)
        .unwrap_or(&[])
        .iter()
        .take_while(|&&c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\')
        .count()
}

/// Validates the escape whose backslash is at `i` (of the string opened at
/// `start`); returns its length and whether it is its own `json.dumps`
/// (`ensure_ascii`): `\"` `\\` `\b` `\f` `\n` `\r` `\t` are, `\/` is not
/// (dumped as `/`), and `\u` with four lowercase hex digits is unless the
/// code unit is printable ASCII (dumped as itself) or has a short form. A
/// surrogate pair is dumped as the same two escapes, a lone surrogate as
/// itself.
fn scan_escape(b: &[u8], start: usize, i: usize) -> Result<(usize, bool), JsonError> {
    match b.get(i + 1) {
        None => Err(error(JsonErrorKind::UnterminatedString, start)),
        Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => Ok((2, true)),
        Some(b'/') => Ok((2, false)),
        Some(b'u') if is_hex4(b, i + 2) => {
            let own = match b.get(i + 2..i + 6) {
                // Printable ASCII, dumped as itself.
                Some(
                    [b'0', b'0', b'2'..=b'6', _] | [b'0', b'0', b'7', b'0'..=b'9' | b'a'..=b'e'],
                ) => false,
                // The short forms.
                Some([b'0', b'0', b'0', b'8' | b'9' | b'a' | b'c' | b'd']) => false,
                hex => hex.is_some_and(|hex| !hex.iter().any(u8::is_ascii_uppercase)),
            };
            Ok((6, own))
        }
        Some(_) => Err(error(JsonErrorKind::InvalidEscape, i)),
    }
}

/// Which bytes are printable ASCII but `"` and `\\`: a string's bytes that
/// need no second look.
const PRINTABLE: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0x20;
    while c < 0x7f {
        table[c] = c != b'"' as usize && c != b'\\' as usize;
        c += 1;
    }
    table
};

/// Validates the string whose opening quote is at `start`; returns the offset
/// just past its closing quote, and whether it is plain: its text is its
/// own `json.dumps` (`ensure_ascii`): printable ASCII and escapes that are
/// their own dump ([`scan_escape`]).
fn scan_string(b: &[u8], start: usize) -> Result<(usize, bool), JsonError> {
    let mut i = start + 1;
    let mut plain = true;
    loop {
        // Ordinary bytes a word at a time, up to the first that is not.
        if let Some(word) = word_at(b, i) {
            let (special, escaped) = stops(word);
            if special == 0 {
                plain &= escaped == 0;
                i += WORD;
                continue;
            }
            // The bytes before the first special one: the bits below its
            // top bit.
            plain &= escaped & ((special & special.wrapping_neg()) - 1) == 0;
            i += (special.trailing_zeros() / 8) as usize;
        }
        // Then a byte at a time, each looked up once (a 32-bit target
        // reads only bytes: most strings in arguments are short).
        while b.get(i).is_some_and(|&c| PRINTABLE[usize::from(c)]) {
            i += 1;
        }
        match b.get(i) {
            None => return Err(error(JsonErrorKind::UnterminatedString, start)),
            Some(b'"') => return Ok((i + 1, plain)),
            Some(b'\\') => {
                let (len, own) = scan_escape(b, start, i)?;
                plain &= own;
                i += len;
            }
            Some(&c) if c < 0x20 => return Err(error(JsonErrorKind::ControlCharacter, i)),
            Some(&c) => {
                // DEL is ASCII but not printable: `json.dumps` writes `\u007f`.
                plain &= c < 0x7f;
                i += 1;
            }
        }
    }
}

const LITERALS: [&[u8]; 6] = [b"null", b"true", b"false", b"NaN", b"Infinity", b"-Infinity"];

/// Validates a literal or a number starting at `start`; returns its end.
fn scan_scalar(b: &[u8], start: usize) -> Result<usize, JsonError> {
    let rest = b.get(start..).unwrap_or(&[]);
    // A number starts with a digit or `-` and a digit; only else a literal.
    if !matches!(rest, [b'0'..=b'9', ..] | [b'-', b'0'..=b'9', ..]) {
        if let Some(lit) = LITERALS.iter().find(|lit| rest.starts_with(lit)) {
            return Ok(start + lit.len());
        }
    }
    let mut i = start;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    let digits_start = i;
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = skip_digits(b, i),
        _ => return Err(error(JsonErrorKind::ExpectedValue, start)),
    }
    let int_digits = i - digits_start;
    let mut float = false;
    // As Python: `1.` and `1e` end the number at `1`, the rest is extra.
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = skip_digits(b, i + 1);
        float = true;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            i = skip_digits(b, j);
            float = true;
        }
    }
    if !float && int_digits > MAX_INT_DIGITS {
        return Err(error(JsonErrorKind::IntegerTooLong, start));
    }
    Ok(i)
}

#[derive(Clone, Copy)]
enum Expect {
    Value,
    Key,
    AfterValue,
}

/// Validates a whole document and returns its top-level value.
///
/// Surrounding whitespace is allowed. `max_depth` bounds container nesting:
/// the outermost container is level 1, so `max_depth == 0` accepts only
/// scalars; a container deeper than the bound gives
/// [`JsonErrorKind::TooDeep`]. A bound above [`DEPTH_CAPACITY`] acts as
/// [`DEPTH_CAPACITY`].
pub fn parse(text: &str, max_depth: usize) -> Result<Value<'_>, JsonError> {
    parse_counted(text, max_depth).map(|(value, _)| value)
}

/// What [`parse_counted`] saw besides the value: enough to size the
/// canonicalizer's scratch before walking the value again.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    /// Object members in the whole document, duplicates included.
    pub keys: usize,
    /// The deepest nesting reached (0 for a scalar).
    pub depth: usize,
}

/// [`parse`], also counting members and nesting.
pub(crate) fn parse_counted(
    text: &str,
    max_depth: usize,
) -> Result<(Value<'_>, Counts), JsonError> {
    parse_visited(text, max_depth, &mut ())
}

/// What [`parse_visited`] tells as it validates, in document order: the
/// tokens of the value, so a caller can index them without reading the
/// text again. Nothing it is told is valid before the parse returns `Ok`.
pub(crate) trait Visit {
    /// A container opens at `at` (its `{` or `[`).
    fn open(&mut self, at: usize);
    /// The innermost open container closes.
    fn close(&mut self);
    /// A string (key or value) or a scalar spans `start..end`; a string is
    /// `plain` when its text is its own `json.dumps` (a scalar always).
    fn token(&mut self, start: usize, end: usize, plain: bool);
}

/// Nothing to tell: [`parse`] and [`parse_counted`].
impl Visit for () {
    fn open(&mut self, _: usize) {}
    fn close(&mut self) {}
    fn token(&mut self, _: usize, _: usize, _: bool) {}
}

/// [`parse_counted`], telling `visit` every token. One parser for every
/// visitor (a call through a vtable per token): a device links it once.
pub(crate) fn parse_visited<'t>(
    text: &'t str,
    max_depth: usize,
    visit: &mut dyn Visit,
) -> Result<(Value<'t>, Counts), JsonError> {
    let b = text.as_bytes();
    let mut counts = Counts::default();
    if text.starts_with('\u{feff}') {
        return Err(error(JsonErrorKind::ByteOrderMark, 0));
    }
    let limit = max_depth.min(DEPTH_CAPACITY);
    let mut nesting = Nesting { bits: [0; DEPTH_CAPACITY / usize::BITS as usize], len: 0 };
    let start = skip_ws(b, 0);
    let mut i = start;
    let mut expect = Expect::Value;
    loop {
        // A value or a key may follow whitespace; after a value, the
        // whitespace is skipped below, so that a top-level value ends at
        // its last byte.
        if !matches!(expect, Expect::AfterValue) {
            i = skip_ws_inline(b, i);
        }
        match expect {
            Expect::Value => match b.get(i) {
                Some(&open @ (b'{' | b'[')) => {
                    let object = open == b'{';
                    if nesting.len >= limit || !nesting.push(object) {
                        return Err(error(JsonErrorKind::TooDeep, i));
                    }
                    counts.depth = counts.depth.max(nesting.len);
                    visit.open(i);
                    i = skip_ws(b, i + 1);
                    let close = if object { b'}' } else { b']' };
                    if b.get(i) == Some(&close) {
                        i += 1;
                        nesting.pop();
                        visit.close();
                        expect = Expect::AfterValue;
                    } else if object {
                        expect = Expect::Key;
                    }
                }
                Some(&c) => {
                    let start = i;
                    let plain;
                    (i, plain) =
                        if c == b'"' { scan_string(b, i)? } else { (scan_scalar(b, i)?, true) };
                    visit.token(start, i, plain);
                    expect = Expect::AfterValue;
                }
                None => return Err(error(JsonErrorKind::ExpectedValue, i)),
            },
            Expect::Key => {
                if b.get(i) != Some(&b'"') {
                    return Err(error(JsonErrorKind::ExpectedKey, i));
                }
                counts.keys += 1;
                let (end, plain) = scan_string(b, i)?;
                visit.token(i, end, plain);
                i = skip_ws_inline(b, end);
                if b.get(i) != Some(&b':') {
                    return Err(error(JsonErrorKind::ExpectedColon, i));
                }
                i += 1;
                expect = Expect::Value;
            }
            Expect::AfterValue => {
                let Some(object) = nesting.top() else { break };
                i = skip_ws_inline(b, i);
                match b.get(i) {
                    Some(b',') => {
                        i += 1;
                        expect = if object { Expect::Key } else { Expect::Value };
                    }
                    Some(&c) if c == if object { b'}' } else { b']' } => {
                        i += 1;
                        nesting.pop();
                        visit.close();
                    }
                    _ => return Err(error(JsonErrorKind::ExpectedCommaOrEnd, i)),
                }
            }
        }
    }
    let end = skip_ws(b, i);
    if end != b.len() {
        return Err(error(JsonErrorKind::TrailingData, end));
    }
    let raw = text.get(start..i).unwrap_or("");
    Ok((Value::of(raw), counts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cmp::Ordering;
    extern crate std;
    use std::string::String;
    use std::vec::Vec;

    fn ok(s: &str) -> bool {
        parse(s, 64).is_ok()
    }

    /// `scan_string` a byte at a time, as it was before it read words: the
    /// reference its word-at-a-time reading must agree with.
    fn scan_string_bytewise(b: &[u8], start: usize) -> Result<(usize, bool), JsonError> {
        let mut i = start + 1;
        let mut plain = true;
        loop {
            match b.get(i) {
                None => return Err(error(JsonErrorKind::UnterminatedString, start)),
                Some(b'"') => return Ok((i + 1, plain)),
                Some(b'\\') => {
                    let (len, own) = scan_escape(b, start, i)?;
                    plain &= own;
                    i += len;
                }
                Some(&c) if c < 0x20 => return Err(error(JsonErrorKind::ControlCharacter, i)),
                Some(&c) => {
                    plain &= c < 0x7f;
                    i += 1;
                }
            }
        }
    }

    /// `printable_run` a byte at a time.
    fn printable_run_bytewise(b: &[u8]) -> usize {
        b.iter().take_while(|&&c| (0x20..=0x7e).contains(&c) && c != b'"' && c != b'\\').count()
    }

    proptest::proptest! {
        /// Strings of the bytes that end a word's run or make it not
        /// plain, at every place in a word, before and after the end of
        /// the text: the same end, plainness and error as byte by byte.
        #[test]
        fn strings_scan_by_words_as_by_bytes(
            body in proptest::collection::vec(proptest::prop_oneof![
                proptest::sample::select(std::vec![b'a', b'"', b'\\', b'u', b'0', b'e', b'n', 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xc3, 0xa9, 0xff, 0x00]),
                proptest::num::u8::ANY,
            ], 0..40),
            lead in 0usize..9,
        ) {
            let mut text = std::vec![b' '; lead];
            text.push(b'"');
            text.extend_from_slice(&body);
            proptest::prop_assert_eq!(scan_string(&text, lead), scan_string_bytewise(&text, lead));
            proptest::prop_assert_eq!(printable_run(&body), printable_run_bytewise(&body));
        }
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_word_is_read_where_the_text_holds_it_whole() {
        let text = b"\"abcdefgh";
        assert_eq!(word_at(text, 1), Some(usize::from_le_bytes(*b"abcdefgh")));
        assert_eq!(word_at(text, 2), None);
        assert_eq!(word_at(text, usize::MAX), None);
        // The run ends at the first quote, backslash or control byte; DEL
        // and bytes above it before that make it not plain.
        assert_eq!(ordinary_run(usize::from_le_bytes(*b"ab\"d\\fgh")), (2, 8));
        assert_eq!(ordinary_run(usize::from_le_bytes(*b"a\x7fc\x01efgh")), (3, 1));
        assert_eq!(ordinary_run(usize::from_le_bytes(*b"abcdefg\xc3")), (8, 7));
        assert_eq!(printable_run(b"abcdefghij\x7fk"), 10);
    }

    /// The byte loop's table: exactly the bytes a string holds that need
    /// no second look. (An empty table would give the same results, a
    /// byte at a time through the match: checked here, not by them.)
    #[test]
    fn the_printable_table_holds_printable_ascii_but_quote_and_backslash() {
        for c in 0..=255u8 {
            assert_eq!(
                PRINTABLE[usize::from(c)],
                (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\',
                "{c:#04x}"
            );
        }
    }

    #[test]
    fn words_of_plain_and_not_plain_bytes() {
        // Every byte value at every place of a word, in a string long
        // enough to be read by words, closed or not.
        for c in 0..=255u8 {
            for at in 0..2 * WORD {
                for closed in [false, true] {
                    let mut text = std::vec![b'"'];
                    text.extend(core::iter::repeat_n(b'x', at));
                    text.push(c);
                    text.extend(core::iter::repeat_n(b'y', 2 * WORD));
                    if closed {
                        text.push(b'"');
                    }
                    assert_eq!(
                        scan_string(&text, 0),
                        scan_string_bytewise(&text, 0),
                        "{c:#x} at {at}"
                    );
                    assert_eq!(
                        printable_run(&text[1..]),
                        printable_run_bytewise(&text[1..]),
                        "{c:#x} at {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn keys_compare_by_their_own_text() {
        // Equal keys whose closing quotes fall in the first eight bytes:
        // what follows them does not count.
        let text = r#"{"ab":11111111,"ab":11111112}"#;
        let second = text.rfind(r#""ab""#).unwrap();
        assert_eq!(cmp_keys_at(text, 1, second), Ordering::Equal);
        // An escape across the eighth byte compares decoded: `\u00e9` is `\u00E9`.
        let text = r#"{"1234567\u00e9":1,"1234567\u00E9":2}"#;
        let second = text.find(r#","1234567"#).unwrap() + 1;
        assert_eq!(cmp_keys_at(text, 1, second), Ordering::Equal);
        assert_eq!(cmp_keys_at(text, second, 1), Ordering::Equal);
        // A key that ends first sorts first, even against a space or `!`,
        // which come before the quote's byte.
        for (text, want) in
            [(r#"{"a":1,"a b":2}"#, Ordering::Less), (r#"{"a!":1,"a":2}"#, Ordering::Greater)]
        {
            let second = text.find(",\"").unwrap() + 1;
            assert_eq!(cmp_keys_at(text, 1, second), want, "{text}");
        }
    }

    #[test]
    fn every_value_has_its_kind() {
        for (text, kind) in [
            ("{}", Kind::Object),
            ("[1]", Kind::Array),
            ("\"a\"", Kind::String),
            ("true", Kind::Bool(true)),
            ("false", Kind::Bool(false)),
            ("null", Kind::Null),
            ("NaN", Kind::NaN),
            ("Infinity", Kind::Infinity),
            ("-Infinity", Kind::NegInfinity),
            ("-1.5e3", Kind::Number),
        ] {
            assert_eq!(parse(text, 64).map(|v| v.kind()), Ok(kind), "{text}");
        }
    }

    #[test]
    fn errors_say_what_and_where() {
        use std::string::ToString;
        let err = parse("{\"a\" 1}", 64).unwrap_err();
        assert_eq!(err, JsonError { kind: JsonErrorKind::ExpectedColon, offset: 5 });
        assert_eq!(err.to_string(), "expecting ':' delimiter at byte 5");
        assert_eq!(JsonErrorKind::TooDeep.to_string(), "nesting exceeds the depth limit");
        assert_eq!(StrError::LoneSurrogate.to_string(), "string holds a lone surrogate");
        assert_eq!(StrError::Fmt.to_string(), "writer failed");
    }

    #[test]
    fn accepts_what_python_accepts() {
        for s in [
            "0",
            "-0",
            "1",
            "-1",
            "10",
            "1.5",
            "-0.0",
            "1e5",
            "1E+5",
            "1e-05",
            "0.5e0",
            " 1 ",
            "\t\n\r 1",
            "true",
            "false",
            "null",
            "NaN",
            "Infinity",
            "-Infinity",
            "\"\"",
            "\"\\u00e9\\uD83D\\ude00\\ud800\"",
            "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
            "\"\u{7f}\u{e9}\u{1f600}\"",
            "[]",
            "{}",
            "[ ]",
            "{ }",
            "[1, [2, {}]]",
            "{\"a\" : 1 , \"a\":2}",
            "{\"\":[]}",
        ] {
            assert!(ok(s), "{s:?}");
        }
    }

    #[test]
    fn rejects_what_python_rejects() {
        for s in [
            "",
            " ",
            "\u{feff}1",
            "01",
            "-",
            "-01",
            "1.",
            ".5",
            "1e",
            "1e+",
            "+1",
            "--1",
            "-NaN",
            "nan",
            "inf",
            "-infinity",
            "tru",
            "nul",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{,}",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{1:1}",
            "{'a':1}",
            "\"\t\"",
            "\"\n\"",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\u12g4\"",
            "\"abc",
            "[",
            "]",
            "{",
            "1 2",
            "[]]",
            "\u{a0}1",
            "\x0b1",
            "1\x0c",
            "١",
            "[1}",
            "{\"a\":1]",
            "\"\\",
            "\"\\u",
        ] {
            assert!(!ok(s), "{s:?}");
        }
    }

    #[test]
    fn integer_digit_limit() {
        let mut s = String::from("-");
        s.extend(core::iter::repeat_n('7', 4300));
        assert!(ok(&s));
        assert!(ok(&s[1..]));
        s.push('7');
        assert_eq!(parse(&s, 1).unwrap_err().kind, JsonErrorKind::IntegerTooLong);
        s.push_str(".0");
        assert!(ok(&s), "floats have no digit limit");
    }

    #[test]
    fn depth_limit() {
        assert!(parse("1", 0).is_ok());
        assert_eq!(parse("[]", 0).unwrap_err().kind, JsonErrorKind::TooDeep);
        assert!(parse("[[{}]]", 3).is_ok());
        assert_eq!(parse("[[{}]]", 2).unwrap_err().kind, JsonErrorKind::TooDeep);
        let deep: String = core::iter::repeat_n('[', 100_000).collect();
        assert_eq!(parse(&deep, usize::MAX).unwrap_err().kind, JsonErrorKind::TooDeep);
        let mut nested: String = core::iter::repeat_n('[', DEPTH_CAPACITY).collect();
        nested.extend(core::iter::repeat_n(']', DEPTH_CAPACITY));
        assert!(parse(&nested, usize::MAX).is_ok());
    }

    #[test]
    fn navigation() {
        let v = parse(
            " {\"b\": [1, \"x\", {\"c\": null}], \"a\\u0062\" : -Infinity, \"n\": -1.5e3} ",
            8,
        )
        .unwrap();
        assert_eq!(v.kind(), Kind::Object);
        let m: Vec<_> = v.members().collect();
        assert_eq!(m.len(), 3);
        assert!(m[0].0.eq_str("b"));
        assert!(m[1].0.eq_str("ab"));
        assert_eq!(m[1].1.kind(), Kind::NegInfinity);
        assert_eq!(m[2].1.number_text(), Some("-1.5e3"));
        let items: Vec<_> = m[0].1.items().collect();
        assert_eq!(items.len(), 3);
        assert_eq!(items[0].raw(), "1");
        assert_eq!(items[1].as_str().unwrap().raw(), "x");
        assert_eq!(items[2].members().next().unwrap().1.kind(), Kind::Null);
        assert_eq!(v.items().count(), 0);
        assert_eq!(items[0].members().count(), 0);
        assert!(items[0].as_str().is_none());
    }

    #[test]
    fn strings_decode_like_python() {
        let v = parse("\"a\\ud83d\\ude00\\ud800\\u0041\\ude00\\ud83d\\\"\"", 1).unwrap();
        let s = v.as_str().unwrap();
        let cps: Vec<u32> = s.code_points().collect();
        assert_eq!(cps, [0x61, 0x1f600, 0xd800, 0x41, 0xde00, 0xd83d, 0x22]);
        let mut out = String::new();
        assert_eq!(s.write_to(&mut out), Err(StrError::LoneSurrogate));
        assert!(out.is_empty());
        let v = parse("\"\\u00e9\\n\\ud83d\\ude00\u{1f600}\"", 1).unwrap();
        v.as_str().unwrap().write_to(&mut out).unwrap();
        assert_eq!(out, "é\n😀😀");
        assert!(v.as_str().unwrap().eq_str("é\n😀😀"));
    }

    #[test]
    fn keys_compare_in_place_as_decoded() {
        let keys = [
            "",
            "a",
            "ab",
            "b",
            "\\u0061",
            "a\\u0062",
            "\\ud800",
            "\\ue000",
            "\\ud83d\\ude00",
            "😀",
            "é",
            "\\u00e9z",
            "\\\"",
            "\\\\",
            "~",
            "\u{7f}",
            "abcdefgh",
            "abcdefghij",
            "abcdefghik",
            "abcdefgh\\u0069j",
            "abcdefghijklmnop",
            "abcdefghijklmnop\\\"",
            "abcdefghijklmno\\u0070",
            "abcdéfghijklmnop",
        ];
        let text: String = keys.iter().map(|k| std::format!("\"{k}\"")).collect();
        let mut at = Vec::new();
        let mut pos = 0;
        for k in keys {
            at.push(pos);
            pos += k.len() + 2;
        }
        for (i, &a) in at.iter().enumerate() {
            for (j, &b) in at.iter().enumerate() {
                let want = key_at(&text, a).unwrap().cmp_python(&key_at(&text, b).unwrap());
                assert_eq!(cmp_keys_at(&text, a, b), want, "{:?} vs {:?}", keys[i], keys[j]);
            }
        }
    }

    #[test]
    fn python_string_order() {
        let key = |s: &'static str| JsonStr { raw: s };
        // A lone surrogate sorts between U+D7FF and U+E000; a pair sorts as
        // its non-BMP code point, after U+FFFF.
        assert_eq!(key("\\ud800").cmp_python(&key("\\ue000")), Ordering::Less);
        assert_eq!(key("\\ud7ff").cmp_python(&key("\\ud800")), Ordering::Less);
        assert_eq!(key("\\uffff").cmp_python(&key("\\ud83d\\ude00")), Ordering::Less);
        assert_eq!(key("\\ud83d\\ude00").cmp_python(&key("😀")), Ordering::Equal);
        assert_eq!(key("a").cmp_python(&key("ab")), Ordering::Less);
        assert_eq!(key("\\u0061").cmp_python(&key("a")), Ordering::Equal);
    }
}
