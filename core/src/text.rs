//! Python string semantics the rules depend on: `str.strip()`, substring
//! search and the two tag regexes over a hint given in parts, and a
//! streaming `str.replace` that never materializes the replaced string.

/// Python's `str.isspace()` for one char: Unicode White_Space plus the
/// information separators U+001C..U+001F, which Rust's `is_whitespace` omits.
/// Listed, not `char::is_whitespace`: its 256-byte table costs flash on a
/// device, and the set has not changed since Unicode 6.3.
pub fn py_is_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | '\u{1c}'..=' ' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}

/// Python's `str.strip()` with no argument.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_is_space)
}

/// A number's text split at its first `e` or `E`: the mantissa, and the
/// exponent as `(negative, digits)` when there is one; `None` when the
/// exponent is not an optional sign and one or more ASCII digits. Bytes,
/// not `find(['e', 'E'])`: core's searchers cost a device flash.
pub(crate) fn split_exponent(text: &str) -> Option<(&str, Option<(bool, &str)>)> {
    let Some(at) = text.bytes().position(|b| b == b'e' || b == b'E') else {
        return Some((text, None));
    };
    let (mantissa, exponent) = (text.get(..at)?, text.get(at + 1..)?);
    let digits = match exponent.as_bytes().first() {
        Some(b'+' | b'-') => exponent.get(1..)?,
        _ => exponent,
    };
    let valid = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    valid.then_some((mantissa, Some((exponent.starts_with('-'), digits))))
}

/// `text.split_once('.')`, or the whole text and `""`: by byte.
pub(crate) fn split_point(text: &str) -> (&str, &str) {
    match text.bytes().position(|b| b == b'.') {
        Some(at) => (text.get(..at).unwrap_or(text), text.get(at + 1..).unwrap_or("")),
        None => (text, ""),
    }
}

/// The first position of `needle` in `hay`: a word-at-a-time search for
/// its first byte, then one compare per candidate (the tags the rules look
/// for start with `<`, which a hint holds only a few of).
pub(crate) fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let Some((&first, rest)) = needle.split_first() else { return Some(0) };
    let mut from = 0;
    while let Some(i) = find_byte(first, hay.get(from..)?) {
        let at = from + i;
        if hay.get(at + 1..)?.starts_with(rest) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The first position of `byte` in `hay` ([`each_byte`]'s first).
#[inline]
pub(crate) fn find_byte(byte: u8, hay: &[u8]) -> Option<usize> {
    let mut first = None;
    each_byte(byte, hay, |at| {
        first = Some(at);
        true
    });
    first
}

/// Calls `f` with each position of `byte` in `hay`, in order, until it
/// returns `true`; whether it did. Eight bytes at a time, each word's
/// matches read from one mask (a portable `memchr`: the core has no
/// dependency that provides one, and no `unsafe`), so that a text with
/// several matches is read once, not once from each match.
#[cfg_attr(target_pointer_width = "64", inline(always))]
#[cfg_attr(not(target_pointer_width = "64"), inline)]
pub(crate) fn each_byte(byte: u8, hay: &[u8], mut f: impl FnMut(usize) -> bool) -> bool {
    let mut base = 0;
    if cfg!(target_pointer_width = "64") {
        // A 64-bit host has vector compares: each 32 bytes are tested with
        // two of them, and only the halves that hold the byte are read a
        // word at a time (a full scan reads every hint of ours this way).
        // A 32-bit device has none: it goes word by word below.
        let mut chunks = hay.chunks_exact(32);
        for chunk in &mut chunks {
            if holds(chunk, byte) {
                // Then each half that holds it, with one vector compare.
                for (half, at) in chunk.chunks_exact(16).zip([base, base + 16]) {
                    if holds(half, byte) && each_in_words(byte, half, at, &mut f).0 {
                        return true;
                    }
                }
            }
            base += 32;
        }
    }
    let (stopped, rest) = each_in_words(byte, hay.get(base..).unwrap_or(&[]), base, &mut f);
    // The last bytes, fewer than a word, one at a time.
    let tail = hay.len() - rest.len();
    stopped || rest.iter().enumerate().any(|(i, &b)| b == byte && f(tail + i))
}

/// [`each_byte`] over the whole words of `bytes`, which start at `base`
/// in the text: whether `f` stopped, and the bytes after the last word.
#[inline(always)]
fn each_in_words<'h>(
    byte: u8,
    bytes: &'h [u8],
    base: usize,
    f: &mut impl FnMut(usize) -> bool,
) -> (bool, &'h [u8]) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let pattern = ONES * u64::from(byte);
    let mut words = bytes.chunks_exact(8);
    let mut at = base;
    for word in &mut words {
        if let Ok(word) = <[u8; 8]>::try_from(word) {
            let mut hits = zero_bytes(u64::from_le_bytes(word) ^ pattern);
            while hits != 0 {
                if f(at + (hits.trailing_zeros() / 8) as usize) {
                    return (true, &[]);
                }
                hits &= hits - 1;
            }
        }
        at += 8;
    }
    (false, words.remainder())
}

/// The high bit of each zero byte of `x`, and no other bit: adding 0x7f to
/// a byte's low seven bits sets its high bit unless they are all zero, and
/// no sum carries into the next byte.
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !((x & LOWS).wrapping_add(LOWS) | x | LOWS)
}

