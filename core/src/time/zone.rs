//! Zones as Python's `zoneinfo` loads them (`ZoneInfo(name)`, tzdata 2025.2
//! and nothing else on the search path), and the two directions between an
//! instant and a zone's wall clock (`datetime.now(tz)`, and
//! `naive.replace(tzinfo=zone)` with `fold=0`).
//!
//! chrono-tz supplies the zones up to 2099; past it, `zone_rules` applies
//! each zone's final recurring rule, as `zoneinfo` does.

use core::str::FromStr;

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeDelta, TimeZone};
use chrono_tz::{GapInfo, Tz};

use super::zone_rules;
use crate::clock::Timestamp;

/// A resolved time zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    /// Python's `timezone.utc`: the fallback for a name `ZoneInfo` rejects.
    /// It formats `%Z` as `UTC`.
    Utc,
    /// tzdata's `Factory` zone, which chrono-tz lacks: offset 0, `%Z` is `-00`.
    Factory,
    /// A zone from chrono-tz.
    Named(Tz),
}

#[cfg(feature = "defmt")]
impl defmt::Format for Zone {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            Zone::Utc => defmt::write!(f, "Utc"),
            Zone::Factory => defmt::write!(f, "Factory"),
            Zone::Named(tz) => defmt::write!(f, "Named({=str})", tz.name()),
        }
    }
}

impl Zone {
    /// UTC offset (seconds east) at the UTC instant `utc`.
    fn offset_at_utc(self, utc: &NaiveDateTime) -> i32 {
        match self {
            Zone::Utc | Zone::Factory => 0,
            Zone::Named(tz) => match zone_rules::at_utc(tz, utc) {
                Some((offset, _)) => offset,
                None => tz.offset_from_utc_datetime(utc).fix().local_minus_utc(),
            },
        }
    }
}

/// tzdata's package directories (`tzdata.zoneinfo` sub-packages): a name
/// that ends on one of these makes `ZoneInfo` open a directory and crash.
#[rustfmt::skip]
const ROOT_DIRS: &[&str] = &[
    "Africa", "America", "Antarctica", "Arctic", "Asia", "Atlantic", "Australia", "Brazil", "Canada", "Chile", "Etc", "Europe",
    "Indian", "Mexico", "Pacific", "US",
];
/// `America`'s index in [`ROOT_DIRS`].
const AMERICA: usize = 1;
const AMERICA_DIRS: &[&str] = &["Argentina", "Indiana", "Kentucky", "North_Dakota"];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Lookup {
    Found(Zone),
    NotFound,
    /// An IANA zone this build left out (`zone-filter`).
    NotCompiledIn,
    /// `ZoneInfo` raises something other than `ValueError` and the
    /// reference crashes.
    Crash,
}

/// Where a key's package part (before the last `/`) leads in `tzdata.zoneinfo`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Package {
    Root,
    Top(usize),
    America(usize),
    /// A `__pycache__` directory, importable as a namespace package.
    Pycache,
    /// `tzdata.zoneinfo[...].__init__`: a module, not a package.
    InitModule,
}

