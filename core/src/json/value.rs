//! Validated values read lazily from their text: a value's kind, its
//! members and items, a string's escapes decoded as Python does, and the
//! positions the argument canonicalizer walks.

use core::cmp::Ordering;
use core::fmt;

use super::{skip_ws, Kind, StrError};
fn kind_of(raw: &[u8]) -> Kind {
    match raw.first() {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        Some(b'"') => Kind::String,
        Some(b't') => Kind::Bool(true),
        Some(b'f') => Kind::Bool(false),
        Some(b'n') => Kind::Null,
        Some(b'N') => Kind::NaN,
        Some(b'I') => Kind::Infinity,
        Some(b'-') if raw.get(1) == Some(&b'I') => Kind::NegInfinity,
        _ => Kind::Number,
    }
}

// The navigation below reads text that `parse` validated, so it only needs to
// find where things end. It still checks every step and stops (returns
// `None`) rather than panic if the text were ever not what it expects.

/// Offset just past the string whose opening quote is at `start`.
pub(crate) fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start.checked_add(1)?;
    loop {
        match b.get(i)? {
            b'"' => return i.checked_add(1),
            b'\\' => i = i.checked_add(2)?,
            _ => i = i.checked_add(1)?,
        }
    }
}

/// Offset just past the (validated) value starting at `start`.
pub(crate) fn value_end(b: &[u8], start: usize) -> Option<usize> {
    match b.get(start)? {
        b'"' => string_end(b, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            loop {
                match b.get(i)? {
                    b'{' | b'[' => {
                        depth = depth.checked_add(1)?;
                        i = i.checked_add(1)?;
                    }
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        i = i.checked_add(1)?;
                        if depth == 0 {
                            return Some(i);
                        }
                    }
                    b'"' => i = string_end(b, i)?,
                    _ => i = i.checked_add(1)?,
                }
            }
        }
        _ => {
            let mut i = start;
            while b
                .get(i)
                .is_some_and(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
            {
                i = i.checked_add(1)?;
            }
            (i > start).then_some(i)
        }
    }
}

pub(crate) fn value_at(text: &str, start: usize) -> Option<(Value<'_>, usize)> {
    let end = value_end(text.as_bytes(), start)?;
    let raw = text.get(start..end)?;
    Some((Value::of(raw), end))
}

/// The key of the member of object text `obj` whose opening quote is at `key`.
pub(crate) fn key_at(obj: &str, key: usize) -> Option<JsonStr<'_>> {
    let end = string_end(obj.as_bytes(), key)?;
    Some(JsonStr { raw: obj.get(key.checked_add(1)?..end.checked_sub(1)?)? })
}

/// The member of object text `obj` whose key's opening quote is at `key`:
/// the key, the value, and the offset just past the value.
pub(crate) fn member_at(obj: &str, key: usize) -> Option<(JsonStr<'_>, Value<'_>, usize)> {
    let name = key_at(obj, key)?;
    let (value, end) = value_at(obj, member_value(obj, key, name)?)?;
    Some((name, value, end))
}

/// Where the value of the member whose key `name` starts at `key` begins.
pub(crate) fn member_value(obj: &str, key: usize, name: JsonStr<'_>) -> Option<usize> {
    let b = obj.as_bytes();
    let colon = skip_ws(b, key.checked_add(name.raw.len())?.checked_add(2)?);
    if b.get(colon) != Some(&b':') {
        return None;
    }
    Some(skip_ws(b, colon.checked_add(1)?))
}

/// Reading a container's text at `pos` (just past its opening bracket or
/// past an element): where the next element starts, if there is one. An
/// object's element starts at its key's opening quote.
pub(crate) fn next_element(text: &str, pos: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, pos);
    if b.get(i) == Some(&b',') {
        i = skip_ws(b, i.checked_add(1)?);
    }
    match b.get(i)? {
        b']' | b'}' => None,
        _ => Some(i),
    }
}

