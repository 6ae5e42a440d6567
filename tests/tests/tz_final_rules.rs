//! `core/tz-final-rules.txt` is derived from the IANA source inside
//! chrono-tz's crate: this derives it again and requires the same text.
//!
//! The file holds, for every zone or link name whose rules still change
//! daylight saving time every year (rules running to `max`), the POSIX TZ
//! string `zic` writes in the zone's TZif footer: the rule Python's
//! `zoneinfo` applies after the transition table ends, and that the core
//! applies from 2100, where chrono-tz's tables end. A link carries its
//! target as a third column, for the build-time zone filter. Zones without
//! daylight saving past 2099 are left out: chrono-tz already keeps their
//! last offset, as `zoneinfo` does (checked against Python by the core's
//! `zone_rules` tests).
//!
//! The build compiles in only the names chrono-tz's zone filter keeps:
//! checked here against chrono-tz-build itself.
//!
//! After a chrono-tz update, `ENVAWARE_BLESS=1 cargo test -p envaware-tests
//! --test tz_final_rules` rewrites the file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../core/build/zone_filter.rs"]
mod zone_filter;

use parse_zoneinfo::line::{DaySpec, Line, TimeType, Weekday, Year};
use parse_zoneinfo::table::{Format, RuleInfo, Saving, Table, TableBuilder};

const HEADER: &str = "\
# The final recurring rule of each IANA zone with daylight saving past 2099,
# as the POSIX TZ string of its TZif footer (what Python's zoneinfo applies up
# to year 9999). Derived from chrono-tz's tz/ source by
# tests/tests/tz_final_rules.rs (ENVAWARE_BLESS=1 rewrites it); read by
# core/build.rs. Columns: name, rule, and for a link its target.
";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
        .to_path_buf()
}

/// chrono-tz's `tz/` directory, from the package Cargo resolved.
fn chrono_tz_source() -> PathBuf {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--locked", "--format-version", "1", "--manifest-path"])
        .arg(workspace().join("core/Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let manifest = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "chrono-tz")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("the core depends on chrono-tz");
    Path::new(manifest).parent().expect("manifest in a directory").join("tz")
}

fn read_table(dir: &Path) -> Table {
    let mut builder = TableBuilder::new();
    for file in parse_zoneinfo::FILES {
        let text = std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()));
        for line in text.lines() {
            // As chrono-tz-build reads it: no `#` occurs inside a field.
            let line = line.split('#').next().unwrap_or("");
            builder
                .add_line(Line::new(line).unwrap_or_else(|e| panic!("{line:?}: {e:?}")))
                .expect("a consistent table");
        }
    }
    builder.build()
}

/// `zic`'s `stringoffset`: `[-]h[:mm[:ss]]`.
fn posix_offset(secs: i64) -> String {
    let (sign, a) = if secs < 0 { ("-", -secs) } else { ("", secs) };
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h}"),
        (_, 0) => format!("{sign}{h}:{m:02}"),
        _ => format!("{sign}{h}:{m:02}:{s:02}"),
    }
}

/// A `%z` abbreviation: `+hh`, `+hhmm` or `+hhmmss`.
fn numeric_abbr(utoff: i64) -> String {
    let (sign, a) = if utoff < 0 { ('-', -utoff) } else { ('+', utoff) };
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}{m:02}"),
        _ => format!("{sign}{h:02}{m:02}{s:02}"),
    }
}

/// `zic`'s `doabbr`, quoted as a TZ string needs it.
fn abbr(format: &Format, save: i64, letters: Option<&String>, utoff: i64) -> String {
    let text = match format {
        Format::Alternate { standard, dst } => if save == 0 { standard } else { dst }.clone(),
        Format::Placeholder(s) => s.replace("%s", letters.map_or("", |l| l.as_str())),
        Format::Constant(s) => s.clone(),
    };
    let text = text.replace("%z", &numeric_abbr(utoff));
    if text.chars().all(|c| c.is_ascii_alphabetic()) {
        text
    } else {
        format!("<{text}>")
    }
}