/// Whether `chunk` holds `byte`: every byte compared, with no early exit,
/// so that the compiler makes a few vector compares of it.
#[inline(always)]
fn holds(chunk: &[u8], byte: u8) -> bool {
    chunk.iter().fold(false, |hit, &b| hit | (b == byte))
}

/// `n` in decimal, written at the end of `buf` (`u64::MAX` has 20 digits):
/// numbers without `core::fmt`, whose machinery costs flash and time on a
/// device.
pub(crate) fn u64_str(mut n: u64, buf: &mut [u8; 20]) -> &str {
    // The loop ends with n == 0 before the start. Once the rest fits 32
    // bits, the divisions are 32-bit ones: a 64-bit division is a library
    // call on a 32-bit core.
    let mut i = buf.len();
    for slot in buf.iter_mut().rev() {
        let digit = match u32::try_from(n) {
            Ok(small) => {
                n = u64::from(small / 10);
                small % 10
            }
            Err(_) => {
                let digit = (n % 10) as u32;
                n /= 10;
                digit
            }
        };
        *slot = b'0' + digit as u8;
        i -= 1;
        if n == 0 {
            break;
        }
    }
    buf.get(i..).and_then(|d| core::str::from_utf8(d).ok()).unwrap_or("0")
}

/// `n` in decimal, padded on the left with `pad` to `width` characters
/// (at most 10): `format!("{n:0width$}")` or `format!("{n:width$}")`,
/// without `core::fmt`'s machinery (its flash, and its time on a device).
pub(crate) fn push_padded<B: Bytes + ?Sized>(w: &mut B, mut n: u32, width: usize, pad: u8) {
    // u32::MAX has 10 digits: the loop ends with n == 0 before the start.
    let mut buf = [pad; 10];
    let mut start = buf.len();
    for slot in buf.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        start -= 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    w.push(buf.get(start.min(buf.len().saturating_sub(width))..).unwrap_or(&[]));
}

/// Where two needles `a` and `b` that start with `<` can start in a text
/// that starts with `prefix` and ends with `suffix` (known text, such as a
/// template's own around what was rendered into it): from `start` on, and
/// not in the last `back` bytes. Such a text's known bytes are compared
/// (`starts_with`, `ends_with`) rather than searched: most of a hint of
/// ours is its template's text.
#[derive(Debug, Clone, Copy)]
pub struct TagSpan<'t> {
    prefix: &'t [u8],
    suffix: &'t [u8],
    start: usize,
    back: usize,
}

impl<'t> TagSpan<'t> {
    /// The whole of any text.
    pub const WHOLE: TagSpan<'static> = TagSpan { prefix: &[], suffix: &[], start: 0, back: 0 };

