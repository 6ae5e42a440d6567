//! Build script: compiles in the zone rules past 2099 (`src/zone_rules.rs`)
//! for the zones this build keeps, and warns about a bare-metal build that
//! carries the whole zone database.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

// Shared with tests/tests/tz_final_rules.rs, which checks it against
// chrono-tz-build's own filter.
#[path = "build/zone_filter.rs"]
mod zone_filter;

fn main() {
    zone_rules();
    warn_whole_zone_database();
}

/// chrono-tz's build-time zone filter: the same variable, read the same way.
const FILTER_VAR: &str = "CHRONO_TZ_TIMEZONE_FILTER";

/// Writes `$OUT_DIR/zone_rules.rs`: each kept name with daylight saving past
/// 2099 (sorted, for a binary search) and its final rule, from
/// `tz-final-rules.txt` (derived from chrono-tz's tz source, see
/// `tests/tests/tz_final_rules.rs`).
///
/// When `CHRONO_TZ_TIMEZONE_FILTER` is set, only the names chrono-tz's own
/// filter keeps are written, so a device pays nothing for the zones it left
/// out. Unset, all are.
fn zone_rules() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=tz-final-rules.txt");
    println!("cargo:rerun-if-env-changed={FILTER_VAR}");
    let text = std::fs::read_to_string("tz-final-rules.txt").expect("core/tz-final-rules.txt");
    // (name, rule, link target)
    let entries: Vec<(&str, &str, Option<&str>)> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut cols = l.split_whitespace();
            let name = cols.next().expect("a name");
            let rule =
                cols.next().unwrap_or_else(|| panic!("tz-final-rules.txt: no rule for {name}"));
            (name, rule, cols.next())
        })
        .collect();
    let kept = kept_names(&entries);

    let mut rules: Vec<&str> = Vec::new();
    let mut names = String::new();
    for (name, rule, _) in entries.iter().filter(|e| kept.contains(e.0)) {
        let index = rules.iter().position(|r| r == rule).unwrap_or_else(|| {
            rules.push(rule);
            rules.len() - 1
        });
        writeln!(names, "    ({name:?}, {index}),").unwrap();
    }
    let mut out = String::new();
    writeln!(
        out,
        "/// Names with daylight saving past 2099, sorted, with their rule's index in [`RULES`]."
    )
    .unwrap();
    writeln!(out, "static NAMES: [(&str, u8); {}] = [\n{names}];", kept.len()).unwrap();
    writeln!(out, "/// The distinct final rules of the names in [`NAMES`].").unwrap();
    writeln!(out, "static RULES: [Rule; {}] = [", rules.len()).unwrap();
    for rule in &rules {
        writeln!(out, "    {}, // {rule}", rust_rule(rule)).unwrap();
    }
    writeln!(out, "];").unwrap();
    assert!(rules.len() <= 256, "rule indices are u8");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("zone_rules.rs");
    std::fs::write(dest, out).expect("write zone_rules.rs");
}

/// The names the build keeps: all of them, or those chrono-tz's filter keeps
/// when `CHRONO_TZ_TIMEZONE_FILTER` is set (and not blank, as chrono-tz-build
/// reads it).
fn kept_names<'a>(entries: &[(&'a str, &str, Option<&'a str>)]) -> BTreeSet<&'a str> {
    let names: Vec<(&str, Option<&str>)> = entries.iter().map(|e| (e.0, e.2)).collect();
    match std::env::var(FILTER_VAR).as_deref().map(str::trim) {
        Ok(filter) if !filter.is_empty() => {
            let regex = regex::Regex::new(filter)
                .unwrap_or_else(|e| panic!("{FILTER_VAR}={filter:?} is not a valid regex: {e}"));
            zone_filter::kept_names(&names, &regex)
        }
        _ => names.iter().map(|n| n.0).collect(),
    }
}

