//! `cargo xtask bench`: the core's criterion benchmarks and AgentScope
//! 2.0.11's own `_inject_runtime_state` on the same contexts, in one run,
//! and one table of times and ratios, then argument equality beside
//! Python's (`cargo xtask bench-args`) (shared machines are noisy: compare
//! within a run, never against a fixed number of microseconds).
//!
//! `cargo xtask bench --target`: instructions per decision on the Cortex-M3
//! under QEMU (see [`target`]).

use std::path::Path;
use std::process::Command;

use crate::{cargo, ensure_reference_venv, root, run};

/// Context lengths the `decide` benchmark measures.
const LENGTHS: &[u32] = &[10, 100, 1_000, 10_000];

/// The median of one criterion benchmark, in nanoseconds.
pub(crate) fn median_ns(id: &str) -> Option<f64> {
    let path = root().join("target/criterion").join(id).join("new/estimates.json");
    let text = std::fs::read_to_string(Path::new(&path)).ok()?;
    // `"median":{"confidence_interval":{...},"point_estimate":X,...}`
    let median = &text[text.find("\"median\":")?..];
    let value = &median[median.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    value[..value.find([',', '}'])?].parse().ok()
}

/// The number after `"key": ` in one JSON line of `bench_reference.py`.
fn json_number(line: &str, key: &str) -> Option<f64> {
    let pat = format!("\"{key}\": ");
    let rest = &line[line.find(&pat)? + pat.len()..];
    rest[..rest.find([',', '}'])?].trim().parse().ok()
}

/// Formats nanoseconds as microseconds with a sensible precision.
fn us(ns: f64) -> String {
    let us = ns / 1e3;
    if us >= 100.0 {
        format!("{us:.0} µs")
    } else if us >= 1.0 {
        format!("{us:.2} µs")
    } else {
        format!("{us:.3} µs")
    }
}

pub fn bench(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--target") {
        return target::bench();
    }
    let python = ensure_reference_venv()?;
    let contexts = root().join("target/bench-contexts");
    let mut cmd = cargo();
    cmd.args(["bench", "-p", "envaware", "--bench", "decide", "--"]).env("ENVAWARE_BENCH_CONTEXTS", &contexts);
    if !args.iter().any(|a| a == "--long") {
        cmd.args(["--warm-up-time", "1", "--measurement-time", "3"]);
    }
    run("cargo bench (core)", &mut cmd)?;

    // AgentScope on the contexts the benchmark wrote, right after it.
    let files: Vec<_> = LENGTHS.iter().map(|len| contexts.join(format!("context-{len}.json"))).collect();
    eprintln!("==> AgentScope 2.0.11 `_inject_runtime_state` on the same contexts");
    let out = Command::new(&python)
        .arg(root().join("tests/reference/bench_reference.py"))
        .args(&files)
        .current_dir(root())
        .output()
        .map_err(|e| format!("bench_reference.py: cannot start: {e}"))?;
    if !out.status.success() {
        return Err(format!("bench_reference.py failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    let reference: Vec<(f64, f64)> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| Some((json_number(l, "messages")?, json_number(l, "ns")?))).collect();

    println!("\nOne decision (nothing to inject), by context length; medians of this run:");
    println!(
        "{:>8}  {:>12}  {:>12}  {:>12}  {:>14}  {:>14}  {:>12}",
        "messages", "AgentScope", "full scan", "tracked", "AS/full scan", "AS/tracked", "tracked/@10"
    );
    let mut at_1000 = None;
    let mut tracked_10 = None;
    for len in LENGTHS {
        let full = median_ns(&format!("decide/full_scan/{len}")).ok_or("missing full_scan estimates")?;
        let tracked = median_ns(&format!("decide/tracker/{len}")).ok_or("missing tracker estimates")?;
        let agentscope = reference
            .iter()
            .find(|(m, _)| *m == f64::from(*len))
            .map(|(_, ns)| *ns)
            .ok_or(format!("AgentScope gave no time for {len} messages"))?;
        let base = *tracked_10.get_or_insert(tracked);
        println!(
            "{len:>8}  {:>12}  {:>12}  {:>12}  {:>13.0}x  {:>13.0}x  {:>11.2}x",
            us(agentscope),
            us(full),
            us(tracked),
            agentscope / full,
            agentscope / tracked,
            tracked / base
        );
        if *len == 1_000 {
            at_1000 = Some(agentscope / tracked);
        }
    }
    // Criterion names a plain benchmark's folder with `/` replaced by `_`.
    if let Some(key) = median_ns("argument_key/100_bytes").or_else(|| median_ns("argument_key_100_bytes")) {
        println!("argument_key, one 118-byte argument: {}", us(key));
    }
    let ratio = at_1000.ok_or("no measurement at 1,000 messages")?;
    println!("speedup-vs-agentscope@1000: {ratio:.0}x");
    // Argument equality beside Python in the same run (flat objects, a long
    // string, deep nesting): the decisions' and the arguments' figures
    // then share one machine load.
    crate::bench_args::bench_args(args)
}

mod target {
    //! `cargo xtask bench --target`: builds `tests/bench-target` for the
    //! Cortex-M3 and runs it in QEMU with `-icount shift=0` (one virtual
    //! nanosecond per instruction), twice: the two runs must print the
    //! same numbers, and the calibration case must read its known length.

    use std::process::Command;
    use std::time::Duration;

    use crate::firmware::ensure_qemu;
    use crate::{cargo, ensure_targets, root};

    fn crate_dir() -> std::path::PathBuf {
        root().join("tests/bench-target")
    }

    fn elf() -> std::path::PathBuf {
        root().join("target/bench-target/thumbv7m-none-eabi/release/envaware-bench-target")
    }

    fn run_once(qemu: &std::path::Path) -> Result<String, String> {
        let mut child = Command::new(qemu)
            .args(["-machine", xtask::qemu::MACHINE, "-display", "none", "-monitor", "none", "-nodefaults"])
            .args(["-icount", "shift=0", "-semihosting-config", "enable=on,target=native", "-kernel"])
            .arg(elf())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", qemu.display()))?;
        // Bounded: a hung board must not hang the task.
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while child.try_wait().map_err(|e| e.to_string())?.is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                return Err("the target benchmark did not finish within 120 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() || !stdout.lines().any(|l| l == "done") {
            return Err(format!("the target benchmark failed ({}): {stdout}{}", out.status, String::from_utf8_lossy(&out.stderr)));
        }
        Ok(stdout)
    }

    pub fn bench() -> Result<(), String> {
        ensure_targets()?;
        let qemu = ensure_qemu()?;
        // Run from its directory so that its `.cargo/config.toml` applies.
        eprintln!("==> build tests/bench-target (thumbv7m-none-eabi, release)");
        let status = cargo()
            .args(["build", "--release"])
            .current_dir(crate_dir())
            .env("CARGO_TARGET_DIR", root().join("target/bench-target"))
            .status()
            .map_err(|e| format!("cargo build: cannot start: {e}"))?;
        if !status.success() {
            return Err(format!("building tests/bench-target failed ({status})"));
        }
        let first = run_once(&qemu)?;
        let second = run_once(&qemu)?;
        if first != second {
            return Err(format!("two runs differ:\n{first}\n{second}"));
        }
        let mut cases = Vec::new();
        for line in first.lines().filter(|l| *l != "done") {
            let (name, count) = line.rsplit_once(": ").ok_or(format!("unexpected line {line:?}"))?;
            let count: u64 = count.strip_suffix(" instructions").and_then(|n| n.parse().ok()).ok_or(format!("unexpected line {line:?}"))?;
            cases.push((name.to_string(), count));
        }
        let (calibration, known) = cases
            .iter()
            .find_map(|(name, n)| Some((*n, name.strip_prefix("calibration, asm::delay instructions=")?.parse::<u64>().ok()?)))
            .ok_or("no calibration case")?;
        if calibration.abs_diff(known) * 100 > known {
            return Err(format!("calibration: measured {calibration} instructions for a loop of {known}: the scale is off"));
        }
        println!("\nInstructions on the Cortex-M3 (QEMU lm3s6965evb, -icount shift=0; two runs, identical):");
        for (name, count) in &cases {
            println!("{count:>10}  {name}");
        }
        Ok(())
    }
}
