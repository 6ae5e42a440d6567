//! The character rule of CPython 3.11's `re` that the strptime regex
//! relies on beyond `\d` (in `time::numeric`):
//! `re.IGNORECASE` for literals (the simple lowercase mapping plus
//! `re._casefix`). `re`'s `\s` for `str` patterns is `str.isspace()`:
//! `text::py_is_space`.

/// CPython 3.11's simple lowercase mapping (`_sre.unicode_tolower`, Unicode
/// 14) as runs `(first, count, stride, delta)`: characters `first + k *
/// stride` for `k < count` lowercase to themselves plus `delta`. Kept here,
/// not taken from `char::to_lowercase`, to stay Python's whatever Unicode
/// version this Rust has, and because core's case tables cost ~26 KB.
#[rustfmt::skip]
const LOWER_RUNS: [(u32, u8, u8, i32); 182] = [
    (0x41, 26, 1, 32), (0xc0, 23, 1, 32), (0xd8, 7, 1, 32), (0x100, 24, 2, 1), (0x130, 1, 1, -199), (0x132, 3, 2, 1),
    (0x139, 8, 2, 1), (0x14a, 23, 2, 1), (0x178, 1, 1, -121), (0x179, 3, 2, 1), (0x181, 1, 1, 210), (0x182, 2, 2, 1),
    (0x186, 1, 1, 206), (0x187, 1, 1, 1), (0x189, 2, 1, 205), (0x18b, 1, 1, 1), (0x18e, 1, 1, 79), (0x18f, 1, 1, 202),
    (0x190, 1, 1, 203), (0x191, 1, 1, 1), (0x193, 1, 1, 205), (0x194, 1, 1, 207), (0x196, 1, 1, 211), (0x197, 1, 1, 209),
    (0x198, 1, 1, 1), (0x19c, 1, 1, 211), (0x19d, 1, 1, 213), (0x19f, 1, 1, 214), (0x1a0, 3, 2, 1), (0x1a6, 1, 1, 218),
    (0x1a7, 1, 1, 1), (0x1a9, 1, 1, 218), (0x1ac, 1, 1, 1), (0x1ae, 1, 1, 218), (0x1af, 1, 1, 1), (0x1b1, 2, 1, 217),
    (0x1b3, 2, 2, 1), (0x1b7, 1, 1, 219), (0x1b8, 1, 1, 1), (0x1bc, 1, 1, 1), (0x1c4, 1, 1, 2), (0x1c5, 1, 1, 1),
    (0x1c7, 1, 1, 2), (0x1c8, 1, 1, 1), (0x1ca, 1, 1, 2), (0x1cb, 9, 2, 1), (0x1de, 9, 2, 1), (0x1f1, 1, 1, 2), (0x1f2, 2, 2, 1),
    (0x1f6, 1, 1, -97), (0x1f7, 1, 1, -56), (0x1f8, 20, 2, 1), (0x220, 1, 1, -130), (0x222, 9, 2, 1), (0x23a, 1, 1, 10795),
    (0x23b, 1, 1, 1), (0x23d, 1, 1, -163), (0x23e, 1, 1, 10792), (0x241, 1, 1, 1), (0x243, 1, 1, -195), (0x244, 1, 1, 69),
    (0x245, 1, 1, 71), (0x246, 5, 2, 1), (0x370, 2, 2, 1), (0x376, 1, 1, 1), (0x37f, 1, 1, 116), (0x386, 1, 1, 38),
    (0x388, 3, 1, 37), (0x38c, 1, 1, 64), (0x38e, 2, 1, 63), (0x391, 17, 1, 32), (0x3a3, 9, 1, 32), (0x3cf, 1, 1, 8),
    (0x3d8, 12, 2, 1), (0x3f4, 1, 1, -60), (0x3f7, 1, 1, 1), (0x3f9, 1, 1, -7), (0x3fa, 1, 1, 1), (0x3fd, 3, 1, -130),
    (0x400, 16, 1, 80), (0x410, 32, 1, 32), (0x460, 17, 2, 1), (0x48a, 27, 2, 1), (0x4c0, 1, 1, 15), (0x4c1, 7, 2, 1),
    (0x4d0, 48, 2, 1), (0x531, 38, 1, 48), (0x10a0, 38, 1, 7264), (0x10c7, 1, 1, 7264), (0x10cd, 1, 1, 7264),
    (0x13a0, 80, 1, 38864), (0x13f0, 6, 1, 8), (0x1c90, 43, 1, -3008), (0x1cbd, 3, 1, -3008), (0x1e00, 75, 2, 1),
    (0x1e9e, 1, 1, -7615), (0x1ea0, 48, 2, 1), (0x1f08, 8, 1, -8), (0x1f18, 6, 1, -8), (0x1f28, 8, 1, -8), (0x1f38, 8, 1, -8),
    (0x1f48, 6, 1, -8), (0x1f59, 4, 2, -8), (0x1f68, 8, 1, -8), (0x1f88, 8, 1, -8), (0x1f98, 8, 1, -8), (0x1fa8, 8, 1, -8),
    (0x1fb8, 2, 1, -8), (0x1fba, 2, 1, -74), (0x1fbc, 1, 1, -9), (0x1fc8, 4, 1, -86), (0x1fcc, 1, 1, -9), (0x1fd8, 2, 1, -8),
    (0x1fda, 2, 1, -100), (0x1fe8, 2, 1, -8), (0x1fea, 2, 1, -112), (0x1fec, 1, 1, -7), (0x1ff8, 2, 1, -128),
    (0x1ffa, 2, 1, -126), (0x1ffc, 1, 1, -9), (0x2126, 1, 1, -7517), (0x212a, 1, 1, -8383), (0x212b, 1, 1, -8262),
    (0x2132, 1, 1, 28), (0x2160, 16, 1, 16), (0x2183, 1, 1, 1), (0x24b6, 26, 1, 26), (0x2c00, 48, 1, 48), (0x2c60, 1, 1, 1),
    (0x2c62, 1, 1, -10743), (0x2c63, 1, 1, -3814), (0x2c64, 1, 1, -10727), (0x2c67, 3, 2, 1), (0x2c6d, 1, 1, -10780),
    (0x2c6e, 1, 1, -10749), (0x2c6f, 1, 1, -10783), (0x2c70, 1, 1, -10782), (0x2c72, 1, 1, 1), (0x2c75, 1, 1, 1),
    (0x2c7e, 2, 1, -10815), (0x2c80, 50, 2, 1), (0x2ceb, 2, 2, 1), (0x2cf2, 1, 1, 1), (0xa640, 23, 2, 1), (0xa680, 14, 2, 1),
    (0xa722, 7, 2, 1), (0xa732, 31, 2, 1), (0xa779, 2, 2, 1), (0xa77d, 1, 1, -35332), (0xa77e, 5, 2, 1), (0xa78b, 1, 1, 1),
    (0xa78d, 1, 1, -42280), (0xa790, 2, 2, 1), (0xa796, 10, 2, 1), (0xa7aa, 1, 1, -42308), (0xa7ab, 1, 1, -42319),
    (0xa7ac, 1, 1, -42315), (0xa7ad, 1, 1, -42305), (0xa7ae, 1, 1, -42308), (0xa7b0, 1, 1, -42258), (0xa7b1, 1, 1, -42282),
    (0xa7b2, 1, 1, -42261), (0xa7b3, 1, 1, 928), (0xa7b4, 8, 2, 1), (0xa7c4, 1, 1, -48), (0xa7c5, 1, 1, -42307),
    (0xa7c6, 1, 1, -35384), (0xa7c7, 2, 2, 1), (0xa7d0, 1, 1, 1), (0xa7d6, 2, 2, 1), (0xa7f5, 1, 1, 1), (0xff21, 26, 1, 32),
    (0x10400, 40, 1, 40), (0x104b0, 36, 1, 40), (0x10570, 11, 1, 39), (0x1057c, 15, 1, 39), (0x1058c, 7, 1, 39),
    (0x10594, 2, 1, 39), (0x10c80, 51, 1, 64), (0x118a0, 32, 1, 32), (0x16e40, 32, 1, 32), (0x1e900, 34, 1, 34),
];