    /// The span of `a` and `b` in texts around `prefix` and `suffix`.
    pub fn new(prefix: &'t str, suffix: &'t str, a: &str, b: &str) -> Self {
        let (prefix, suffix) = (prefix.as_bytes(), suffix.as_bytes());
        let needles = [a.as_bytes(), b.as_bytes()];
        if needles.iter().any(|n| n.first() != Some(&b'<')) {
            // Found by their `<` below: others are searched everywhere.
            return TagSpan::WHOLE;
        }
        // A needle can start at a `<` of the prefix whose rest starts with
        // it, or is the start of it (the text goes on past the prefix).
        let mut start = prefix.len();
        each_byte(b'<', prefix, |i| {
            let rest = prefix.get(i..).unwrap_or(&[]);
            // `rest` starts with `n`, or `n` with `rest`.
            let can = needles.iter().any(|n| {
                let common = n.len().min(rest.len());
                rest.get(..common) == n.get(..common)
            });
            if can {
                start = i;
            }
            can
        });
        // One that starts in the suffix ends in it: the text ends there.
        let mut end = 0;
        each_byte(b'<', suffix, |j| {
            let rest = suffix.get(j..).unwrap_or(&[]);
            if needles.iter().any(|n| rest.starts_with(n)) {
                end = j + 1;
            }
            false
        });
        TagSpan { prefix, suffix, start, back: suffix.len().saturating_sub(end) }
    }

    /// The bytes of `text` where a needle can start: from the first, up
    /// to (not including) the second; empty when the first is greater.
    fn range(&self, text: &[u8]) -> (usize, usize) {
        let from = if text.starts_with(self.prefix) { self.start } else { 0 };
        let to = if text.ends_with(self.suffix) {
            text.len().saturating_sub(self.back)
        } else {
            text.len()
        };
        (from, to)
    }
}

/// A text given as parts, read as their concatenation (a hint's text blocks
/// are joined with `""` by the reference).
#[derive(Debug, Clone, Copy)]
pub struct Joined<'a> {
    parts: &'a [&'a str],
    len: usize,
}

impl<'a> Joined<'a> {
    /// The concatenation of `parts`.
    pub fn new(parts: &'a [&'a str]) -> Self {
        let len = parts.iter().fold(0usize, |n, p| n.saturating_add(p.len()));
        Joined { parts, len }
    }

    fn byte_at(&self, mut i: usize) -> Option<u8> {
        for p in self.parts {
            if i < p.len() {
                return p.as_bytes().get(i).copied();
            }
            i -= p.len();
        }
        None
    }

    fn matches_at(&self, pos: usize, needle: &[u8]) -> bool {
        if let [part] = self.parts {
            return part.as_bytes().get(pos..).is_some_and(|rest| rest.starts_with(needle));
        }
        needle.iter().enumerate().all(|(k, b)| self.byte_at(pos.saturating_add(k)) == Some(*b))
    }

    /// The first position at or after `from` where `needle` starts.
    pub fn find(&self, needle: &str, from: usize) -> Option<usize> {
        let n = needle.as_bytes();
        if let [part] = self.parts {
            return find_bytes(part.as_bytes().get(from..)?, n).map(|p| p + from);
        }
        let last = self.len.checked_sub(n.len())?;
        (from..=last).find(|&pos| self.matches_at(pos, n))
    }

    /// Python's `needle in text`.
    pub fn contains(&self, needle: &str) -> bool {
        self.find(needle, 0).is_some()
    }

    /// `(a in text, b in text)` for two needles that start with `<`, in one
    /// pass over the text's `<` when it is in one part ([`each_byte`]), read
    /// only where `span`, made for the same needles, says they can start
    /// ([`TagSpan::WHOLE`]: everywhere). Inlined where the needles are
    /// constants: their compares are then a few instructions.
    #[inline(always)]
    pub fn contains_tags_in(&self, a: &str, b: &str, span: &TagSpan<'_>) -> (bool, bool) {
        let ([part], Some(("<", a_rest)), Some(("<", b_rest))) =
            (self.parts, a.split_at_checked(1), b.split_at_checked(1))
        else {
            return (self.contains(a), self.contains(b));
        };
        let (mut has_a, mut has_b) = (false, false);
        let bytes = part.as_bytes();
        let (from, to) = span.range(bytes);
        each_byte(b'<', bytes.get(from..to).unwrap_or(&[]), |at| {
            let rest = bytes.get(from + at + 1..).unwrap_or(&[]);
            // The byte after `<` rejects most tags before a compare call.
            let at_tag = |tag: &[u8]| {
                tag.first().is_none_or(|t| rest.first() == Some(t)) && rest.starts_with(tag)
            };
            has_a |= at_tag(a_rest.as_bytes());
            has_b |= at_tag(b_rest.as_bytes());
            has_a && has_b
        });
        (has_a, has_b)
    }

    /// The first newline at or after `from`, before `to`.
    fn newline_between(&self, from: usize, to: usize) -> bool {
        if let [part] = self.parts {
            return part.as_bytes().get(from..to).is_some_and(|s| find_byte(b'\n', s).is_some());
        }
        (from..to).any(|i| self.byte_at(i) == Some(b'\n'))
    }

    /// Python's `re.search(open + "(.*?)" + close, text)` (no DOTALL: `.`
    /// stops at `\n`): the byte range of the first capture.
    pub fn capture(&self, open: &str, close: &str) -> Option<(usize, usize)> {
        let mut from = 0;
        while let Some(start) = self.find(open, from) {
            let inner = start + open.len();
            if let Some(end) = self.find(close, inner) {
                if !self.newline_between(inner, end) {
                    return Some((inner, end));
                }
            }
            // No close tag before a newline here: the regex tries the next start.
            from = start + 1;
        }
        None
    }

    /// Like [`capture`](Self::capture), but only for an `open` tag that
    /// starts exactly at `pos` (strict mode reads only where envaware writes).
    pub fn capture_at(&self, pos: usize, open: &str, close: &str) -> Option<(usize, usize)> {
        if !self.matches_at(pos, open.as_bytes()) {
            return None;
        }
        let inner = pos.checked_add(open.len())?;
        let end = self.find(close, inner)?;
        (!self.newline_between(inner, end)).then_some((inner, end))
    }

    /// The bytes `start..end`, across parts.
    pub fn bytes(&self, start: usize, end: usize) -> impl Iterator<Item = u8> + 'a {
        let parts: &'a [&'a str] = self.parts;
        parts.iter().flat_map(|p| p.bytes()).skip(start).take(end.saturating_sub(start))
    }

    /// Whether `needle` starts exactly at `pos`.
    pub fn starts_with_at(&self, pos: usize, needle: &str) -> bool {
        self.matches_at(pos, needle.as_bytes())
    }

    /// The bytes `start..end` as a `&str`: borrowed when they lie in one
    /// part, else copied into `scratch`. `None` when they do not fit.
    pub fn slice<'s>(&self, start: usize, end: usize, scratch: &'s mut [u8]) -> Option<&'s str>
    where
        'a: 's,
    {
        let mut offset = 0;
        for p in self.parts {
            if start >= offset && end <= offset + p.len() {
                return p.get(start - offset..end - offset);
            }
            offset += p.len();
        }
        let out = scratch.get_mut(..end.checked_sub(start)?)?;
        for (k, slot) in out.iter_mut().enumerate() {
            *slot = self.byte_at(start + k)?;
        }
        // Tags are ASCII, so a capture between them is whole UTF-8.
        core::str::from_utf8(out).ok()
    }
}