fn lookup(name: &str) -> Lookup {
    // A NUL byte (`open` raises ValueError), or an empty component or a
    // leading `/` (`os.path.normpath` must keep the key as it is). `.` and
    // `..` are refused below: the package part splits on dots too, and no
    // package has an empty name (so `//` inside is refused there as well).
    // Bytes, not `split`/`contains`: core's searchers cost flash on a
    // device.
    let b = name.as_bytes();
    if b.first().is_none_or(|&c| c == b'/')
        || b.last() == Some(&b'/')
        || crate::text::find_byte(0, b).is_some()
    {
        return Lookup::NotFound;
    }
    let (pkg, last) = match name.rfind('/') {
        Some(i) => (name.get(..i).unwrap_or(""), name.get(i + 1..).unwrap_or("")),
        None => ("", name),
    };
    // `load_tzdata` imports "tzdata.zoneinfo." + the components joined by
    // dots, so `America.Argentina/Salta` works like `America/Argentina/Salta`.
    let mut at = Package::Root;
    if !pkg.is_empty() {
        for piece in pkg.split(['/', '.']) {
            at = match at {
                Package::Root | Package::Top(_) | Package::America(_) if piece == "__init__" => {
                    Package::InitModule
                }
                Package::Root | Package::Top(_) | Package::America(_) if piece == "__pycache__" => {
                    Package::Pycache
                }
                Package::Root => match ROOT_DIRS.iter().position(|d| *d == piece) {
                    Some(i) => Package::Top(i),
                    None => return Lookup::NotFound,
                },
                Package::Top(AMERICA) => match AMERICA_DIRS.iter().position(|d| *d == piece) {
                    Some(i) => Package::America(i),
                    None => return Lookup::NotFound,
                },
                _ => return Lookup::NotFound,
            };
        }
    }
    let subdirs: &[&str] = match at {
        // `importlib.resources.files` of a module raises TypeError.
        Package::InitModule => return Lookup::Crash,
        Package::Root => ROOT_DIRS,
        Package::Top(AMERICA) => AMERICA_DIRS,
        _ => &[],
    };
    // `open` of a name longer than NAME_MAX (OSError) or of a directory
    // (IsADirectoryError): every package has a `__pycache__` but
    // `__pycache__` itself.
    let is_dir = subdirs.contains(&last) || (last == "__pycache__" && at != Package::Pycache);
    if last.len() > 255 || is_dir {
        return Lookup::Crash;
    }
    let dir = match at {
        Package::Root => "",
        Package::Top(i) => ROOT_DIRS.get(i).copied().unwrap_or(""),
        Package::America(i) => AMERICA_DIRS.get(i).copied().unwrap_or(""),
        _ => return Lookup::NotFound,
    };
    let mut buf = [0u8; 64];
    let mut len = 0;
    let parts: [&str; 4] = match at {
        Package::Root => [last, "", "", ""],
        Package::America(_) => ["America/", dir, "/", last],
        _ => [dir, "/", last, ""],
    };
    for part in parts {
        let Some(dst) = buf.get_mut(len..len + part.len()) else {
            return Lookup::NotFound;
        };
        crate::text::copy_bytes(dst, part.as_bytes());
        len += part.len();
    }
    let Some(key) = buf.get(..len).and_then(|b| core::str::from_utf8(b).ok()) else {
        return Lookup::NotFound;
    };
    if key == "Factory" {
        return Lookup::Found(Zone::Factory);
    }
    match Tz::from_str(key) {
        Ok(tz) => Lookup::Found(Zone::Named(tz)),
        Err(_) if crate::time::iana::is_iana_zone(key) => Lookup::NotCompiledIn,
        Err(_) => Lookup::NotFound,
    }
}

/// The zone Python's `ZoneInfo(name)` loads (tzdata 2025.2, nothing else on
/// the search path), or `None` where it raises, and the reference falls
/// back to [`Zone::Utc`].
///
/// Exact and case-sensitive, no whitespace stripped. Accepts the 597
/// chrono-tz names plus `Factory`, and the dotted package spellings
/// `ZoneInfo` also accepts (`America.Argentina/Salta`). Where `ZoneInfo`
/// crashes instead of raising `ValueError` this also returns `None`; see
/// `zone_name_crashes_reference`.
///
/// With chrono-tz's `filter-by-regex` feature, filtered-out zones are `None`.
pub fn resolve_zone(name: &str) -> Option<Zone> {
    match lookup(name) {
        Lookup::Found(zone) => Some(zone),
        _ => None,
    }
}

/// Whether `name` is an IANA zone that this build left out (chrono-tz's
/// `filter-by-regex` with `CHRONO_TZ_TIMEZONE_FILTER`), where
/// [`resolve_zone`] returns `None` although the reference would load it.
pub fn zone_not_compiled_in(name: &str) -> bool {
    lookup(name) == Lookup::NotCompiledIn
}