/// [`LOWER_RUNS`] packed into three 16-bit words a run, half the flash
/// of the tuples: the low 16 bits of `first`; then bit 0 its bit 16, bit 1
/// `stride - 1`, bit 2 bit 16 of `delta + 2**16`, bits 3.. `count`; then
/// the low 16 bits of `delta + 2**16`. Built (and each field checked to
/// fit) at compile time.
const LOWER_PACKED: [[u16; 3]; 182] = {
    let mut out = [[0u16; 3]; 182];
    let mut i = 0;
    while i < out.len() {
        let (first, count, stride, delta) = LOWER_RUNS[i];
        let biased = delta + (1 << 16);
        assert!(first < 1 << 17 && (stride == 1 || stride == 2) && biased >= 0 && biased < 1 << 17);
        let biased = biased as u32;
        out[i] = [
            (first & 0xffff) as u16,
            ((first >> 16) | (stride as u32 - 1) << 1 | (biased >> 16) << 2 | (count as u32) << 3)
                as u16,
            (biased & 0xffff) as u16,
        ];
        i += 1;
    }
    out
};

/// The first code point of a packed run.
fn run_first(run: &[u16; 3]) -> u32 {
    u32::from(run[0]) + ((u32::from(run[1]) & 1) << 16)
}

/// `_sre.unicode_tolower`.
fn sre_lower(c: char) -> char {
    let n = c as u32;
    let i = LOWER_PACKED.partition_point(|r| run_first(r) <= n);
    let Some(run) = i.checked_sub(1).and_then(|i| LOWER_PACKED.get(i)) else {
        return c;
    };
    let (first, flags) = (run_first(run), u32::from(run[1]));
    let count = flags >> 3;
    let stride = 1 + (flags >> 1 & 1);
    let delta = (u32::from(run[2]) | (flags >> 2 & 1) << 16) as i32 - (1 << 16);
    let off = n - first;
    let (k, rest) = (off / stride, off % stride);
    if rest != 0 || k >= count {
        return c;
    }
    n.checked_add_signed(delta).and_then(char::from_u32).unwrap_or(c)
}