/// A byte sink with a fixed capacity that keeps counting past it, so a
/// capacity error can say how much was needed.
#[derive(Debug)]
pub struct ByteWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> ByteWriter<'b> {
    /// Writes into `buf`.
    pub fn new(buf: &'b mut [u8]) -> Self {
        ByteWriter { buf, len: 0 }
    }

    /// Appends bytes (counted even past the capacity).
    pub fn push(&mut self, bytes: &[u8]) {
        if let Some(dst) = self.buf.get_mut(self.len..self.len.saturating_add(bytes.len())) {
            copy_bytes(dst, bytes);
        }
        self.len = self.len.saturating_add(bytes.len());
    }

    /// The capacity.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The written text, or `Err(needed)` when it did not fit.
    pub fn finish(self) -> Result<&'b str, usize> {
        let len = self.len;
        match self.buf.get(..len) {
            Some(bytes) => core::str::from_utf8(bytes).map_err(|_| len),
            None => Err(len),
        }
    }
}

impl core::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

/// The longest pattern [`Replace`] matches (the placeholders are short).
pub const MAX_PATTERN: usize = 16;

/// Python's `text.replace(pattern, replacement)`, streamed: bytes written
/// through it reach `out` with every leftmost non-overlapping occurrence of
/// `pattern` replaced, even when an occurrence spans several writes.
#[derive(Debug)]
pub struct Replace<'p, W> {
    out: W,
    pattern: &'p [u8],
    replacement: &'p [u8],
    /// A prefix of `pattern` seen but not yet decided; shorter than it.
    pending: [u8; MAX_PATTERN],
    pending_len: usize,
    /// Whether the replacement is written through [`push_escaped`].
    escape: bool,
}

/// Where [`Replace`] sends its output.
pub trait Bytes {
    /// Appends bytes.
    fn push(&mut self, bytes: &[u8]);
}

