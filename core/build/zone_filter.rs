//! chrono-tz-build 0.5's `filter_timezone_table`, over the names of
//! `tz-final-rules.txt`: the names the regex matches, closed over links both
//! ways, plus the zones under a kept three-part name's two-part prefix
//! (`America/Indiana`). Only names with daylight saving are listed there, and
//! a link joins two names with the same rule, so this closure is the closure
//! over the whole table restricted to them.

use std::collections::BTreeSet;

/// The names kept out of `names` (each with its link target, if a link).
pub fn kept_names<'a>(
    names: &[(&'a str, Option<&'a str>)],
    regex: &regex::Regex,
) -> BTreeSet<&'a str> {
    let links: Vec<(&str, &str)> =
        names.iter().filter_map(|&(link, target)| Some((link, target?))).collect();
    let mut keep: BTreeSet<String> = BTreeSet::new();
    let insert = |keep: &mut BTreeSet<String>, name: &str| {
        let parts: Vec<&str> = name.split('/').collect();
        if let [a, b, _] = parts[..] {
            keep.insert(format!("{a}/{b}"));
        }
        keep.insert(name.to_string());
    };
    for (link, target) in &links {
        for name in [link, target] {
            if regex.is_match(name) {
                insert(&mut keep, name);
            }
        }
    }
    loop {
        let before = keep.len();
        for (link, target) in &links {
            if keep.contains(*link) && !keep.contains(*target) {
                insert(&mut keep, target);
            }
            if keep.contains(*target) && !keep.contains(*link) {
                insert(&mut keep, link);
            }
        }
        if keep.len() == before {
            break;
        }
    }
    names
        .iter()
        .filter(|(name, target)| match target {
            Some(target) => keep.contains(*name) || keep.contains(*target),
            None => regex.is_match(name) || keep.iter().any(|k| name.starts_with(k.as_str())),
        })
        .map(|n| n.0)
        .collect()
}
