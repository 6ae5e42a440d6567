//! Differential test: `envaware-sim eval` against AgentScope 2.0.11's own
//! `Agent._inject_runtime_state`, on thousands of generated scenarios.
//!
//! `tests/reference/gen_scenarios.py` writes the scenarios (fixed seed),
//! `tests/reference/reference.py` runs the real reference on each, and the
//! sim runs the core on the same file. For every line both accept, the hint
//! text and the event flag must be identical byte for byte. A line the
//! reference accepts and envaware rejects must be a known, documented
//! difference (see [`KNOWN_DIFFERENCES`]). Lines where the reference itself
//! crashes are skipped and counted.
//!
//! Needs a Python with `agentscope==2.0.11` and `tzdata==2025.2`
//! (`tests/reference/requirements.txt`): `ENVAWARE_REF_PYTHON`, else
//! `<workspace>/.venv/bin/python`; `cargo xtask test` creates that venv. The
//! sim binary comes from `ENVAWARE_SIM`, else `<target>/debug/envaware-sim`.
//! Without either, a plain `cargo test` skips this check (`xtask::needs`).
//! `ENVAWARE_DIFF_CASES` sets the number of scenarios (default 6000),
//! `ENVAWARE_DIFF_SEED` the seed. On failure the failing scenarios are
//! written to `tests/out/mismatches.jsonl`, ready to feed to either tool.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::Command;

use serde_json::Value;
use xtask::needs;

const DEFAULT_SEED: u64 = 20_260_722;
const DEFAULT_CASES: usize = 6000;
/// Compared lines required for the default count; scaled for other counts.
const MIN_COMPARED_AT_DEFAULT: usize = 5000;
/// How many differences to print in full.
const SHOWN: usize = 5;

/// A configuration AgentScope accepts and envaware rejects on purpose: a
/// name (as in docs/differences.md's table), and whether a scenario and envaware's
/// error message match it.
struct KnownDifference {
    name: &'static str,
    matches: fn(scenario: &Value, sim_error: &str) -> bool,
}

const KNOWN_DIFFERENCES: &[KnownDifference] = &[KnownDifference {
    name: "time_format without a date part",
    matches: time_format_without_date,
}];

/// A `time_format` that carries no date: AgentScope re-injects the time at
/// every step, since the parsed time falls back to 1900-01-01.
fn time_format_without_date(scenario: &Value, sim_error: &str) -> bool {
    let Some(format) = scenario.pointer("/injection_config/time_format").and_then(Value::as_str)
    else {
        return false;
    };
    // Directives that set the year (or the whole date) when parsed.
    let has_date = ["%Y", "%y", "%G", "%c", "%x", "%D", "%F"].iter().any(|d| format.contains(d));
    !has_date && sim_error.contains("time_format")
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// Runs a command and returns its standard output; panics with its standard
/// error when it cannot start or (unless `any_status`) exits non-zero.
fn run(what: &str, cmd: &mut Command, any_status: bool) -> (String, bool) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    if !any_status && !out.status.success() {
        panic!("{what} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    let stdout = String::from_utf8(out.stdout)
        .unwrap_or_else(|e| panic!("{what}: output is not UTF-8: {e}"));
    (stdout, out.status.success())
}

fn parse_results(what: &str, text: &str) -> Vec<Value> {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{what}: line {}: not JSON ({e}): {l}", i + 1))
        })
        .collect()
}

/// What one side said about a scenario.
enum Outcome<'a> {
    Hint { hint: Option<&'a str>, event: bool },
    Error(&'a str),
    Crash(&'a str),
}

fn outcome<'a>(what: &str, line: usize, v: &'a Value) -> Outcome<'a> {
    if let Some(e) = v.get("error") {
        return Outcome::Error(e.as_str().unwrap_or(""));
    }
    if let Some(c) = v.get("crash") {
        return Outcome::Crash(c.as_str().unwrap_or(""));
    }
    let hint = match v.get("hint") {
        Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        _ => panic!("{what}: line {line}: no hint/error/crash: {v}"),
    };
    let event = v
        .get("event")
        .and_then(Value::as_bool)
        .unwrap_or_else(|| panic!("{what}: line {line}: no event flag: {v}"));
    Outcome::Hint { hint, event }
}