impl Bytes for ByteWriter<'_> {
    fn push(&mut self, bytes: &[u8]) {
        ByteWriter::push(self, bytes)
    }
}

impl<T: Bytes + ?Sized> Bytes for &mut T {
    fn push(&mut self, bytes: &[u8]) {
        (**self).push(bytes)
    }
}

impl<'p, W: Bytes> Replace<'p, W> {
    /// Replaces `pattern` by `replacement` on the way to `out`.
    /// A pattern longer than [`MAX_PATTERN`] or empty is never matched.
    pub fn new(out: W, pattern: &'p str, replacement: &'p str) -> Self {
        let pattern = if pattern.is_empty() || pattern.len() > MAX_PATTERN {
            &[][..]
        } else {
            pattern.as_bytes()
        };
        Replace {
            out,
            pattern,
            replacement: replacement.as_bytes(),
            pending: [0; MAX_PATTERN],
            pending_len: 0,
            escape: false,
        }
    }

    /// Writes the replacement with `<` and `>` escaped (strict mode: the
    /// replacement is untrusted text, such as a tool name).
    pub fn escaping_replacement(mut self) -> Self {
        self.escape = true;
        self
    }

    fn pending(&self) -> &[u8] {
        self.pending.get(..self.pending_len).unwrap_or(&[])
    }

    fn push_byte(&mut self, b: u8) {
        if self.pattern.is_empty() {
            self.out.push(&[b]);
            return;
        }
        if let Some(slot) = self.pending.get_mut(self.pending_len) {
            *slot = b;
            self.pending_len += 1;
        }
        // Drop leading bytes until what is pending could still start a match:
        // exactly the leftmost scan of `str.replace`.
        while self.pending_len > 0 && !self.pattern.starts_with(self.pending()) {
            let first = self.pending[0];
            self.out.push(&[first]);
            // The whole array, by a constant: no range for a panic to check.
            self.pending.rotate_left(1);
            self.pending_len -= 1;
        }
        if self.pending_len == self.pattern.len() {
            if self.escape {
                push_escaped(&mut self.out, self.replacement);
            } else {
                self.out.push(self.replacement);
            }
            self.pending_len = 0;
        }
    }

    /// Sends everything still pending, unreplaced, and returns the sink.
    pub fn finish(mut self) -> W {
        let pending_len = self.pending_len;
        let pending = self.pending;
        self.out.push(pending.get(..pending_len).unwrap_or(&[]));
        self.out
    }
}

impl<W: Bytes> Bytes for Replace<'_, W> {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.push_byte(b);
        }
    }
}