fn weekday(w: Weekday) -> i64 {
    match w {
        Weekday::Sunday => 0,
        Weekday::Monday => 1,
        Weekday::Tuesday => 2,
        Weekday::Wednesday => 3,
        Weekday::Thursday => 4,
        Weekday::Friday => 5,
        Weekday::Saturday => 6,
    }
}

/// `zic`'s `stringrule`: `Mm.w.d[/time]`, the time in the wall clock of
/// the offset in force before the change.
fn posix_rule(rule: &RuleInfo, dst_save: i64, stdoff: i64) -> String {
    let month = rule.month as i64;
    let mut tod = rule.time;
    let (week, mut wday) = match rule.day {
        DaySpec::Last(w) => (5, weekday(w)),
        DaySpec::FirstOnOrAfter(w, day) => {
            let shift = (i64::from(day) - 1) % 7;
            tod += shift * 86_400;
            (1 + (i64::from(day) - 1) / 7, weekday(w) - shift)
        }
        DaySpec::LastOnOrBefore(w, day) => {
            let len = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month as usize - 1];
            if i64::from(day) == len {
                (5, weekday(w))
            } else {
                // Weekday `shift` days earlier in week `day / 7`, `shift` days later.
                let shift = i64::from(day) % 7;
                tod += shift * 86_400;
                (i64::from(day) / 7, weekday(w) - shift)
            }
        }
        DaySpec::Ordinal(_) => {
            panic!("a day-of-month rule running to max: not in tzdata 2025b, not supported")
        }
    };
    if wday < 0 {
        wday += 7;
    }
    let is_dst = rule.time_to_add != 0;
    if rule.time_type == TimeType::UTC {
        tod += stdoff;
    }
    if matches!(rule.time_type, TimeType::UTC | TimeType::Standard) && !is_dst {
        tod += dst_save;
    }
    let mut out = format!("M{month}.{week}.{wday}");
    if tod != 7200 {
        write!(out, "/{}", posix_offset(tod)).unwrap();
    }
    out
}

/// The zone's TZ string when its last line follows two rules running to
/// `max`, one of them with daylight saving; `None` for a fixed offset.
fn final_rule(table: &Table, zone: &str) -> Option<String> {
    let info = table.zonesets[zone].last().expect("a zone has lines");
    let Saving::Multiple(rules) = &info.saving else { return None };
    let max: Vec<&RuleInfo> =
        table.rulesets[rules].iter().filter(|r| r.to_year == Some(Year::Maximum)).collect();
    let dst = max.iter().find(|r| r.time_to_add != 0)?;
    let std = max.iter().find(|r| r.time_to_add == 0)?;
    assert_eq!(max.len(), 2, "{zone}: two rules running to max");
    let stdoff = info.offset;
    let dstoff = stdoff + dst.time_to_add;
    let mut out = abbr(&info.format, 0, std.letters.as_ref(), stdoff);
    out += &posix_offset(-stdoff);
    out += &abbr(&info.format, dst.time_to_add, dst.letters.as_ref(), dstoff);
    if dst.time_to_add != 3600 {
        out += &posix_offset(-dstoff);
    }
    write!(
        out,
        ",{},{}",
        posix_rule(dst, dst.time_to_add, stdoff),
        posix_rule(std, dst.time_to_add, stdoff)
    )
    .unwrap();
    Some(out)
}

fn derive(table: &Table) -> String {
    let mut lines: BTreeMap<&str, String> = BTreeMap::new();
    for zone in table.zonesets.keys() {
        if let Some(rule) = final_rule(table, zone) {
            lines.insert(zone, rule);
        }
    }
    for (link, target) in &table.links {
        if let Some(rule) = final_rule(table, target) {
            lines.insert(link, format!("{rule} {target}"));
        }
    }
    let mut out = HEADER.to_string();
    for (name, rule) in lines {
        writeln!(out, "{name} {rule}").unwrap();
    }
    out
}

