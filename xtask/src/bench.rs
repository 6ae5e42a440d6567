//! `cargo xtask bench`: the core's criterion benchmarks and AgentScope
//! 2.0.11's own `_inject_runtime_state` on the same contexts, in one run,
//! and one table of times and ratios, then argument equality beside
//! Python's (`cargo xtask bench-args`) (shared machines are noisy: compare
//! within a run, never against a fixed number of microseconds).
//!
//! `cargo xtask bench --target`: instructions per decision on the Cortex-M3
//! and on rv32imc under QEMU (see [`target`]).

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
    cmd.args(["bench", "--locked", "-p", "envaware", "--bench", "decide", "--"])
        .env("ENVAWARE_BENCH_CONTEXTS", &contexts);
    if !args.iter().any(|a| a == "--long") {
        cmd.args(["--warm-up-time", "1", "--measurement-time", "3"]);
    }
    run("cargo bench (core)", &mut cmd)?;

    // AgentScope on the contexts the benchmark wrote, right after it.
    let files: Vec<_> =
        LENGTHS.iter().map(|len| contexts.join(format!("context-{len}.json"))).collect();
    eprintln!("==> AgentScope 2.0.11 `_inject_runtime_state` on the same contexts");
    let out = xtask::checked_output(
        "bench_reference.py",
        Command::new(&python)
            .arg(root().join("tests/reference/bench_reference.py"))
            .args(&files)
            .current_dir(root()),
    )?;
    let reference: Vec<(f64, f64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| Some((json_number(l, "messages")?, json_number(l, "ns")?)))
        .collect();

    println!("\nOne decision (nothing to inject), by context length; medians of this run:");
    println!(
        "{:>8}  {:>12}  {:>12}  {:>12}  {:>14}  {:>14}  {:>12}",
        "messages",
        "AgentScope",
        "full scan",
        "tracked",
        "AS/full scan",
        "AS/tracked",
        "tracked/@10"
    );
    let mut at_1000 = None;
    let mut tracked_10 = None;
    for len in LENGTHS {
        let full =
            median_ns(&format!("decide/full_scan/{len}")).ok_or("missing full_scan estimates")?;
        let tracked =
            median_ns(&format!("decide/tracker/{len}")).ok_or("missing tracker estimates")?;
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
    if let Some(key) =
        median_ns("argument_key/100_bytes").or_else(|| median_ns("argument_key_100_bytes"))
    {
        println!("argument_key, one 118-byte argument: {}", us(key));
    }
    let ratio = at_1000.ok_or("no measurement at 1,000 messages")?;
    println!("speedup-vs-agentscope@1000: {ratio:.0}x");
    // Argument equality beside Python in the same run (flat objects, a long
    // string, deep nesting): the decisions' and the arguments' figures
    // then share one machine load.
    crate::bench_args::bench_args(args)
}

pub(crate) mod target {
    //! `cargo xtask bench --target`: builds `tests/bench-target` for each
    //! board and runs it in QEMU with `-icount shift=0`, twice: the two
    //! runs must print the same numbers, and the calibration case must read
    //! its known length (`xtask::boards::bench_cases`).

    use xtask::boards::{self, Board};

    use crate::firmware::ensure_board_qemu;
    use crate::{cargo, ensure_targets, root};

    /// Builds the bench program for `board`, from its directory so that
    /// its `.cargo/config.toml` (linker scripts, zone filter) applies.
    pub fn build(board: Board) -> Result<(), String> {
        let target = board.target();
        eprintln!("==> build tests/bench-target ({target}, release)");
        let status = cargo()
            .args(["build", "--locked", "--release", "--target", target])
            .current_dir(root().join("tests/bench-target"))
            .env("CARGO_TARGET_DIR", root().join("target/bench-target"))
            .status()
            .map_err(|e| format!("cargo build: cannot start: {e}"))?;
        if !status.success() {
            return Err(format!("building tests/bench-target for {target} failed ({status})"));
        }
        Ok(())
    }

    /// For `cargo xtask test`, after its stack check built the `stack`
    /// programs: builds the rv32imc bench program and returns the
    /// environment `tests/tests/rv32imc.rs` reads.
    pub fn prepare_rv32_tests() -> Result<Vec<(&'static str, std::path::PathBuf)>, String> {
        let board = Board::Rv32imc;
        let qemu = ensure_board_qemu(board)?;
        build(board)?;
        Ok(vec![
            (board.qemu().1, qemu),
            ("ENVAWARE_RV32_STACK_ELF", board.stack_elf()),
            ("ENVAWARE_RV32_BENCH_ELF", board.bench_elf()),
        ])
    }

    pub fn bench() -> Result<(), String> {
        ensure_targets()?;
        let mut runs = Vec::new();
        for board in Board::ALL {
            let qemu = ensure_board_qemu(board)?;
            build(board)?;
            runs.push((board, boards::bench_cases(board, &qemu, &board.bench_elf())?));
        }
        for (board, cases) in runs {
            let counter = if board == Board::CortexM3 { "" } else { ", minstret" };
            println!(
                "\nInstructions on {} (QEMU {}, -icount shift=0{counter}; two runs, identical):",
                board.on(),
                board.machine()
            );
            for (name, count) in &cases {
                println!("{count:>10}  {name}");
            }
        }
        Ok(())
    }
}