impl<W: Bytes> core::fmt::Write for Replace<'_, W> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_split_at_their_exponent_and_point() {
        for (text, want) in [
            ("12.5", Some(("12.5", None))),
            ("1e5", Some(("1", Some((false, "5"))))),
            ("1E+05", Some(("1", Some((false, "05"))))),
            ("-2.5e-3", Some(("-2.5", Some((true, "3"))))),
            ("1e", None),
            ("1e+", None),
            ("1e-x", None),
            ("1e5e5", None),
            ("e1", Some(("", Some((false, "1"))))),
        ] {
            assert_eq!(split_exponent(text), want, "{text:?}");
        }
        for text in ["12.5", "12", ".5", "1.", "1.2.3", ""] {
            assert_eq!(split_point(text), text.split_once('.').unwrap_or((text, "")), "{text:?}");
        }
    }

    /// The list is Rust's White_Space plus U+001C..U+001F, for every char.
    #[test]
    fn py_is_space_is_white_space_plus_the_separators() {
        for c in (0..0x11_0000u32).filter_map(char::from_u32) {
            assert_eq!(
                py_is_space(c),
                c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c),
                "{c:?}"
            );
        }
    }

    #[test]
    fn numbers_are_padded_as_format_pads_them() {
        let cases: &[(u32, usize, u8)] = &[
            (0, 0, b'0'),
            (7, 2, b'0'),
            (7, 2, b' '),
            (42, 2, b'0'),
            (123, 2, b'0'),
            (5, 6, b'0'),
            (999_999, 6, b'0'),
        ];
        for &(n, width, pad) in cases {
            let mut buf = [0u8; 16];
            let mut w = ByteWriter::new(&mut buf);
            push_padded(&mut w, n, width, pad);
            let want =
                if pad == b'0' { std::format!("{n:0width$}") } else { std::format!("{n:width$}") };
            assert_eq!(w.finish(), Ok(want.as_str()), "{n} {width} {pad}");
        }
        let mut buf = [0u8; 16];
        let mut w = ByteWriter::new(&mut buf);
        push_padded(&mut w, u32::MAX, 10, b'0');
        assert_eq!(w.finish(), Ok("4294967295"));
    }

    #[test]
    fn copies_go_as_far_as_both_sides_and_no_further() {
        let src: std::vec::Vec<u8> = (1..=13).collect();
        for (dst_len, src_len) in
            [(0, 5), (5, 0), (13, 13), (16, 13), (13, 16), (7, 9), (9, 7), (4, 4), (3, 11)]
        {
            let src = &src[..src_len.min(13)];
            let mut dst = std::vec![0u8; dst_len];
            copy_bytes(&mut dst, src);
            let n = dst_len.min(src.len());
            assert_eq!(&dst[..n], &src[..n], "{dst_len} {src_len}");
            assert!(dst[n..].iter().all(|&b| b == 0), "{dst_len} {src_len}");
        }
    }

    #[test]
    fn strip_removes_python_whitespace_including_separators() {
        assert_eq!(py_strip("\u{1c}\u{a0} x \u{1f}\u{3000}"), "x");
        assert_eq!(py_strip("\u{200b}x"), "\u{200b}x"); // zero-width space is not whitespace
    }

    #[test]
    fn capture_finds_first_close_and_stops_at_newlines() {
        let parts = ["a<t>1</t><t>2</t>"];
        let j = Joined::new(&parts);
        assert_eq!(j.capture("<t>", "</t>"), Some((4, 5)));
        let parts = ["<t>x\n</t> <t>y</t>"];
        let j = Joined::new(&parts);
        assert_eq!(j.capture("<t>", "</t>"), Some((13, 14)));
        let parts = ["<t>x\n</t>"];
        assert_eq!(Joined::new(&parts).capture("<t>", "</t>"), None);
    }

    #[test]
    fn joined_parts_match_across_boundaries() {
        let parts = ["ab<cur", "rent>", "9</current>"];
        let j = Joined::new(&parts);
        assert!(j.contains("<current>"));
        let (s, e) = j.capture("<current>", "</current>").unwrap();
        let mut scratch = [0u8; 8];
        assert_eq!(j.slice(s, e, &mut scratch), Some("9"));
        let parts = ["<a>12", "34</a>"];
        let j = Joined::new(&parts);
        let (s, e) = j.capture("<a>", "</a>").unwrap();
        assert_eq!(j.slice(s, e, &mut scratch), Some("1234"));
        let mut tiny = [0u8; 2];
        assert_eq!(j.slice(s, e, &mut tiny), None);
    }

    fn replace_all(chunks: &[&str], pat: &str, rep: &str) -> std::string::String {
        let mut buf = [0u8; 256];
        let mut w = ByteWriter::new(&mut buf);
        let mut r = Replace::new(&mut w, pat, rep);
        for c in chunks {
            r.push(c.as_bytes());
        }
        r.finish();
        std::string::String::from(w.finish().unwrap())
    }

    #[test]
    fn formatted_text_is_replaced_too() {
        use core::fmt::Write as _;
        let mut buf = [0u8; 64];
        let mut w = ByteWriter::new(&mut buf);
        let mut r = Replace::new(&mut w, "{n}", "7");
        // The pattern across two pieces of the formatting.
        let first = "x{";
        write!(r, "{first}n}} and {{n}}").unwrap();
        r.finish();
        assert_eq!(w.finish().unwrap(), "x7 and 7");
    }

    #[test]
    fn streaming_replace_matches_str_replace() {
        for (text, pat, rep) in [
            ("{count}{count}x{cou", "{count}", "3"),
            ("aaa", "aa", "b"),
            ("{{count}}", "{count}", "7"),
            ("ababab", "abab", "X"),
            ("no match", "{count}", "1"),
        ] {
            // Split at every position: the result must not depend on chunking.
            for cut in 0..=text.len() {
                let got = replace_all(&[&text[..cut], &text[cut..]], pat, rep);
                assert_eq!(got, text.replace(pat, rep), "{text:?} cut {cut}");
            }
        }
    }

    #[test]
    fn find_agrees_with_str_find() {
        let hay = "a<b<current-time<current-time>x\u{e9}<tasks><<tasks>";
        for from in 0..hay.len() {
            for needle in ["<current-time>", "<tasks>", "<", "x\u{e9}<", "zz", "<tasks><<tasks>!"] {
                let n = needle.as_bytes();
                let want =
                    hay.as_bytes()[from..].windows(n.len()).position(|w| w == n).map(|p| p + from);
                assert_eq!(Joined::new(&[hay]).find(needle, from), want, "{needle:?} from {from}");
            }
        }
        // Across 32-byte chunks, and in the last bytes after them.
        for len in 0..100 {
            let mut bytes = std::vec![b'.'; len];
            for at in 0..len {
                bytes[at] = b'<';
                assert_eq!(find_byte(b'<', &bytes), Some(at));
                bytes[at] = 0xff;
                assert_eq!(find_byte(b'<', &bytes), None);
                bytes[at] = b'.';
            }
        }
    }

    #[test]
    fn each_byte_visits_every_match_in_order_and_stops_when_asked() {
        // Bytes next to `<` (0x3c) in value, with the high bit, and zero:
        // where a word-at-a-time test could see a match that is not there.
        let alphabet = [b'<', b'=', b';', 0xbc, 0x80, 0x00, 0xff, b'.'];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in 0..140 {
            for _ in 0..8 {
                let hay: std::vec::Vec<u8> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        alphabet[(seed % 8) as usize]
                    })
                    .collect();
                for byte in [b'<', 0x00, 0xbc] {
                    let want: std::vec::Vec<usize> = (0..len).filter(|&i| hay[i] == byte).collect();
                    let mut got = std::vec::Vec::new();
                    assert!(!each_byte(byte, &hay, |at| {
                        got.push(at);
                        false
                    }));
                    assert_eq!(got, want, "{hay:?} {byte}");
                    // Stopped at the k-th match, it has seen exactly k.
                    for k in 0..want.len() {
                        let mut seen = 0;
                        assert!(each_byte(byte, &hay, |_| {
                            seen += 1;
                            seen > k
                        }));
                        assert_eq!(seen, k + 1);
                    }
                }
            }
        }
    }

    #[test]
    fn a_chunk_holds_a_byte_only_where_it_is() {
        let mut chunk = [b'.'; 32];
        assert!(!holds(&chunk, b'<') && !holds(&[], b'<'));
        for at in 0..32 {
            chunk[at] = b'<';
            assert!(holds(&chunk, b'<'), "{at}");
            chunk[31 - at] = b'<';
            assert!(holds(&chunk, b'<'), "{at}");
            chunk = [b'.'; 32];
        }
    }

    #[test]
    fn a_tag_span_skips_only_known_text_no_tag_can_start_in() {
        let (a, b) = ("<current-time>", "<tasks>");
        // The default template's text around its runtime state: nothing to
        // search in either.
        let span = TagSpan::new("<system-reminder>Read this:\n", "\n</system-reminder>", a, b);
        assert_eq!((span.start, span.back), (28, 19));
        // A prefix ending where a tag may go on, or holding one; a suffix
        // holding one, then other text.
        assert_eq!(TagSpan::new("x<cur", "", a, b).start, 1);
        assert_eq!(TagSpan::new("xy<tasks>z<tasks>", "", a, b).start, 2);
        assert_eq!(TagSpan::new("xy<", "", a, b).start, 2);
        assert_eq!(TagSpan::new("<tas<x", "", a, b).start, 6);
        assert_eq!(TagSpan::new("", "<tasks>x<tasks", a, b).back, 13);
        assert_eq!(TagSpan::new("", "<<current-time>", a, b).back, 13);
        // Needles not found by their `<`: no skipping.
        let other = TagSpan::new("abc", "abc", "b", "<x>");
        assert_eq!((other.start, other.back), (0, 0));
        for (text, tags) in [
            ("<system-reminder>Read this:\n<tasks>1</tasks>\n</system-reminder>", (false, true)),
            ("<system-reminder>Read this:\n\n</system-reminder>", (false, false)),
            // Too short for both: the known texts overlap.
            ("<system-reminder>Read this:\n</system-reminder>", (false, false)),
            // Not around the known text: read whole.
            ("<tasks><system-reminder>Read this:\n</system-reminder>", (false, true)),
            ("<system-reminder>Read this:\n</system-reminder><current-time>", (true, false)),
        ] {
            assert_eq!(Joined::new(&[text]).contains_tags_in(a, b, &span), tags, "{text:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]

        #[test]
        fn tags_in_a_span_are_the_tags_in_the_text(
            prefix in "[<tasrk>x]{0,9}",
            middle in "[<tasrk>x]{0,9}",
            suffix in "[<tasrk>x]{0,9}",
            (around, end) in (0..3usize, 0..3usize),
        ) {
            let (a, b) = ("<tak>", "<ta");
            let span = TagSpan::new(&prefix, &suffix, a, b);
            // Around the known text, or around part of it, or not at all.
            let front = [&prefix[..], prefix.get(1..).unwrap_or(""), ""][around];
            let back = [&suffix[..], suffix.get(..suffix.len().saturating_sub(1)).unwrap_or(""), "x"][end];
            let text = std::format!("{front}{middle}{back}");
            let parts = [text.as_str()];
            let joined = Joined::new(&parts);
            proptest::prop_assert_eq!(joined.contains_tags_in(a, b, &span), (joined.contains(a), joined.contains(b)));
        }
    }

    #[test]
    fn contains_tags_in_the_whole_text_agrees_with_contains() {
        let texts: [&[&str]; 5] = [
            &["x<current-time>1<tasks>"],
            &["<tasks><current-time"],
            &["<<current-time>"],
            &["<cur", "rent-time><tasks>"],
            &[""],
        ];
        for parts in texts {
            let j = Joined::new(parts);
            for (a, b) in [
                ("<current-time>", "<tasks>"),
                ("<tasks>", "<current-time>"),
                ("<", "x"),
                ("<", "<tasks>"),
            ] {
                assert_eq!(
                    j.contains_tags_in(a, b, &TagSpan::WHOLE),
                    (j.contains(a), j.contains(b)),
                    "{parts:?} {a} {b}"
                );
            }
        }
    }

    #[test]
    fn byte_writer_reports_needed_length() {
        let mut buf = [0u8; 4];
        let mut w = ByteWriter::new(&mut buf);
        w.push(b"hello");
        assert_eq!(w.finish(), Err(5));
    }
}

/// Copies `src` into the start of `dst`, as far as both go. Unlike
/// `copy_from_slice`, it has no panic path for lengths the compiler cannot
/// prove equal (`cargo xtask nopanic` checks it).
pub(crate) fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    // Four bytes a move (a word load and store where the core allows
    // unaligned ones): a third of a byte loop's instructions, and no call
    // to `memcpy`, which costs more than it saves on a hint's short pieces.
    // Cut to the same length, so that the chunks' remainders line up.
    let n = dst.len().min(src.len());
    let (Some(dst), Some(src)) = (dst.get_mut(..n), src.get(..n)) else { return };
    if n < 8 {
        // A few bytes (a separator, a digit pair): the chunks cost more.
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
        return;
    }
    let mut to = dst.chunks_exact_mut(4);
    let mut from = src.chunks_exact(4);
    for (d, s) in (&mut to).zip(&mut from) {
        if let (Ok(d), Ok(s)) = (<&mut [u8; 4]>::try_from(d), <[u8; 4]>::try_from(s)) {
            *d = s;
        }
    }
    for (d, s) in to.into_remainder().iter_mut().zip(from.remainder()) {
        *d = *s;
    }
}

/// Writes `bytes` to `out` with `<` as `&lt;` and `>` as `&gt;`, so that
/// untrusted text cannot open or close a tag (strict mode).
pub fn push_escaped<W: Bytes + ?Sized>(out: &mut W, mut bytes: &[u8]) {
    while let Some(at) = bytes.iter().position(|&b| b == b'<' || b == b'>') {
        out.push(bytes.get(..at).unwrap_or(&[]));
        out.push(if bytes.get(at) == Some(&b'<') { b"&lt;" } else { b"&gt;" });
        bytes = bytes.get(at + 1..).unwrap_or(&[]);
    }
    out.push(bytes);
}

/// A [`core::fmt::Write`] that escapes `<` and `>` on the way to `out`.
#[derive(Debug)]
pub struct Escaped<W>(pub W);

impl<W: Bytes> core::fmt::Write for Escaped<W> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        push_escaped(&mut self.0, s.as_bytes());
        Ok(())
    }
}