#[test]
fn the_committed_final_rules_are_derived_from_chrono_tzs_source() {
    let derived = derive(&read_table(&chrono_tz_source()));
    let path = workspace().join("core/tz-final-rules.txt");
    if std::env::var_os("ENVAWARE_BLESS").is_some() {
        std::fs::write(&path, &derived).expect("write core/tz-final-rules.txt");
    }
    let committed = std::fs::read_to_string(&path).expect("core/tz-final-rules.txt");
    assert!(
        derived == committed,
        "core/tz-final-rules.txt is stale: rerun with ENVAWARE_BLESS=1 and review the diff"
    );
    // The rules the differential cases lean on, as their TZif footers read.
    for line in [
        "America/New_York EST5EDT,M3.2.0,M11.1.0",
        "Europe/Dublin IST-1GMT0,M10.5.0,M3.5.0/1",
        "Antarctica/Troll <+00>0<+02>-2,M3.5.0/1,M10.5.0/3",
        "America/Santiago <-04>4<-03>,M9.1.6/24,M4.1.6/24",
        "Asia/Jerusalem IST-2IDT,M3.4.4/26,M10.5.0",
        "Africa/Cairo EET-2EEST,M4.5.5/0,M10.5.4/24",
        "Australia/Lord_Howe <+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
        "US/Eastern EST5EDT,M3.2.0,M11.1.0 America/New_York",
    ] {
        assert!(committed.lines().any(|l| l == line), "missing: {line}");
    }
}

/// The names chrono-tz-build keeps for `filter`, read from the code it writes.
fn chrono_tz_kept(filter: &str, tz_crate: &Path, out: &Path) -> Vec<String> {
    std::fs::create_dir_all(out).unwrap();
    // chrono-tz-build reads the tz source under CARGO_MANIFEST_DIR and the
    // filter from the environment, as chrono-tz's build script runs it.
    std::env::set_var("CARGO_MANIFEST_DIR", tz_crate);
    std::env::set_var("CHRONO_TZ_TIMEZONE_FILTER", filter);
    chrono_tz_build::main(out, true, false);
    let code = std::fs::read_to_string(out.join("timezones.rs")).unwrap();
    let entry = regex::Regex::new(r#"^ *\("([^"]+)", Tz::"#).unwrap();
    code.lines().filter_map(|l| Some(entry.captures(l)?[1].to_string())).collect()
}

#[test]
fn the_build_keeps_the_names_chrono_tzs_filter_keeps() {
    let committed = std::fs::read_to_string(workspace().join("core/tz-final-rules.txt")).unwrap();
    let names: Vec<(&str, Option<&str>)> = committed
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols[0], cols.get(2).copied())
        })
        .collect();
    let tz_crate = chrono_tz_source().parent().unwrap().to_path_buf();
    let out = std::env::temp_dir().join(format!("envaware-zone-filter-{}", std::process::id()));
    for filter in [
        "^Europe/Berlin$",
        "^America/Indiana/Knox$",
        "^(US/Eastern|Asia/Tokyo)$",
        "^America/Panama$",
        "Europe/",
        "^Australia/(Sydney|LHI)$",
        "^(GB|Eire|Israel|Chile/Continental)$",
        "Troll|Cairo|Santiago|Godthab",
    ] {
        let regex = regex::Regex::new(filter).unwrap();
        let ours: Vec<&str> = zone_filter::kept_names(&names, &regex).into_iter().collect();
        let mut theirs: Vec<String> = chrono_tz_kept(filter, &tz_crate, &out)
            .into_iter()
            .filter(|n| names.iter().any(|(m, _)| m == n))
            .collect();
        theirs.sort();
        assert_eq!(ours, theirs, "names with daylight saving kept for {filter:?}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