/// Compares the keys whose opening quotes are at `a` and `b` in `text` as
/// Python compares `str`, reading them in place: UTF-8 bytes order as code
/// points do, so only a difference at or after an escape needs decoding.
pub(crate) fn cmp_keys_at(text: &str, a: usize, b: usize) -> Ordering {
    let bytes = text.as_bytes();
    let mut i = 1usize;
    while let (Some(&x), Some(&y)) =
        (bytes.get(a.saturating_add(i)), bytes.get(b.saturating_add(i)))
    {
        if x == b'\\' || y == b'\\' {
            break;
        }
        if x != y {
            // The closing quote ends the shorter key, which sorts first.
            return match (x, y) {
                (b'"', _) => Ordering::Less,
                (_, b'"') => Ordering::Greater,
                _ => x.cmp(&y),
            };
        }
        if x == b'"' {
            return Ordering::Equal;
        }
        i += 1;
    }
    match (key_at(text, a), key_at(text, b)) {
        (Some(x), Some(y)) => x.cmp_python(&y),
        _ => Ordering::Equal,
    }
}

/// A validated JSON value: its exact text and its kind.
///
/// Only [`parse`] and the iterators over a parsed value make one, so its text
/// is always valid JSON.
#[derive(Debug, Clone, Copy)]
pub struct Value<'a> {
    raw: &'a str,
    kind: Kind,
}

impl<'a> Value<'a> {
    /// The value whose validated text is `raw`.
    pub(super) fn of(raw: &'a str) -> Value<'a> {
        Value { raw, kind: kind_of(raw.as_bytes()) }
    }

    /// What the value is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The value's exact text, without surrounding whitespace.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// The members of an object in document order (duplicates included);
    /// empty for anything else.
    pub fn members(&self) -> Members<'a> {
        Members { obj: if self.kind == Kind::Object { self.raw } else { "" }, pos: 1 }
    }

    /// The items of an array in order; empty for anything else.
    pub fn items(&self) -> Items<'a> {
        Items { arr: if self.kind == Kind::Array { self.raw } else { "" }, pos: 1 }
    }

    /// The string's escaped content, if the value is a string.
    pub fn as_str(&self) -> Option<JsonStr<'a>> {
        if self.kind != Kind::String {
            return None;
        }
        let end = self.raw.len().checked_sub(1)?;
        Some(JsonStr { raw: self.raw.get(1..end)? })
    }

    /// The number's text (e.g. `-12`, `1.5e3`), if the value is a number.
    pub fn number_text(&self) -> Option<&'a str> {
        (self.kind == Kind::Number).then_some(self.raw)
    }
}

/// The members of an object: `(key, value)` in document order.
#[derive(Debug, Clone)]
pub struct Members<'a> {
    obj: &'a str,
    pos: usize,
}

impl<'a> Members<'a> {
    /// Like `next`, also giving the offset of the key's opening quote within
    /// the object's text (for [`member_at`]).
    pub(crate) fn next_at(&mut self) -> Option<(usize, JsonStr<'a>, Value<'a>)> {
        let found =
            next_element(self.obj, self.pos).and_then(|i| Some((i, member_at(self.obj, i)?)));
        match found {
            Some((i, (key, value, end))) => {
                self.pos = end;
                Some((i, key, value))
            }
            None => {
                self.pos = self.obj.len();
                None
            }
        }
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = (JsonStr<'a>, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_at().map(|(_, key, value)| (key, value))
    }
}

impl core::iter::FusedIterator for Members<'_> {}

/// The items of an array, in order.
#[derive(Debug, Clone)]
pub struct Items<'a> {
    arr: &'a str,
    pos: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = Value<'a>;

    fn next(&mut self) -> Option<Value<'a>> {
        let found = next_element(self.arr, self.pos).and_then(|i| value_at(self.arr, i));
        match found {
            Some((value, end)) => {
                self.pos = end;
                Some(value)
            }
            None => {
                self.pos = self.arr.len();
                None
            }
        }
    }
}