/// Whether `ZoneInfo(name)` crashes the reference (an exception other than
/// `ValueError`), where [`resolve_zone`] returns `None`: names ending on a
/// tzdata directory (`America`, `Etc`, `America/Argentina`, `__pycache__`),
/// a last component over 255 bytes (`OSError`), or a package part naming
/// `__init__` (`TypeError`).
#[cfg(test)]
pub fn zone_name_crashes_reference(name: &str) -> bool {
    lookup(name) == Lookup::Crash
}

// --- Instants and wall clocks ---------------------------------------------------

/// `at` as a UTC wall clock; `None` outside chrono's range.
pub(super) fn utc_naive(at: Timestamp) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_micros(at.unix_micros()).map(|d| d.naive_utc())
}

/// The wall clock of `zone` at `at`, with microseconds: Python's
/// `datetime.now(tz)` without its `tzinfo`.
///
/// Saturates at chrono's range (about ±262,000 years).
pub fn local_naive(at: Timestamp, zone: Zone) -> NaiveDateTime {
    let Some(utc) = utc_naive(at) else {
        return if at.unix_micros() < 0 { NaiveDateTime::MIN } else { NaiveDateTime::MAX };
    };
    let offset = zone.offset_at_utc(&utc);
    utc.checked_add_signed(TimeDelta::seconds(i64::from(offset))).unwrap_or(utc)
}

/// Names of the zones whose offset never changed (tzdata's `Etc` area and
/// its links), beyond `Etc/*` itself.
const FIXED_LINKS: &[&str] =
    &["UTC", "GMT", "GMT+0", "GMT-0", "GMT0", "Greenwich", "UCT", "Universal", "Zulu"];

/// `zone`'s UTC offset in seconds when it is the same at every instant, so
/// that its wall clock needs no table: UTC, `Factory`, and the zones of
/// tzdata's `Etc` area and their links. `None` for every other zone.
pub fn fixed_offset(zone: Zone) -> Option<i32> {
    match zone {
        Zone::Utc | Zone::Factory => Some(0),
        Zone::Named(tz) => {
            let name = tz.name();
            (name.starts_with("Etc/") || FIXED_LINKS.contains(&name))
                .then(|| zone.offset_at_utc(&DateTime::UNIX_EPOCH.naive_utc()))
        }
    }
}

/// The UTC offset (seconds) `zone` gives the wall time `naive`, as
/// `zoneinfo` does with `fold=0`: an ambiguous time takes the offset before
/// the transition (the earlier instant), a time in a gap the offset in force
/// before the gap.
fn local_offset(naive: &NaiveDateTime, zone: Zone) -> i32 {
    let Zone::Named(tz) = zone else { return 0 };
    if let Some(offset) = zone_rules::offset_for_local(tz, naive) {
        return offset;
    }
    match tz.offset_from_local_datetime(naive) {
        LocalResult::Single(o) | LocalResult::Ambiguous(o, _) => o.fix().local_minus_utc(),
        LocalResult::None => match GapInfo::new(naive, &tz).and_then(|g| g.begin) {
            Some((_, o)) => o.fix().local_minus_utc(),
            None => tz.offset_from_utc_datetime(naive).fix().local_minus_utc(),
        },
    }
}

/// The instant the wall time `naive` denotes in `zone` (`zoneinfo`, `fold=0`:
/// see [`local_naive`] for the inverse). New York 2026-03-08 02:30 (in the
/// gap) is 07:30 UTC; 2026-11-01 01:30 (twice) is 05:30 UTC.
///
/// One known difference up to 2099: `zoneinfo` reads America/Nuuk (and
/// America/Godthab) wall times 2023-10-28 23:00:01–23:59:59 with the rule
/// that follows its transition table (-01) where the table itself, and
/// chrono-tz, say -02.
pub fn local_to_timestamp(naive: NaiveDateTime, zone: Zone) -> Timestamp {
    let offset = i64::from(local_offset(&naive, zone));
    Timestamp(naive.and_utc().timestamp_micros().saturating_sub(offset.saturating_mul(1_000_000)))
}

#[cfg(test)]
mod tests {
    //! Expected values are CPython 3.11's own outputs (tzdata 2025.2,
    //! `LC_TIME=C`, `zoneinfo.reset_tzpath(to=[])`).
    extern crate std;

