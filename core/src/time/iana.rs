//! Which names IANA knows, even when chrono-tz was built without them.
//!
//! A build that keeps only some zones (`zone-filter`) must still tell a
//! zone it left out (a typed error at [`crate::Engine::new`]) from a name
//! that is no zone at all (the reference's fall-back to UTC). Keeping every
//! name would cost ~9 KB; a sorted table of 32-bit FNV-1a hashes 2.4 KB,
//! and the same hashes Elias-Fano coded 1.8 KB. A test checks it against
//! chrono-tz's full list, so a chrono-tz upgrade that adds zones fails
//! until the table is regenerated (the test prints the new table).

/// The longest IANA zone name, in bytes (`America/Argentina/ComodRivadavia`).
pub(crate) const MAX_NAME_LEN: usize = 32;

/// 32-bit FNV-1a.
const fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash = 0x811c_9dc5u32;
    let mut i = 0;
    while i < bytes.len() {
        hash = (hash ^ bytes[i] as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    hash
}

/// Whether `name` is a zone of IANA 2025b (the names chrono-tz 0.10.4 has
/// when built whole). A name that is not can still collide with one: with
/// 597 names, about one random name in 7 million.
pub(crate) fn is_iana_zone(name: &str) -> bool {
    name.len() <= MAX_NAME_LEN && has_hash(fnv1a(name.as_bytes()))
}

/// The low bits of a hash kept per name; the high ten choose a bucket.
const LOW_BITS: u32 = 22;
const BUCKETS: usize = 1 << (32 - LOW_BITS);
const LOW_MASK: u32 = (1 << LOW_BITS) - 1;

/// [`NAME_HASHES`] as Elias-Fano codes, built at compile time (the sorted
/// list itself is not linked): per bucket of the high bits, one 1 bit per
/// hash in it, then a 0 ...
const BUCKET_BITS: [u8; (NAME_HASHES.len() + BUCKETS).div_ceil(8)] = {
    let mut out = [0u8; (NAME_HASHES.len() + BUCKETS).div_ceil(8)];
    let mut i = 0;
    while i < NAME_HASHES.len() {
        // The i-th hash's 1 comes after i ones and one 0 per bucket before it.
        let at = i + (NAME_HASHES[i] >> LOW_BITS) as usize;
        out[at / 8] |= 1 << (at % 8);
        i += 1;
    }
    out
};

/// ... and the low bits of each, packed: 1,845 bytes for the 2,388 of the
/// list (three bytes of padding let every read take four).
const LOWS: [u8; (NAME_HASHES.len() * LOW_BITS as usize).div_ceil(8) + 3] = {
    let mut out = [0u8; (NAME_HASHES.len() * LOW_BITS as usize).div_ceil(8) + 3];
    let mut i = 0;
    while i < NAME_HASHES.len() {
        let (low, at) = (NAME_HASHES[i] & LOW_MASK, i * LOW_BITS as usize);
        let mut b = 0;
        while b < LOW_BITS as usize {
            out[(at + b) / 8] |= (((low >> b) & 1) as u8) << ((at + b) % 8);
            b += 1;
        }
        i += 1;
    }
    out
};

/// The low bits of the `i`-th hash.
fn low_at(i: usize) -> Option<u32> {
    let at = i * LOW_BITS as usize;
    let word = LOWS.get(at / 8..at / 8 + 4)?;
    Some(u32::from_le_bytes([word[0], word[1], word[2], word[3]]) >> (at % 8) & LOW_MASK)
}

/// Whether `hash` is one of [`NAME_HASHES`]: a walk to its bucket, then a
/// compare of each low part in it (zones are looked up once, when a
/// configuration is checked).
fn has_hash(hash: u32) -> bool {
    let (bucket, low) = ((hash >> LOW_BITS) as usize, hash & LOW_MASK);
    let (mut zeros, mut ones) = (0, 0);
    for bit in BUCKET_BITS.iter().flat_map(|byte| (0..8).map(move |k| byte >> k & 1)) {
        if bit == 0 {
            if zeros == bucket {
                return false;
            }
            zeros += 1;
        } else {
            if zeros == bucket && low_at(ones) == Some(low) {
                return true;
            }
            ones += 1;
        }
    }
    false
}

/// [`fnv1a`] of every chrono-tz name, sorted.
#[rustfmt::skip]
const NAME_HASHES: &[u32] = &[
    0x0082155c, 0x00b18429, 0x00ffa612, 0x0124a15f, 0x01705d3d, 0x0180ba15, 0x0190f190, 0x02176fb4,
    0x03f326c3, 0x044685d6, 0x04ba57f3, 0x04f252bd, 0x051cc24b, 0x05654224, 0x058b4202, 0x05c0aa0f,
    0x07213b7a, 0x0796405c, 0x087b2252, 0x08c2854f, 0x096adc77, 0x0a3d9401, 0x0a730cb6, 0x0ad00ebe,
    0x0bb24bef, 0x0bf3f15f, 0x0cf5bfc1, 0x0d198d72, 0x0d42fc7f, 0x0d6f7a68, 0x0d80f950, 0x0d8ee0be,
    0x0d98d790, 0x0e70bef7, 0x0e7957ef, 0x0e88bec9, 0x0f6163aa, 0x0f910492, 0x105682ad, 0x10a0f02a,
    0x112465b2, 0x126d63b4, 0x1367a775, 0x13ac84ed, 0x13c63993, 0x140a6620, 0x1436f39f, 0x1478d996,
    0x151e5589, 0x151eeb2a, 0x154cc4e3, 0x1573e2d2, 0x16a558f8, 0x16ded075, 0x18228c0c, 0x184e6476,
    0x184f91ea, 0x190bc005, 0x19b04026, 0x1a408790, 0x1a629ffa, 0x1ba19858, 0x1c29c09e, 0x1c2ff935,
    0x1c558b66, 0x1c9e9d88, 0x1d8508e1, 0x1de58719, 0x1e9c706b, 0x2021d904, 0x20cfedd1, 0x211e0a68,
    0x215f0598, 0x22d1cc2e, 0x236cb7c1, 0x23993fd7, 0x23b262fb, 0x244a6c65, 0x24a79c47, 0x24cf1036,
    0x2547d18e, 0x25d5a177, 0x268c9f87, 0x26a51eeb, 0x26c46b64, 0x26d08f98, 0x26f27493, 0x270ed30d,
    0x2743126a, 0x2743670e, 0x2756f85d, 0x277a3b1d, 0x27fa3213, 0x28809bd7, 0x290a0946, 0x29319a30,
    0x29446fe1, 0x299d01c8, 0x2a9396dd, 0x2a9c6f69, 0x2b125bb5, 0x2b2807ee, 0x2b6486e8, 0x2c07183b,
    0x2c17f928, 0x2c198415, 0x2c7894e4, 0x2d6e52ba, 0x2d919b89, 0x2ee66dd1, 0x2f50fb15, 0x30323aad,
    0x30f758ee, 0x310d803d, 0x31134943, 0x31405cd4, 0x31c97a99, 0x3254d54d, 0x32957e52, 0x3310b275,
    0x334a20e9, 0x335e9c26, 0x344abdb0, 0x3469da3a, 0x349483cc, 0x3498ac69, 0x3552a188, 0x35c21c5f,
    0x36106812, 0x36147c3b, 0x36532a60, 0x365363d4, 0x36870b5f, 0x36930a02, 0x36e0e036, 0x37150e50,
    0x37188650, 0x383ff75c, 0x386e7be1, 0x38f99092, 0x394af297, 0x3958e753, 0x39e5c8bd, 0x3a3292e6,
    0x3a606f86, 0x3b037304, 0x3b531e62, 0x3c95ead7, 0x3c9d1242, 0x3d4019c4, 0x3d58a0fb, 0x3dcb75bf,
    0x3e695605, 0x3ea12dc3, 0x3ec3d476, 0x3ee4bb8b, 0x3f4c9ff2, 0x403618a8, 0x40790a56, 0x412b3ea9,
    0x41b4c5ff, 0x41c020d4, 0x4251e7b0, 0x4391107e, 0x4508f384, 0x457781b0, 0x470ca52b, 0x47a1e57e,
    0x47f6d02c, 0x48045a82, 0x48115e29, 0x48394fd1, 0x488f56f8, 0x4c928285, 0x4d386c51, 0x4d661360,
    0x4db2b795, 0x4f17c560, 0x4faf37fe, 0x500da217, 0x5027e362, 0x502fdc87, 0x503dc8b7, 0x505b70c1,
    0x50c17f8d, 0x519b3aa2, 0x52b4e733, 0x53869679, 0x53c1275a, 0x54072282, 0x543d0ef5, 0x546bdfd3,
    0x54cf41cf, 0x54d09e00, 0x55430f33, 0x55d09f93, 0x56c7ec1f, 0x56d0a126, 0x56dfabb0, 0x57d0a2b9,
    0x57dfad43, 0x583c4695, 0x5862eb49, 0x588dc162, 0x58970dd6, 0x58d0a44c, 0x58dfaed6, 0x593a435d,
    0x59bc664f, 0x59d0a5df, 0x59dfb069, 0x5a2fae4a, 0x5ad0a772, 0x5adfb1fc, 0x5b083fbb, 0x5bbd5288,
    0x5bd0a905, 0x5bdfb38f, 0x5c4f25d2, 0x5cc4672b, 0x5cd0efec, 0x5cdfb522, 0x5d1a2684, 0x5ddfb6b5,
    0x5dee8317, 0x5e5b13d2, 0x5eaf0939, 0x5ed0adbe, 0x5edaa64a, 0x5fc126bc, 0x5fd0af51, 0x60554990,
    0x60f9dae1, 0x61b0954f, 0x61db443d, 0x6212f25f, 0x627ed078, 0x62dfbe94, 0x62f59f62, 0x636d5dfc,
    0x63dfc027, 0x63e7d6ca, 0x647b7116, 0x6595d0f9, 0x65f13f8c, 0x668a0926, 0x66b415cd, 0x6706f6bb,
    0x67627258, 0x67afb100, 0x68350638, 0x686893cf, 0x686b615c, 0x69f8711b, 0x6a2ce86e, 0x6a4c2015,
    0x6ad1dfdc, 0x6b20b1f6, 0x6b2f60cd, 0x6c12d442, 0x6ca8e69d, 0x6cad5636, 0x6dcc0f29, 0x6dfa7f8f,
    0x6f433821, 0x7045bc4e, 0x718c28c3, 0x72062516, 0x72e8151f, 0x7339b6f0, 0x7371bceb, 0x737a2397,
    0x73d4ef07, 0x73ea5cb8, 0x75492e6e, 0x75b5030f, 0x75de8761, 0x762c96a8, 0x77346a86, 0x7811eb5b,
    0x7884b118, 0x78fa75a6, 0x792dcbeb, 0x796d7b7f, 0x7ab7ac0f, 0x7ae821b7, 0x7afb85ae, 0x7b00b936,
    0x7b669695, 0x7bc93b1e, 0x7c58b2fb, 0x7ca6fc4b, 0x7d1a9566, 0x7d5acd92, 0x7d6a8987, 0x7d7e04b5,
    0x7e0adc17, 0x7ea12f63, 0x7f23c0b0, 0x7fd5a7f2, 0x8085e070, 0x80a7d409, 0x80d4e247, 0x8111f1ad,
    0x816c86e8, 0x81a0b43c, 0x81a94e85, 0x82d14916, 0x8388b3e4, 0x83d49e3c, 0x8455de0f, 0x84616a89,
    0x8479eb87, 0x84868d5a, 0x864702e9, 0x869e3c80, 0x86ec5aa7, 0x88a6687d, 0x88d2073c, 0x8935717d,
    0x898d16b4, 0x89cc11c8, 0x89e41efb, 0x89fc8fec, 0x8a7a4848, 0x8adb80e4, 0x8adf9cb5, 0x8b9466e7,
    0x8be415da, 0x8c8b2c5f, 0x8c9b2d82, 0x8ceab754, 0x8cf030be, 0x8d527a6a, 0x8e57470c, 0x8e6d072c,
    0x8eeb637e, 0x8fb2e4ff, 0x900a1838, 0x90d1eb28, 0x9179d2a5, 0x92f733ea, 0x92f933a6, 0x93ec809f,
    0x944a76f1, 0x9473f5d3, 0x949d098a, 0x94bab217, 0x960d7242, 0x963b1af7, 0x964f2bbb, 0x9762f31a,
    0x97901e76, 0x97f3c9d7, 0x99387cd4, 0x99a17f62, 0x9a1da2ac, 0x9abef296, 0x9aefb58c, 0x9af27096,
    0x9b30ece3, 0x9c054990, 0x9c3899e6, 0x9d18da0a, 0x9d1a17ce, 0x9d46d8d5, 0x9d521a4b, 0x9dcce782,
    0x9e3ec36d, 0x9fb03810, 0xa0362ea0, 0xa0f29f32, 0xa0f64ffb, 0xa11cbf72, 0xa1b683b3, 0xa1fa1033,
    0xa28f44fb, 0xa30c41b5, 0xa3300aae, 0xa340648e, 0xa3887beb, 0xa3989009, 0xa39f98f1, 0xa414f107,
    0xa448f747, 0xa44c9f73, 0xa48ef8d4, 0xa5a264ab, 0xa5d03082, 0xa6081577, 0xa6cd5f5e, 0xa76d1515,
    0xa793b71d, 0xa81fd8cc, 0xa82aef65, 0xa8dc3202, 0xa8f0fa30, 0xa8f20277, 0xa91c58d7, 0xa941464d,
    0xa9ca929b, 0xa9f332bb, 0xaaea918a, 0xab73e630, 0xab8083a3, 0xabb6332b, 0xac41aaad, 0xad2a9fd1,
    0xad8ae11c, 0xad9886ca, 0xadd6143b, 0xae3e0b5b, 0xb0f63a1d, 0xb1099405, 0xb317bfbf, 0xb3338427,
    0xb36acd21, 0xb38be558, 0xb4038b66, 0xb4fce960, 0xb52adee7, 0xb5393381, 0xb689169e, 0xb7043b25,
    0xb7f9f738, 0xb8ffe55e, 0xba1c3b71, 0xbb3eaae3, 0xbbf13aaf, 0xbc03606d, 0xbc2efba9, 0xbc378380,
    0xbc53c6e0, 0xbcd0a23f, 0xbdd04cad, 0xbdf2f38b, 0xbe181427, 0xbe4a7584, 0xbe6d927c, 0xbe803f4e,
    0xbead98ca, 0xbee32f3c, 0xbefc6c3b, 0xbf09e573, 0xbfd5a989, 0xc01875e7, 0xc04c96bd, 0xc052dfe2,
    0xc06d95a2, 0xc06e567d, 0xc0ca3eb3, 0xc12de811, 0xc16d9735, 0xc385fd1b, 0xc3a4f5c8, 0xc4ee4377,
    0xc586cd85, 0xc606962b, 0xc609fa2a, 0xc64adc6c, 0xc6fa91bf, 0xc7321684, 0xc7452675, 0xc76b4068,
    0xc78ebb26, 0xc87a49e5, 0xc89ec203, 0xc9259ab2, 0xc9855702, 0xc9d160e2, 0xca03b031, 0xca600c69,
    0xca6a4e5b, 0xcae2d7dd, 0xcb528c5a, 0xcb73241d, 0xcbc276b5, 0xcc18acd9, 0xccabacfe, 0xccbaffcc,
    0xcce44d52, 0xcd789167, 0xced865bc, 0xcf31c5a5, 0xcf37f849, 0xcf9a74ce, 0xcfee0be3, 0xd084eaa8,
    0xd0a40347, 0xd0d6464f, 0xd122fdcf, 0xd1303c2c, 0xd15df27b, 0xd16aa440, 0xd1f46bc8, 0xd248042e,
    0xd2596768, 0xd31f79b8, 0xd435f4b1, 0xd45eb960, 0xd4d24271, 0xd5c98f4d, 0xd624ddd8, 0xd6283302,
    0xd69bf6b2, 0xd71823d5, 0xd74b6e0a, 0xd77dee9b, 0xd7a01530, 0xd7a437fb, 0xd7b790f2, 0xd7e1af08,
    0xd88b6524, 0xd8c60798, 0xd8ec8642, 0xd91f8e4a, 0xd9217e23, 0xd97fdd83, 0xda1fb251, 0xda24e424,
    0xda3292a4, 0xda5ab2b2, 0xda64945d, 0xdaadd50c, 0xdabedef4, 0xdaf5d05c, 0xdb24e5b7, 0xdbffe145,
    0xdc24e74a, 0xdc444367, 0xdd18ea92, 0xdd24e8dd, 0xdd92c2b5, 0xdddd4350, 0xdde257d5, 0xde01881f,
    0xde108d60, 0xde842ec1, 0xdf76a985, 0xe0449f9f, 0xe0aa9e5f, 0xe0bb4979, 0xe17d1641, 0xe192c222,
    0xe23de65d, 0xe2d24ace, 0xe325dc7e, 0xe340dd05, 0xe373677f, 0xe44314d9, 0xe4da8899, 0xe5496212,
    0xe5bdb30a, 0xe617ca18, 0xe61883db, 0xe6416b64, 0xe7cd241a, 0xe7d9947f, 0xe8719b01, 0xe87de3cb,
    0xe912db7b, 0xea878251, 0xea8d067c, 0xeb60a919, 0xeb67e208, 0xebc4bae9, 0xebc8b203, 0xebea80d2,
    0xed1ec704, 0xed7cffe6, 0xedc8b11f, 0xee63d499, 0xeebfa085, 0xf10694f7, 0xf114226d, 0xf14df224,
    0xf19101cc, 0xf20ef746, 0xf2388c8c, 0xf31c1afa, 0xf4559c17, 0xf55f9acd, 0xf5e78532, 0xf60b26b3,
    0xf792be2b, 0xf9c2e80a, 0xfa2f94a3, 0xfaaf5187, 0xfbb761d5, 0xfbb7eff7, 0xfd0ed995, 0xfd3ce6a4,
    0xfd50d8c7, 0xfda191b9, 0xfe29c2fa, 0xfe5e128f, 0xff870b5d,
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    #[test]
    fn table_matches_chrono_tz() {
        let mut hashes: Vec<u32> =
            chrono_tz::TZ_VARIANTS.iter().map(|tz| fnv1a(tz.name().as_bytes())).collect();
        hashes.sort_unstable();
        let longest = chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name().len()).max();
        let mut table = String::new();
        for row in hashes.chunks(8) {
            let cells: Vec<String> = row.iter().map(|h| std::format!("0x{h:08x}")).collect();
            table += &std::format!("    {},\n", cells.join(", "));
        }
        assert_eq!(NAME_HASHES, &hashes[..], "regenerate NAME_HASHES:\n{table}");
        assert!(hashes.windows(2).all(|w| w[0] < w[1]), "two zone names share a hash");
        assert_eq!(longest, Some(MAX_NAME_LEN));
    }

    /// The packed table holds exactly the list: every hash, and no other
    /// (those next to each, and a spread of others).
    #[test]
    fn the_packed_table_holds_the_list() {
        for &h in NAME_HASHES {
            for other in [
                h,
                h.wrapping_add(1),
                h.wrapping_sub(1),
                h ^ (1 << 31),
                h ^ (1 << 22),
                h ^ (1 << 21),
            ] {
                assert_eq!(
                    has_hash(other),
                    NAME_HASHES.binary_search(&other).is_ok(),
                    "{other:#x}"
                );
            }
        }
        for other in (0..=u32::MAX).step_by(65_537) {
            assert_eq!(has_hash(other), NAME_HASHES.binary_search(&other).is_ok(), "{other:#x}");
        }
        assert_eq!(LOWS.len(), 1_642 + 3);
        assert_eq!(BUCKET_BITS.len(), 203);
    }

    #[test]
    fn names() {
        assert!(is_iana_zone("Europe/Berlin"));
        assert!(is_iana_zone("America/Argentina/ComodRivadavia"));
        assert!(is_iana_zone("EST5EDT"));
        assert!(!is_iana_zone("europe/berlin"));
        assert!(!is_iana_zone("Mars/Olympus_Mons"));
        assert!(!is_iana_zone(""));
    }
}