impl core::iter::FusedIterator for Items<'_> {}

/// A JSON string's escaped content, between (not including) the quotes.
#[derive(Debug, Clone, Copy)]
pub struct JsonStr<'a> {
    pub(super) raw: &'a str,
}

impl<'a> JsonStr<'a> {
    /// Escaped content taken from validated text (or a tail of it that
    /// starts at a character).
    /// The empty string.
    #[cfg(feature = "openai")]
    pub(crate) const EMPTY: JsonStr<'static> = JsonStr { raw: "" };

    pub(crate) fn from_validated(raw: &'a str) -> Self {
        JsonStr { raw }
    }

    /// The escaped content exactly as in the document.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// The decoded code points, as Python's string would hold them: an
    /// escaped surrogate pair is one code point, a lone surrogate escape is
    /// its own value (U+D800..U+DFFF).
    pub fn code_points(&self) -> CodePoints<'a> {
        CodePoints { chars: self.raw.chars() }
    }

    /// Writes the decoded string as UTF-8.
    ///
    /// Fails, writing nothing, if the string holds a lone surrogate.
    pub fn write_to<W: fmt::Write>(&self, w: &mut W) -> Result<(), StrError> {
        if !self.raw.contains('\\') {
            return w.write_str(self.raw).map_err(|_| StrError::Fmt);
        }
        if self.code_points().any(|c| char::from_u32(c).is_none()) {
            return Err(StrError::LoneSurrogate);
        }
        for c in self.code_points().filter_map(char::from_u32) {
            w.write_char(c).map_err(|_| StrError::Fmt)?;
        }
        Ok(())
    }

    /// Whether the decoded string equals `s`.
    pub fn eq_str(&self, s: &str) -> bool {
        self.code_points().eq(s.chars().map(u32::from))
    }

    /// Compares as Python compares `str`: by code points, a lone surrogate
    /// being the code point of its value.
    pub fn cmp_python(&self, other: &JsonStr<'_>) -> Ordering {
        self.code_points().cmp(other.code_points())
    }
}

/// The decoded code points of a [`JsonStr`].
#[derive(Debug, Clone)]
pub struct CodePoints<'a> {
    chars: core::str::Chars<'a>,
}

fn hex4(chars: &mut core::str::Chars<'_>) -> Option<u32> {
    let mut v = 0u32;
    for _ in 0..4 {
        v = (v << 4) | chars.next()?.to_digit(16)?;
    }
    Some(v)
}

impl<'a> CodePoints<'a> {
    /// The escaped text not read yet.
    pub(crate) fn rest(&self) -> &'a str {
        self.chars.as_str()
    }
}

impl Iterator for CodePoints<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let c = self.chars.next()?;
        if c != '\\' {
            return Some(u32::from(c));
        }
        let decoded = match self.chars.next()? {
            'b' => 0x08,
            'f' => 0x0c,
            'n' => 0x0a,
            'r' => 0x0d,
            't' => 0x09,
            'u' => {
                let high = hex4(&mut self.chars)?;
                if (0xd800..0xdc00).contains(&high) {
                    // As Python's scanner: a high surrogate escape directly
                    // followed by a low surrogate escape makes one code point.
                    let mut ahead = self.chars.clone();
                    if ahead.next() == Some('\\') && ahead.next() == Some('u') {
                        if let Some(low) = hex4(&mut ahead).filter(|l| (0xdc00..0xe000).contains(l))
                        {
                            self.chars = ahead;
                            return Some(0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00));
                        }
                    }
                }
                high
            }
            // `\"`, `\\`, `\/` stand for themselves.
            other => u32::from(other),
        };
        Some(decoded)
    }
}

impl core::iter::FusedIterator for CodePoints<'_> {}