/// `re._casefix._EXTRA_CASES` (Python 3.11): lowercase characters that
/// match each other under `IGNORECASE` although their lowercase forms differ.
#[rustfmt::skip]
const CASE_FIXES: &[(u16, [u16; 2])] = &[
    (0x69, [0x131, 0]), (0x73, [0x17f, 0]), (0xb5, [0x3bc, 0]), (0x131, [0x69, 0]), (0x17f, [0x73, 0]),
    (0x345, [0x3b9, 0x1fbe]), (0x390, [0x1fd3, 0]), (0x3b0, [0x1fe3, 0]), (0x3b2, [0x3d0, 0]), (0x3b5, [0x3f5, 0]),
    (0x3b8, [0x3d1, 0]), (0x3b9, [0x345, 0x1fbe]), (0x3ba, [0x3f0, 0]), (0x3bc, [0xb5, 0]), (0x3c0, [0x3d6, 0]),
    (0x3c1, [0x3f1, 0]), (0x3c2, [0x3c3, 0]), (0x3c3, [0x3c2, 0]), (0x3c6, [0x3d5, 0]), (0x3d0, [0x3b2, 0]),
    (0x3d1, [0x3b8, 0]), (0x3d5, [0x3c6, 0]), (0x3d6, [0x3c0, 0]), (0x3f0, [0x3ba, 0]), (0x3f1, [0x3c1, 0]),
    (0x3f5, [0x3b5, 0]), (0x432, [0x1c80, 0]), (0x434, [0x1c81, 0]), (0x43e, [0x1c82, 0]), (0x441, [0x1c83, 0]),
    (0x442, [0x1c84, 0x1c85]), (0x44a, [0x1c86, 0]), (0x463, [0x1c87, 0]), (0x1c80, [0x432, 0]), (0x1c81, [0x434, 0]),
    (0x1c82, [0x43e, 0]), (0x1c83, [0x441, 0]), (0x1c84, [0x442, 0x1c85]), (0x1c85, [0x442, 0x1c84]),
    (0x1c86, [0x44a, 0]), (0x1c87, [0x463, 0]), (0x1c88, [0xa64b, 0]), (0x1e61, [0x1e9b, 0]), (0x1e9b, [0x1e61, 0]),
    (0x1fbe, [0x345, 0x3b9]), (0x1fd3, [0x390, 0]), (0x1fe3, [0x3b0, 0]), (0xa64b, [0x1c88, 0]), (0xfb05, [0xfb06, 0]),
    (0xfb06, [0xfb05, 0]),
];

/// Whether text character `c` matches pattern character `p` under
/// `re.IGNORECASE` (CPython 3.11's `sre_compile` for a literal).
///
/// `sre` compares lowercase forms when `p` is cased and demands `c == p`
/// otherwise; no uncased character is the lowercase of another (checked
/// against CPython's tables), so comparing lowercase forms is exact for both.
pub(in crate::time) fn ci_match(p: char, c: char) -> bool {
    let lo = sre_lower(p) as u32;
    let lc = sre_lower(c) as u32;
    if p == c || lc == lo {
        return true;
    }
    match CASE_FIXES.iter().find(|(k, _)| u32::from(*k) == lo) {
        Some((_, alts)) => alts.iter().any(|a| *a != 0 && u32::from(*a) == lc),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lowercase table is CPython 3.11's: an FNV-1a hash over (char,
    /// lowercase) of every character `_sre.unicode_tolower` changes.
    #[test]
    fn case_fixes_match_their_alternatives_only() {
        // CPython 3.11: `re.match(re.escape(p), c, re.I)`.
        for (p, c, matches) in [
            ('\u{1fd3}', '\u{390}', true),
            ('\u{1fd3}', 'a', false),
            ('\u{1fd3}', '\0', false),
            ('\u{fb05}', '\u{fb06}', true),
            ('\u{1fbe}', '\u{345}', true),
            ('\u{1fbe}', '\u{3b9}', true),
            ('\u{1fbe}', 'x', false),
        ] {
            assert_eq!(ci_match(p, c), matches, "{p:?} {c:?}");
        }
    }

    #[test]
    fn case_mapping_is_python_3_11s() {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for c in (0..0x11_0000u32).filter_map(char::from_u32) {
            let lo = sre_lower(c);
            if lo != c {
                let mut bytes = [0u8; 8];
                bytes[..4].copy_from_slice(&(c as u32).to_le_bytes());
                bytes[4..].copy_from_slice(&(lo as u32).to_le_bytes());
                for b in bytes {
                    h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
                }
            }
        }
        assert_eq!(h, 0x7d0c_429f_29de_bbca);
    }
}
