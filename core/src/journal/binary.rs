//! The items' encoding: bytes, LEB128 integers and length-prefixed UTF-8
//! strings (docs/reboot.md, "The items"). A writer that counts what did not
//! fit instead of failing at each call, and a reader that names the field
//! it could not read.

use super::ItemError;
use crate::wire::BufferFull;

/// Writes an item into a caller's buffer; [`finish`](Self::finish) says
/// whether it all fitted.
pub(crate) struct Out<'b> {
    buf: &'b mut [u8],
    len: usize,
    overflow: bool,
}

impl<'b> Out<'b> {
    pub(crate) fn new(buf: &'b mut [u8]) -> Self {
        Out { buf, len: 0, overflow: false }
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        let end = self.len.saturating_add(bytes.len());
        match self.buf.get_mut(self.len..end) {
            Some(slot) if !self.overflow => {
                // As `copy_from_slice`, with no length check left to panic.
                slot.iter_mut().zip(bytes).for_each(|(d, s)| *d = *s);
                self.len = end;
            }
            _ => self.overflow = true,
        }
    }

    pub(crate) fn u8(&mut self, n: u8) {
        self.bytes(&[n]);
    }

    pub(crate) fn u16(&mut self, n: u16) {
        self.bytes(&n.to_le_bytes());
    }

    pub(crate) fn u64_fixed(&mut self, n: u64) {
        self.bytes(&n.to_le_bytes());
    }

    /// LEB128: seven bits a byte, low first.
    pub(crate) fn varint(&mut self, mut n: u64) {
        loop {
            let low = (n & 0x7F) as u8;
            n >>= 7;
            if n == 0 {
                return self.u8(low);
            }
            self.u8(low | 0x80);
        }
    }

    /// Zigzag, then LEB128: small magnitudes of either sign are short.
    pub(crate) fn signed(&mut self, n: i64) {
        self.varint(((n << 1) ^ (n >> 63)) as u64);
    }

    pub(crate) fn str(&mut self, text: &str) {
        self.varint(text.len() as u64);
        self.bytes(text.as_bytes());
    }

    /// A string given in parts, written as one (a list hint's texts).
    pub(crate) fn joined(&mut self, parts: &[&str]) {
        self.varint(parts.iter().map(|p| p.len() as u64).sum());
        parts.iter().for_each(|p| self.bytes(p.as_bytes()));
    }

    /// The bytes written.
    pub(crate) fn finish(self) -> Result<usize, BufferFull> {
        match self.overflow {
            false => Ok(self.len),
            true => Err(BufferFull { capacity: self.buf.len() }),
        }
    }
}

/// Reads an item's fields in order; each read names its field in the
/// error.
#[derive(Clone, Copy)]
pub(crate) struct In<'a> {
    rest: &'a [u8],
}

impl<'a> In<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        In { rest: bytes }
    }

    pub(crate) fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], ItemError> {
        let (taken, rest) = self.rest.split_at_checked(n).ok_or(ItemError::Field(field))?;
        self.rest = rest;
        Ok(taken)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, ItemError> {
        Ok(self.bytes(1, field)?[0])
    }

    pub(crate) fn u16(&mut self, field: &'static str) -> Result<u16, ItemError> {
        let b = self.bytes(2, field)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u64_fixed(&mut self, field: &'static str) -> Result<u64, ItemError> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.bytes(8, field)?);
        Ok(u64::from_le_bytes(b))
    }

    /// A LEB128 integer of at most ten bytes that fits a `u64` and is
    /// written in its shortest form (one value, one encoding).
    pub(crate) fn varint(&mut self, field: &'static str) -> Result<u64, ItemError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8(field)?;
            let bits = u64::from(byte & 0x7F);
            if shift == 63 && bits > 1 {
                return Err(ItemError::Field(field));
            }
            n |= bits << shift;
            if byte & 0x80 == 0 {
                // A last byte of 0 after the first is an overlong form.
                if byte == 0 && shift > 0 {
                    return Err(ItemError::Field(field));
                }
                return Ok(n);
            }
        }
        Err(ItemError::Field(field))
    }

    pub(crate) fn signed(&mut self, field: &'static str) -> Result<i64, ItemError> {
        let z = self.varint(field)?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    /// A count or size that must fit `usize`.
    pub(crate) fn size(&mut self, field: &'static str) -> Result<usize, ItemError> {
        usize::try_from(self.varint(field)?).map_err(|_| ItemError::Field(field))
    }

    pub(crate) fn str(&mut self, field: &'static str) -> Result<&'a str, ItemError> {
        let n = self.size(field)?;
        core::str::from_utf8(self.bytes(n, field)?).map_err(|_| ItemError::NotUtf8)
    }

    /// The item must end here.
    pub(crate) fn end(&self) -> Result<(), ItemError> {
        match self.rest.len() {
            0 => Ok(()),
            n => Err(ItemError::TrailingBytes { count: n }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(n: u64) -> u64 {
        let mut buf = [0u8; 10];
        let mut out = Out::new(&mut buf);
        out.varint(n);
        let len = out.finish().unwrap();
        let mut input = In::new(&buf[..len]);
        let back = input.varint("n").unwrap();
        assert_eq!(input.end(), Ok(()));
        back
    }

    #[test]
    fn integers_round_trip_at_their_edges_and_take_the_fewest_bytes() {
        for n in [0, 1, 127, 128, 16_383, 16_384, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            assert_eq!(round_trip(n), n);
        }
        for (n, len) in
            [(0u64, 1usize), (127, 1), (128, 2), (16_383, 2), (16_384, 3), (u64::MAX, 10)]
        {
            let mut buf = [0u8; 10];
            let mut out = Out::new(&mut buf);
            out.varint(n);
            assert_eq!(out.finish(), Ok(len), "{n}");
        }
        for n in [0i64, 1, -1, 63, -64, 64, -65, i64::MAX, i64::MIN] {
            let mut buf = [0u8; 10];
            let mut out = Out::new(&mut buf);
            out.signed(n);
            let len = out.finish().unwrap();
            assert_eq!(In::new(&buf[..len]).signed("n"), Ok(n));
        }
    }

    #[test]
    fn an_overlong_overflowing_or_cut_integer_is_refused() {
        for bad in [&[0x80, 0x00][..], &[0xFF; 10], &[0x80; 11], &[0x80], &[]] {
            assert_eq!(In::new(bad).varint("n"), Err(ItemError::Field("n")), "{bad:?}");
        }
        // u64::MAX's last byte holds one bit.
        let mut max = [0xFF; 10];
        max[9] = 0x01;
        assert_eq!(In::new(&max).varint("n"), Ok(u64::MAX));
        max[9] = 0x02;
        assert_eq!(In::new(&max).varint("n"), Err(ItemError::Field("n")));
    }

    #[test]
    fn a_string_that_does_not_fit_or_is_not_utf8_is_refused() {
        let mut buf = [0u8; 4];
        let mut out = Out::new(&mut buf);
        out.str("abcd");
        assert_eq!(out.finish(), Err(BufferFull { capacity: 4 }));
        assert_eq!(In::new(&[3, b'a', b'b']).str("s"), Err(ItemError::Field("s")));
        assert_eq!(In::new(&[1, 0xFF]).str("s"), Err(ItemError::NotUtf8));
        let mut input = In::new(&[2, b'h', b'i', 9]);
        assert_eq!(input.str("s"), Ok("hi"));
        assert_eq!(input.end(), Err(ItemError::TrailingBytes { count: 1 }));
    }
}