    use chrono::NaiveDate;

    use super::*;
    use crate::time::parse_time;
    use crate::time::tests::{iso, zone};

    /// Zone, wall time (y, m, d, H, M, S, µs), and Python's Unix µs.
    type LocalCase = (&'static str, (i32, u32, u32, u32, u32, u32, u32), i64);

    #[test]
    fn zone_names_are_resolved_like_zoneinfo() {
        let named = |n: &str| Some(Zone::Named(Tz::from_str(n).unwrap()));
        assert_eq!(resolve_zone("UTC"), named("UTC"));
        assert_eq!(resolve_zone("America/New_York"), named("America/New_York"));
        assert_eq!(resolve_zone("EST5EDT"), named("EST5EDT"));
        assert_eq!(resolve_zone("Factory"), Some(Zone::Factory));
        // The package part may be spelled with dots.
        assert_eq!(resolve_zone("America.Argentina/Salta"), named("America/Argentina/Salta"));
        assert_eq!(resolve_zone("America/Argentina.Salta"), None);
        for bad in [
            "utc",
            " UTC",
            "UTC ",
            "",
            ".",
            "..",
            "../UTC",
            "./UTC",
            "UTC/",
            "America//New_York",
            "/UTC",
            "UTC\0",
            "America.Argentina",
            "America.Argentina.Salta",
            "__init__.py",
            "zone.tab",
            "Foo/x",
            "America..Argentina/Salta",
        ] {
            assert_eq!(resolve_zone(bad), None, "{bad:?}");
            assert!(!zone_name_crashes_reference(bad), "{bad:?}");
        }
        let long_a = "a".repeat(256);
        let long_in_america = std::format!("America/{long_a}");
        let long_in_nowhere = std::format!("Foo/{long_a}");
        for crash in [
            "America",
            "Etc",
            "America/Argentina",
            "America.Argentina/__pycache__",
            "__pycache__",
            "Asia/__pycache__",
            "__init__/UTC",
            "America.__init__/x",
            &long_a,
            &long_in_america,
        ] {
            assert_eq!(resolve_zone(crash), None, "{crash:?}");
            assert!(zone_name_crashes_reference(crash), "{crash:?}");
        }
        assert!(!zone_name_crashes_reference(&"a".repeat(255)));
        assert!(!zone_name_crashes_reference(&long_in_nowhere));
        // A NUL byte is `open`'s ValueError before any length is checked.
        assert!(!zone_name_crashes_reference(&std::format!("{long_a}\0")));
        // A too-long name crashes `open` only once the key is a valid path
        // (Python 3.11, tzdata 2025.2).
        assert!(zone_name_crashes_reference(&std::format!("__pycache__/{long_a}")));
        assert!(zone_name_crashes_reference(&std::format!("Etc/__pycache__/{long_a}")));
        for refused_first in ["../", "./", "a/../", "America/./", "\0", "/"] {
            let name = std::format!("{refused_first}{long_a}");
            assert!(!zone_name_crashes_reference(&name), "{name:?}");
        }
        assert!(!zone_name_crashes_reference("__pycache__/__pycache__"));
        assert!(!zone_name_crashes_reference("__pycache__/x"));
        for tz in chrono_tz::TZ_VARIANTS {
            assert_eq!(resolve_zone(tz.name()), Some(Zone::Named(tz)));
        }
    }

    /// The zones said to keep one offset keep it from year 1 to 9999 (the
    /// years Python holds), and every other zone changed its offset.
    #[test]
    fn fixed_offset_zones_never_change_and_the_others_do() {
        let instants = (-62_135_596_800i64..253_402_300_800).step_by(86_400 * 97 + 3_607).chain([
            0,
            4_102_444_800,
            253_402_214_399,
        ]);
        let mut fixed = 0;
        for tz in chrono_tz::TZ_VARIANTS {
            let zone = Zone::Named(tz);
            let offsets = || {
                instants.clone().map(|s| {
                    zone.offset_at_utc(&utc_naive(Timestamp::from_unix_seconds(s)).unwrap())
                })
            };
            match fixed_offset(zone) {
                Some(offset) => {
                    fixed += 1;
                    assert!(offsets().all(|o| o == offset), "{}", tz.name());
                }
                None => assert!(offsets().any(|o| o != offsets().next().unwrap()), "{}", tz.name()),
            }
        }
        // Etc/GMT, Etc/GMT+1..+12, Etc/GMT-1..-14, and the names of UTC.
        assert!(fixed >= 35, "{fixed}");
        assert_eq!(fixed_offset(zone("Etc/GMT+5")), Some(-5 * 3600));
        assert_eq!(fixed_offset(Zone::Factory), Some(0));
        assert_eq!(fixed_offset(Zone::Utc), Some(0));
    }

    #[test]
    fn local_times_resolve_like_zoneinfo_fold_0() {
        let cases: &[LocalCase] = &[
            ("America/New_York", (2026, 3, 8, 2, 30, 0, 0), 1772955000000000),
            ("America/New_York", (2026, 11, 1, 1, 30, 0, 0), 1793511000000000),
            ("America/New_York", (2026, 11, 1, 2, 30, 0, 0), 1793518200000000),
            ("America/New_York", (2026, 3, 8, 3, 0, 0, 0), 1772953200000000),
            ("America/New_York", (2026, 3, 8, 1, 59, 59, 999999), 1772953199999999),
            ("Europe/London", (2026, 3, 29, 1, 30, 0, 0), 1774747800000000),
            ("Europe/London", (2026, 10, 25, 1, 30, 0, 0), 1792888200000000),
            ("Australia/Lord_Howe", (2026, 4, 5, 1, 45, 0, 0), 1775313900000000),
            ("Australia/Lord_Howe", (2026, 10, 4, 2, 15, 0, 0), 1791042300000000),
            ("Pacific/Apia", (2011, 12, 30, 12, 0, 0, 0), 1325282400000000),
            ("America/Sao_Paulo", (2018, 11, 4, 0, 30, 0, 0), 1541302200000000),
            ("Asia/Kolkata", (1800, 1, 1, 0, 0, 0, 0), -5364683608000000),
            ("Europe/Dublin", (2026, 1, 15, 12, 0, 0, 0), 1768478400000000),
            ("Africa/Casablanca", (2026, 3, 1, 2, 30, 0, 0), 1772332200000000),
            ("America/St_Johns", (2026, 3, 8, 2, 30, 0, 0), 1772949600000000),
            ("Factory", (2026, 1, 1, 0, 0, 0, 0), 1767225600000000),
            ("bogus", (2026, 1, 1, 0, 0, 0, 0), 1767225600000000),
        ];
        for (z, (y, mo, d, h, mi, s, us), want) in cases {
            let naive = NaiveDate::from_ymd_opt(*y, *mo, *d)
                .unwrap()
                .and_hms_micro_opt(*h, *mi, *s, *us)
                .unwrap();
            let at = local_to_timestamp(naive, zone(z));
            assert_eq!(at, Timestamp(*want), "{z} {naive}");
        }
        // The inverse, and a recorded time with its own offset.
        let ny = zone("America/New_York");
        let at = Timestamp(1772955000123456);
        assert_eq!(iso(local_naive(at, ny)), "2026-03-08T03:30:00.123456");
        assert_eq!(local_to_timestamp(local_naive(at, ny), ny), at);
        #[cfg(feature = "custom-time-format")]
        {
            let rec = parse_time("2026-03-08 03:30:00 -0400", "%Y-%m-%d %H:%M:%S %z").unwrap();
            assert_eq!(rec.to_timestamp(Zone::Utc), Timestamp(1772955000000000));
        }
        let rec = parse_time("2026-03-08T02:30:00", "%Y-%m-%dT%H:%M:%S").unwrap();
        assert_eq!(rec.to_timestamp(ny), Timestamp(1772955000000000));
        assert_eq!(local_naive(Timestamp(i64::MAX), ny), NaiveDateTime::MAX);
        assert_eq!(local_naive(Timestamp(i64::MIN), ny), NaiveDateTime::MIN);
    }
}
