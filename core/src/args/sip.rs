//! SipHash-1-3 with a 128-bit result, the same function as the `siphasher`
//! crate's `sip128::SipHasher13`, written here so that whole words go
//! straight into the rounds: the dump's buffer hands the hash 64 bytes at a
//! time, so only the last few bytes of an argument are gathered one by one.

/// The state of one SipHash-1-3 (128-bit) computation.
#[derive(Debug, Clone)]
pub(super) struct Sip13 {
    /// `v0` to `v3`.
    v: [u64; 4],
    /// The bytes after the last whole word, the first lowest.
    tail: u64,
    /// How many bytes `tail` holds (0 to 7).
    ntail: usize,
    /// The length of the input, modulo 256: all the finalization reads.
    length: u8,
}

/// One SipRound, on the state held in locals (registers, where a call
/// per round would load and store all four words).
#[inline(always)]
fn round(v: &mut [u64; 4]) {
    let [v0, v1, v2, v3] = v;
    *v0 = v0.wrapping_add(*v1);
    *v1 = v1.rotate_left(13) ^ *v0;
    *v0 = v0.rotate_left(32);
    *v2 = v2.wrapping_add(*v3);
    *v3 = v3.rotate_left(16) ^ *v2;
    *v0 = v0.wrapping_add(*v3);
    *v3 = v3.rotate_left(21) ^ *v0;
    *v2 = v2.wrapping_add(*v1);
    *v1 = v1.rotate_left(17) ^ *v2;
    *v2 = v2.rotate_left(32);
}

/// One message word: one compression round (the "1" of 1-3).
#[inline(always)]
fn word(v: &mut [u64; 4], m: u64) {
    v[3] ^= m;
    round(v);
    v[0] ^= m;
}

impl Sip13 {
    /// A computation under the key `(k0, k1)` that has seen nothing.
    pub(super) fn new(k0: u64, k1: u64) -> Self {
        Sip13 {
            v: [
                k0 ^ 0x736f_6d65_7073_6575,
                // The 128-bit variant's `v1 ^= 0xee`.
                k1 ^ 0x646f_7261_6e64_6f83,
                k0 ^ 0x6c79_6765_6e65_7261,
                k1 ^ 0x7465_6462_7974_6573,
            ],
            tail: 0,
            ntail: 0,
            length: 0,
        }
    }

    /// Appends `bytes` to the input.
    pub(super) fn write(&mut self, bytes: &[u8]) {
        // Only the length's low byte enters the result.
        self.length = self.length.wrapping_add(bytes.len() as u8);
        let mut rest = bytes;
        // Complete a word begun by an earlier write, a byte at a time.
        while self.ntail != 0 {
            let Some((&c, more)) = rest.split_first() else { return };
            self.tail |= u64::from(c) << (8 * self.ntail);
            self.ntail = (self.ntail + 1) % 8;
            rest = more;
            if self.ntail == 0 {
                let m = core::mem::take(&mut self.tail);
                word(&mut self.v, m);
            }
        }
        let mut v = self.v;
        while let Some((m, more)) = rest.split_first_chunk::<8>() {
            word(&mut v, u64::from_le_bytes(*m));
            rest = more;
        }
        self.v = v;
        for (i, &c) in rest.iter().enumerate() {
            self.tail |= u64::from(c) << (8 * i);
        }
        self.ntail = rest.len();
    }

    /// The 128-bit hash of everything written, the first half lowest (as
    /// `siphasher`'s `Hash128::as_u128`).
    pub(super) fn finish128(&self) -> u128 {
        let mut v = self.v;
        word(&mut v, (u64::from(self.length) << 56) | self.tail);
        v[2] ^= 0xee;
        let mut halves = [0u64; 2];
        for half in &mut halves {
            round(&mut v);
            round(&mut v);
            round(&mut v);
            *half = v[0] ^ v[1] ^ v[2] ^ v[3];
            v[1] ^= 0xdd;
        }
        let [h1, h2] = halves;
        u128::from(h1) | (u128::from(h2) << 64)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use proptest::prelude::*;
    use siphasher::sip128::{Hasher128 as _, SipHasher13};
    use std::vec::Vec;

    /// `siphasher`'s result for `bytes` under the key `(k0, k1)`.
    fn reference(k0: u64, k1: u64, bytes: &[u8]) -> u128 {
        let mut h = SipHasher13::new_with_keys(k0, k1);
        core::hash::Hasher::write(&mut h, bytes);
        h.finish128().as_u128()
    }

    /// Every length from 0 to 300 (each tail length, past 256 for the
    /// length's wrap), written whole and a byte at a time.
    #[test]
    fn every_length_hashes_as_siphasher_does() {
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in 0..=bytes.len() {
            let input = &bytes[..len];
            let expected = reference(1, 2, input);
            let mut whole = Sip13::new(1, 2);
            whole.write(input);
            assert_eq!(whole.finish128(), expected, "{len} bytes in one write");
            let mut by_byte = Sip13::new(1, 2);
            for b in input.chunks(1) {
                by_byte.write(b);
            }
            assert_eq!(by_byte.finish128(), expected, "{len} bytes a byte at a time");
        }
    }

    proptest! {
        /// Any key, any input, split into any pieces.
        #[test]
        fn pieces_hash_as_siphasher_does(
            k0: u64,
            k1: u64,
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            cuts in proptest::collection::vec(0usize..200, 0..12),
        ) {
            let mut sip = Sip13::new(k0, k1);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut from = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                sip.write(&bytes[from..cut]);
                from = cut;
            }
            prop_assert_eq!(sip.finish128(), reference(k0, k1, &bytes));
        }
    }
}