/// A POSIX TZ string (`std offset dst [offset],start[/time],end[/time]`,
/// with `Mm.w.d` dates: all tzdata 2025b uses) as a `Rule` expression.
fn rust_rule(tz: &str) -> String {
    let mut s = tz;
    let std_abbr = abbr(&mut s);
    let std_offset = -offset(&mut s).unwrap_or_else(|| panic!("{tz}: no standard offset"));
    let dst_abbr = abbr(&mut s);
    let dst_offset = offset(&mut s).map_or(std_offset + 3600, |o| -o);
    let mut changes = s.strip_prefix(',').unwrap_or_else(|| panic!("{tz}: no rule")).split(',');
    let start = change(changes.next().expect("a start"), tz);
    let end = change(changes.next().unwrap_or_else(|| panic!("{tz}: no end")), tz);
    format!(
        "Rule {{ std_offset: {std_offset}, dst_offset: {dst_offset}, std_abbr: {std_abbr:?}, dst_abbr: {dst_abbr:?}, start: {start}, end: {end} }}"
    )
}

fn abbr<'a>(s: &mut &'a str) -> &'a str {
    let (name, rest) = match s.strip_prefix('<') {
        Some(quoted) => {
            let end = quoted.find('>').expect("a closing '>'");
            (&quoted[..end], &quoted[end + 1..])
        }
        None => s.split_at(s.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(s.len())),
    };
    assert!(!name.is_empty(), "an abbreviation in {s:?}");
    *s = rest;
    name
}

/// `[+-]h[:mm[:ss]]` in seconds, if there is one.
fn offset(s: &mut &str) -> Option<i32> {
    let (sign, rest) = match s.as_bytes().first()? {
        b'-' => (-1, &s[1..]),
        b'+' => (1, &s[1..]),
        b'0'..=b'9' => (1, *s),
        _ => return None,
    };
    let len = rest.find(|c: char| !c.is_ascii_digit() && c != ':').unwrap_or(rest.len());
    let mut secs = 0;
    for (i, part) in rest[..len].split(':').enumerate() {
        secs += part.parse::<i32>().expect("a number") * [3600, 60, 1][i];
    }
    *s = &rest[len..];
    Some(sign * secs)
}

/// `Mm.w.d[/time]` as a `Change` expression.
fn change(spec: &str, tz: &str) -> String {
    let (date, time) = spec.split_once('/').unwrap_or((spec, "2"));
    let fields: Vec<u8> = date
        .strip_prefix('M')
        .unwrap_or_else(|| panic!("{tz}: only Mm.w.d dates are supported"))
        .split('.')
        .map(|f| f.parse().expect("a number"))
        .collect();
    let [month, week, weekday] = fields[..] else { panic!("{tz}: bad date {date}") };
    assert!(
        (1..=12).contains(&month) && (1..=5).contains(&week) && weekday <= 6,
        "{tz}: bad date {date}"
    );
    let time = offset(&mut { time }).unwrap_or_else(|| panic!("{tz}: bad time {time}"));
    format!("Change {{ month: {month}, week: {week}, weekday: {weekday}, time: {time} }}")
}

/// A bare-metal build that carries every chrono-tz zone links about 935 KB
/// of zone data, almost always by mistake: say so, and how to pick zones.
fn warn_whole_zone_database() {
    println!("cargo:rerun-if-env-changed=CHRONO_TZ_TIMEZONE_FILTER");
    let bare_metal = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "none");
    let filtered = std::env::var_os("CARGO_FEATURE_ZONE_FILTER").is_some()
        && std::env::var("CHRONO_TZ_TIMEZONE_FILTER").is_ok_and(|f| !f.is_empty());
    if bare_metal && !filtered {
        println!(
            "cargo:warning=envaware: built for a bare-metal target with the whole zone database (about 935 KB of flash); \
             enable the `zone-filter` feature and set CHRONO_TZ_TIMEZONE_FILTER (e.g. \"^Europe/Berlin$\") under [env] \
             in .cargo/config.toml: see the README's \"Footprint on devices\""
        );
    }
}