/// Where two texts first differ, with some context around it.
fn first_difference(a: &str, b: &str) -> String {
    let at = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    let from = a[..at].char_indices().rev().nth(40).map_or(0, |(i, _)| i);
    let show = |s: &str| {
        let tail: String = s[from.min(s.len())..].chars().take(100).collect();
        format!("{tail:?}")
    };
    format!(
        "first difference at byte {at}:\n      reference: …{}\n      envaware:  …{}",
        show(a),
        show(b)
    )
}

fn label(scenario: &Value) -> String {
    let field = |k: &str| scenario.get(k).and_then(Value::as_str).unwrap_or("-").to_string();
    format!("{} / {}", field("_focus"), field("_case"))
}

#[test]
fn envaware_matches_agentscope_2_0_11() {
    let root = needs::workspace();
    let Some(python) = needs::or_skip(needs::reference_python()) else { return };
    let Some(sim) = needs::or_skip(needs::sim_binary()) else { return };
    let cases: usize = env_number("ENVAWARE_DIFF_CASES", DEFAULT_CASES);
    let seed: u64 = env_number("ENVAWARE_DIFF_SEED", DEFAULT_SEED);
    let min_compared = cases * MIN_COMPARED_AT_DEFAULT / DEFAULT_CASES;

    let out_dir = root.join("tests/out");
    std::fs::create_dir_all(&out_dir).expect("create tests/out");
    let scenarios_path = out_dir.join("scenarios.jsonl");
    let mismatches_path = out_dir.join("mismatches.jsonl");
    let _ = std::fs::remove_file(&mismatches_path);

    let refdir = root.join("tests/reference");
    run(
        "gen_scenarios.py",
        Command::new(&python)
            .arg(refdir.join("gen_scenarios.py"))
            .args(["--seed", &seed.to_string(), "--count", &cases.to_string(), "--out"])
            .arg(&scenarios_path),
        false,
    );
    let (reference_out, _) = run(
        "reference.py",
        Command::new(&python).arg(refdir.join("reference.py")).arg(&scenarios_path),
        false,
    );
    let (sim_out, sim_ok) =
        run("envaware-sim eval", Command::new(&sim).arg("eval").arg(&scenarios_path), true);

    let text = std::fs::read_to_string(&scenarios_path).expect("read the scenarios");
    // Both tools skip blank lines.
    let lines: Vec<&str> = text.split('\n').filter(|l| !l.trim().is_empty()).collect();
    let scenarios: Vec<Value> =
        lines.iter().map(|l| serde_json::from_str(l).unwrap_or(Value::Null)).collect();
    let reference = parse_results("reference.py", &reference_out);
    let simulated = parse_results("envaware-sim", &sim_out);
    assert_eq!(
        reference.len(),
        lines.len(),
        "reference.py wrote {} lines for {} scenarios",
        reference.len(),
        lines.len()
    );
    assert_eq!(
        simulated.len(),
        lines.len(),
        "envaware-sim wrote {} lines for {} scenarios",
        simulated.len(),
        lines.len()
    );

    let mut compared = 0usize;
    let mut hints = 0usize;
    let mut crashes = 0usize;
    let mut strict = 0usize;
    let mut both_rejected = 0usize;
    let mut only_reference_rejected = 0usize;
    let mut known: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures: Vec<(usize, String)> = Vec::new();
    let mut sim_errors = 0usize;

    for (i, ((scenario, r), s)) in scenarios.iter().zip(&reference).zip(&simulated).enumerate() {
        let n = i + 1;
        let r = outcome("reference.py", n, r);
        let s = outcome("envaware-sim", n, s);
        if matches!(s, Outcome::Error(_)) {
            sim_errors += 1;
        }
        if let Outcome::Crash(c) = s {
            failures.push((i, format!("envaware-sim reported a crash: {c}")));
            continue;
        }
        // envaware's own spoof-proof mode differs from the reference on purpose.
        if scenario.pointer("/injection_config/strict").and_then(Value::as_bool) == Some(true) {
            strict += 1;
            continue;
        }
        match (r, s) {
            (Outcome::Crash(_), _) => crashes += 1,
            (Outcome::Error(_), Outcome::Error(_)) => both_rejected += 1,
            (Outcome::Error(_), Outcome::Hint { .. }) => only_reference_rejected += 1,
            (Outcome::Hint { .. }, Outcome::Error(e)) => {
                match KNOWN_DIFFERENCES.iter().find(|k| (k.matches)(scenario, e)) {
                    Some(k) => *known.entry(k.name).or_default() += 1,
                    None => failures
                        .push((i, format!("the reference accepts it, envaware rejects it: {e}"))),
                }
            }
            (Outcome::Hint { hint: rh, event: re }, Outcome::Hint { hint: sh, event: se }) => {
                compared += 1;
                hints += usize::from(rh.is_some());
                if rh != sh {
                    let detail = match (rh, sh) {
                        (Some(a), Some(b)) => first_difference(a, b),
                        (a, b) => format!("reference hint: {a:?}\n      envaware hint:  {b:?}"),
                    };
                    failures.push((i, format!("hints differ, {detail}")));
                } else if re != se {
                    failures
                        .push((i, format!("event flags differ: reference {re}, envaware {se}")));
                }
            }
            (_, Outcome::Crash(_)) => unreachable!("handled above"),
        }
    }

    let mut summary = String::new();
    let _ = writeln!(summary, "differential test, seed {seed}, {} scenarios:", lines.len());
    let _ =
        writeln!(summary, "  compared (both accepted): {compared}, of which with a hint: {hints}");
    let _ = writeln!(summary, "  rejected by both: {both_rejected}");
    let _ = writeln!(
        summary,
        "  rejected by the reference only (envaware more lenient): {only_reference_rejected}"
    );
    for (name, count) in &known {
        let _ = writeln!(summary, "  known difference, rejected by envaware only: {name}: {count}");
    }
    let _ = writeln!(summary, "  reference crashed (skipped): {crashes}");
    if strict > 0 {
        let _ = writeln!(summary, "  strict mode (skipped): {strict}");
    }
    let _ = writeln!(summary, "  failures: {}", failures.len());
    eprint!("{summary}");

    if !failures.is_empty() {
        let mut file = String::new();
        for (i, _) in &failures {
            file.push_str(lines[*i]);
            file.push('\n');
        }
        std::fs::write(&mismatches_path, file).expect("write tests/out/mismatches.jsonl");
        let mut by_label: BTreeMap<String, usize> = BTreeMap::new();
        for (i, _) in &failures {
            *by_label.entry(label(&scenarios[*i])).or_default() += 1;
        }
        let mut report = summary.clone();
        let _ = writeln!(report, "failures by generator focus / case:");
        for (l, c) in &by_label {
            let _ = writeln!(report, "  {c:5}  {l}");
        }
        for (i, why) in failures.iter().take(SHOWN) {
            let _ =
                writeln!(report, "\nscenario line {} ({}): {why}", i + 1, label(&scenarios[*i]));
            let shown: String = lines[*i].chars().take(600).collect();
            let _ = writeln!(report, "    {shown}");
        }
        let _ = writeln!(
            report,
            "\nthe {} failing scenarios are in {}; rerun either side on it:\n  \
             {} tests/reference/reference.py {}\n  {} eval {}",
            failures.len(),
            mismatches_path.display(),
            python.display(),
            mismatches_path.display(),
            sim.display(),
            mismatches_path.display()
        );
        panic!("{report}");
    }

    // The sim's exit status says whether any line was invalid.
    assert_eq!(
        sim_ok,
        sim_errors == 0,
        "envaware-sim's exit status ({sim_ok}) disagrees with its {sim_errors} error lines"
    );
    assert!(
        compared >= min_compared,
        "only {compared} lines compared, expected at least {min_compared}\n{summary}"
    );
}
