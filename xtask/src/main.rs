//! `cargo xtask`: the project's own tasks, in Rust rather than shell.
//!
//! - `cargo xtask test`: installs what the tests need (rustup targets, a
//!   Python virtual environment with AgentScope 2.0.11), then runs clippy,
//!   the cross-target no_std checks, and every test.
//! - `cargo xtask demo [--temperatures 21.5,30,-4.25]`: builds the firmware
//!   and runs it in QEMU with an emulated TMP105 whose temperature changes
//!   at each step; `--host` runs the host demo (`examples/demo.jsonl`) and
//!   draws the greenhouse session's timeline.
//! - `cargo xtask size`: the core's footprint on devices (flash of minimal
//!   programs, the worst-case stack of one decision on a Cortex-M3 and on
//!   rv32imc; see [`footprint`]), then
//!   the firmware's flash and RAM (peak stack measured) against its budget.
//! - `cargo xtask bench-args`: argument equality in MB/s beside the
//!   reference's `json.dumps(json.loads(raw), sort_keys=True)`.
//! - `cargo xtask fuzz [--minutes N]`: runs the cargo-fuzz targets for a
//!   chosen time, keeping the corpus they grow, then the sim's property
//!   tests with many cases (see [`fuzz`]).
//! - `cargo xtask nopanic [--link] [--demo-panic]`: proves no panic is
//!   reachable in the core (see `nopanic.rs`); part of `test`.
//! - `cargo xtask mutants [ARGS]`: `cargo mutants` over the core's unit
//!   tests, then the mutation score (see `mutants.rs`).
//! - `cargo xtask layers [--edges] [DIR]`: the core's modules form no cycle and
//!   import no name from the crate root (see `layers.rs`); part of `test`.
//! - `cargo xtask phoenix [--minutes N]`: Arize Phoenix from the test venv
//!   on 127.0.0.1 for N minutes (default 30), to watch `cargo xtask demo
//!   --otlp URL` or `envaware-sim export` in (docs/otel.md).
//! - `cargo xtask broker [--seconds N] [--persistence]`: the fleet's MQTT
//!   broker (Mosquitto, installed when missing) in the foreground on a free
//!   port of 127.0.0.1, for manual use (see [`xtask::mqtt`]).
//! - `cargo xtask fleet --devices N --steps S [--faults] [--step-ms MS] [--flush-secs SECS]`:
//!   the QEMU board and N−1 simulated devices publish to Mosquitto, the
//!   fleet consumer stores their steps, the store is checked; with
//!   `--faults` the broker restarts, the board resets and the consumer is
//!   killed mid-run (see [`xtask::fleet`]).
#![forbid(unsafe_code)]
#![deny(
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    rustdoc::broken_intra_doc_links
)]

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

mod bench;
mod bench_args;
mod demo_args;
mod firmware;
mod footprint;
mod layers;
mod mutants;
mod nopanic;
mod wear;

/// Targets the core must build for with no allocator.
const THUMB_TARGETS: &[&str] = &[
    "thumbv7m-none-eabi",
    "thumbv7em-none-eabihf",
    "thumbv6m-none-eabi",
    "thumbv8m.main-none-eabihf",
    "riscv32imc-unknown-none-elf",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn cargo() -> Command {
    Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Runs a command, echoing it; fails with its name on a non-zero exit.
fn run(what: &str, cmd: &mut Command) -> Result<(), String> {
    eprintln!("==> {what}");
    let started = Instant::now();
    let status =
        cmd.current_dir(root()).status().map_err(|e| format!("{what}: cannot start: {e}"))?;
    eprintln!("    ({what}: {:.1}s)", started.elapsed().as_secs_f64());
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ensure_targets() -> Result<(), String> {
    let installed =
        output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    let missing: Vec<&str> = THUMB_TARGETS
        .iter()
        .copied()
        .filter(|t| !installed.lines().any(|l| l.trim() == *t))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    run("rustup target add", Command::new("rustup").arg("target").arg("add").args(&missing))
}

/// The reference's virtual environment, created on first use. A stamp
/// holding the requirements text skips the install when nothing changed.
fn ensure_reference_venv() -> Result<PathBuf, String> {
    let venv = root().join(".venv");
    let python = venv.join("bin/python");
    if xtask::needs::venv_ready(&venv) {
        return Ok(python);
    }
    let requirements = xtask::needs::requirements();
    let wanted = std::fs::read_to_string(&requirements)
        .map_err(|e| format!("{}: {e}", requirements.display()))?;
    let system_python = ["python3", "python"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok_and(|o| o.status.success()))
        .ok_or(
            "no python3 found: install Python 3.11 or newer (apt-get install python3 python3-venv)",
        )?;
    run("create the reference venv", Command::new(system_python).args(["-m", "venv"]).arg(&venv))?;
    run(
        "install AgentScope 2.0.11 and Arize Phoenix into .venv",
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
    )?;
    xtask::needs::stamp_venv(&venv, &wanted)?;
    Ok(python)
}

/// `cargo test ARGS` where no check may skip (see `xtask::needs`).
fn cargo_test(args: &[&str]) -> Command {
    let mut cmd = cargo();
    cmd.args(["test", "--locked"]).args(args).env(xtask::needs::REQUIRE_VAR, "1");
    cmd
}

fn test() -> Result<(), String> {
    ensure_targets()?;
    let python = ensure_reference_venv()?;
    run("cargo fmt --check", cargo().args(["fmt", "--all", "--check"]))?;
    eprintln!("==> the core's module layers (cargo xtask layers)");
    layers::layers(&[])?;
    run(
        "cargo clippy",
        cargo().args([
            "clippy",
            "--locked",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    run(
        "cargo clippy (core, defmt)",
        cargo().args([
            "clippy",
            "--locked",
            "-p",
            "envaware",
            "--features",
            "defmt",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    for target in THUMB_TARGETS {
        run(
            &format!("build the core for {target}"),
            cargo().args(["build", "--locked", "-p", "envaware", "--target", target]),
        )?;
    }
    run(
        "build the core with the request writer (openai) for thumbv7m-none-eabi",
        cargo().args([
            "build",
            "--locked",
            "-p",
            "envaware",
            "--features",
            "openai,journal",
            "--target",
            THUMB_TARGETS[0],
        ]),
    )?;
    run(
        "build the core with defmt for thumbv7m-none-eabi",
        cargo().args([
            "build",
            "--locked",
            "-p",
            "envaware",
            "--features",
            "defmt",
            "--target",
            THUMB_TARGETS[0],
        ]),
    )?;
    run(
        "cargo doc (core, warnings denied)",
        cargo()
            .args(["doc", "--locked", "-p", "envaware", "--no-deps"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    run(
        "cargo doc (core with defmt, wire, journal and openai, warnings denied)",
        cargo()
            .args([
                "doc",
                "--locked",
                "-p",
                "envaware",
                "--no-deps",
                "--features",
                "defmt,wire,journal,openai",
            ])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    run(
        "the async sensor example (checks its own outcomes)",
        cargo().args(["run", "--locked", "-q", "-p", "envaware", "--example", "async_sensor"]),
    )?;
    run(
        "the agent loop example: JSON configuration, a live sensor, AgentScope JSON out (checks its own outcomes)",
        cargo().args(["run", "--locked", "-q", "-p", "envaware", "--example", "agent_loop", "--features", "wire"]),
    )?;
    run(
        "the noisy sensor example: read once per step, the reading that fired is the one told (checks its own outcomes)",
        cargo().args(["run", "--locked", "-q", "-p", "envaware", "--example", "noisy_sensor"]),
    )?;
    run(
        "the noisy floor example: min_interval holds back the changes sooner than it (checks its own outcomes)",
        cargo().args(["run", "--locked", "-q", "-p", "envaware", "--example", "noisy_floor"]),
    )?;
    let log = env::temp_dir().join(format!("envaware-greenhouse-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    for run_number in ["first", "second (restores the first)"] {
        run(
            &format!("the host greenhouse example, {run_number} run: a Session in a FileLog (checks that the file restores it)"),
            cargo()
                .args(["run", "--locked", "-q", "-p", "envaware-host", "--example", "greenhouse", "--"])
                .arg(&log),
        )?;
    }
    let _ = std::fs::remove_file(&log);
    run(
        "cargo publish --dry-run -p envaware",
        cargo().args(["publish", "--locked", "--dry-run", "--allow-dirty", "-p", "envaware"]),
    )?;
    run(
        "link the core into a thumbv7m binary with no allocator",
        cargo()
            .args([
                "build",
                "--locked",
                "--release",
                "--target",
                "thumbv7m-none-eabi",
                "--manifest-path",
            ])
            .arg(root().join("tests/nostd-check/Cargo.toml"))
            .env("CARGO_TARGET_DIR", root().join("target/nostd-check")),
    )?;
    // The bare-metal example as a device project builds it: its own
    // .cargo/config.toml (target, link.x, the zone filter), read here with
    // --config since cargo reads that file from the directory it runs in.
    run(
        "build the bare-metal example for thumbv7em-none-eabihf (memory.x, the release profile, the zone filter)",
        cargo()
            .arg("--config")
            .arg(root().join("examples/bare-metal/.cargo/config.toml"))
            .args(["build", "--locked", "--release", "--manifest-path"])
            .arg(root().join("examples/bare-metal/Cargo.toml"))
            .env("CARGO_TARGET_DIR", root().join("target/bare-metal")),
    )?;
    nopanic::nopanic(&[])?;
    // The fuzz targets run only under `cargo xtask fuzz` (nightly); checking
    // that they compile keeps a core API change from breaking them unseen.
    run(
        "check the cargo-fuzz targets compile",
        cargo()
            .args(["check", "--locked", "--bins", "--workspace", "--manifest-path"])
            .arg(root().join("fuzz/Cargo.toml"))
            .env("CARGO_TARGET_DIR", root().join("target/fuzz-check")),
    )?;
    check_msrv()?;
    footprint::check_stack()?;
    // The workspace run below tests the core with its default features; it
    // also runs as the firmware builds it: floats by the exact-decimal path.
    run(
        "core unit tests with the firmware's features (no python-floats, no custom-time-format)",
        &mut cargo_test(&[
            "-p",
            "envaware",
            "--lib",
            "--no-default-features",
            "--features",
            "wire,journal,zone-filter",
        ]),
    )?;
    run("build envaware-sim", cargo().args(["build", "--locked", "-p", "envaware-sim"]))?;
    chat_example()?;
    // The timeline test opens the SVG in a real browser.
    let chromium = firmware::ensure_apt_tool(
        env::var_os("ENVAWARE_CHROMIUM").map_or_else(|| "chromium".into(), PathBuf::from),
        "chromium",
        &["--no-install-recommends"],
    )?;
    // The fleet tests run a real broker.
    let mosquitto = xtask::mqtt::ensure()?;
    firmware::host_tests()?;
    let firmware_env = firmware::prepare_tests()?;
    let rv32_env = bench::target::prepare_rv32_tests()?;
    run_tests(
        cargo_test(&["--workspace"])
            .env("ENVAWARE_REF_PYTHON", &python)
            .env("ENVAWARE_SIM", root().join("target/debug/envaware-sim"))
            .env("ENVAWARE_CHROMIUM", chromium)
            .env(xtask::mqtt::PROGRAM_VAR, mosquitto)
            .envs(firmware_env)
            .envs(rv32_env),
    )
}

/// The workspace's `rust-version`: the oldest Rust the whole dependency
/// graph builds with.
fn msrv() -> Result<String, String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml"))
        .map_err(|e| format!("Cargo.toml: {e}"))?;
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \"")?.strip_suffix('"'))
        .map(str::to_string)
        .ok_or_else(|| "Cargo.toml has no workspace rust-version".into())
}

/// Checks the core with the toolchain `rust-version` names (installed with
/// rustup when missing), for the host and a device target, with the
/// committed Cargo.lock.
fn check_msrv() -> Result<(), String> {
    let msrv = msrv()?;
    let toolchains = output(Command::new("rustup").args(["toolchain", "list"])).unwrap_or_default();
    if !toolchains.lines().any(|l| l.starts_with(&format!("{msrv}-"))) {
        run(
            &format!("rustup toolchain install {msrv}"),
            Command::new("rustup").args(["toolchain", "install", &msrv, "--profile", "minimal"]),
        )?;
    }
    let device = THUMB_TARGETS[1];
    let installed = output(Command::new("rustup").args([
        "target",
        "list",
        "--installed",
        "--toolchain",
        &msrv,
    ]))
    .unwrap_or_default();
    if !installed.lines().any(|l| l.trim() == device) {
        run(
            &format!("rustup target add {device} (Rust {msrv})"),
            Command::new("rustup").args(["target", "add", device, "--toolchain", &msrv]),
        )?;
    }
    for target in [None, Some(device)] {
        // `cargo +VERSION` through rustup's proxy, with its own target dir.
        let mut cmd = Command::new("cargo");
        cmd.arg(format!("+{msrv}"))
            .args(["check", "--locked", "-p", "envaware"])
            .env("CARGO_TARGET_DIR", root().join("target/msrv"));
        if let Some(t) = target {
            cmd.args(["--target", t]);
        }
        run(
            &format!(
                "check the core with Rust {msrv} (rust-version) for {}",
                target.unwrap_or("the host")
            ),
            &mut cmd,
        )?;
    }
    Ok(())
}

/// Runs `cargo test`, passing its output through, and closes with one
/// total over all its test binaries (cargo's own last line is often a
/// doc-test run of a crate with no doc tests).
fn run_tests(cmd: &mut Command) -> Result<(), String> {
    use std::io::{BufRead, BufReader};
    eprintln!("==> cargo test");
    let mut child = cmd
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cargo test: cannot start: {e}"))?;
    let (mut passed, mut failed) = (0u64, 0u64);
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("{line}");
            if let Some(rest) = line.strip_prefix("test result: ") {
                passed += count_before(rest, " passed");
                failed += count_before(rest, " failed");
            }
        }
    }
    let status = child.wait().map_err(|e| format!("cargo test: {e}"))?;
    println!("tests: {passed} passed, {failed} failed");
    if status.success() && passed > 0 {
        Ok(())
    } else {
        Err(format!("cargo test failed ({status}, {passed} passed)"))
    }
}

/// The number just before `label` in a `test result:` line.
fn count_before(line: &str, label: &str) -> u64 {
    line.find(label)
        .and_then(|end| line[..end].rsplit([' ', ';']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn host_demo() -> Result<(), String> {
    run(
        "build envaware-sim",
        cargo().args(["build", "--locked", "--quiet", "-p", "envaware-sim"]),
    )?;
    let scenarios = root().join("examples/demo.jsonl");
    run(
        "envaware-sim eval examples/demo.jsonl",
        Command::new(root().join("target/debug/envaware-sim")).arg("eval").arg(scenarios),
    )?;
    timeline(
        &root().join("examples/greenhouse.trace.jsonl"),
        &root().join("target/demo/greenhouse-timeline.svg"),
    )
}

/// Draws the timeline of a replay trace (or an AgentScope dump) with the
/// built `envaware-sim replay --plot`, and says where it is.
pub(crate) fn timeline(trace: &Path, svg: &Path) -> Result<(), String> {
    if let Some(dir) = svg.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    xtask::checked_output(
        &format!("envaware-sim replay {} --plot", trace.display()),
        Command::new(root().join("target/debug/envaware-sim"))
            .arg("replay")
            .arg(trace)
            .arg("--plot")
            .arg(svg),
    )?;
    println!(
        "the session's timeline: {} (open it in a browser; hover a mark for its hint)",
        svg.display()
    );
    Ok(())
}

/// The cargo-fuzz targets (`fuzz/fuzz_targets/*.rs`).
const FUZZ_TARGETS: &[&str] = &["args", "config", "engine"];

/// Whether a command runs and exits 0 (its output is discarded).
fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `cargo +nightly ...` through rustup's proxy (not `$CARGO`, which is
/// the toolchain xtask itself runs on).
fn nightly_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly");
    cmd
}

/// Installs the nightly toolchain and cargo-fuzz when missing.
fn ensure_cargo_fuzz() -> Result<(), String> {
    let toolchains = output(Command::new("rustup").args(["toolchain", "list"])).unwrap_or_default();
    if !toolchains.lines().any(|l| l.starts_with("nightly")) {
        run(
            "rustup toolchain install nightly",
            Command::new("rustup").args([
                "toolchain",
                "install",
                "nightly",
                "--profile",
                "minimal",
            ]),
        )?;
    }
    if !succeeds(nightly_cargo().args(["fuzz", "--version"])) {
        run(
            "cargo install --locked cargo-fuzz",
            Command::new("cargo").args(["install", "--locked", "cargo-fuzz"]),
        )?;
    }
    Ok(())
}

/// `cargo xtask fuzz [--minutes N | --time SECONDS] [--cases N] [TARGET...]`:
/// runs each cargo-fuzz target (libFuzzer, nightly) for the chosen time,
/// growing its corpus in `fuzz/corpus/<target>/` (git-ignored except the
/// committed `seed-*` files) and going on past a crash (fork mode), then
/// the property tests of `envaware-sim fuzz` with many cases. Fails at the
/// end if any target saved a new crash under `fuzz/artifacts/<target>/`.
fn fuzz(args: &[String]) -> Result<(), String> {
    let (mut seconds, mut cases, mut targets) = (60u64, 20_000u64, Vec::new());
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut number = |what: &str| {
            it.next().and_then(|v| v.parse().ok()).ok_or(format!("{what} needs a number"))
        };
        match arg.as_str() {
            "--time" => seconds = number("--time")?,
            "--minutes" => seconds = number("--minutes")? * 60,
            "--cases" => cases = number("--cases")?,
            t if FUZZ_TARGETS.contains(&t) => targets.push(t),
            other => {
                return Err(format!(
                    "unknown fuzz argument {other:?} (targets: {})",
                    FUZZ_TARGETS.join(", ")
                ))
            }
        }
    }
    if targets.is_empty() {
        targets = FUZZ_TARGETS.to_vec();
    }
    ensure_cargo_fuzz()?;
    // cargo-fuzz has no `--locked` (rust-fuzz/cargo-fuzz#312): the lock
    // file is checked to be current first, so that its build keeps it.
    run(
        "fuzz/Cargo.lock is current",
        cargo()
            .args(["metadata", "--locked", "--format-version", "1", "--manifest-path"])
            .arg(root().join("fuzz/Cargo.toml"))
            .stdout(std::process::Stdio::null()),
    )?;
    let artifacts = |target: &str| -> Vec<PathBuf> {
        let dir = root().join("fuzz/artifacts").join(target);
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        found.sort();
        found
    };
    let mut crashes = Vec::new();
    for target in &targets {
        let before = artifacts(target);
        let corpus = root().join("fuzz/corpus").join(target);
        let corpus_before = std::fs::read_dir(&corpus).map(Iterator::count).unwrap_or(0);
        // Fork mode with crashes ignored: a crash is saved and the run goes on.
        let status = nightly_cargo()
            .args([
                "fuzz",
                "run",
                target,
                "--",
                &format!("-max_total_time={seconds}"),
                "-timeout=10",
                "-rss_limit_mb=2048",
            ])
            .args([
                "-fork=1",
                "-ignore_crashes=1",
                "-ignore_timeouts=1",
                "-ignore_ooms=1",
                "-print_final_stats=1",
            ])
            .current_dir(root())
            .status()
            .map_err(|e| format!("cargo fuzz run {target}: {e}"))?;
        let corpus_after = std::fs::read_dir(&corpus).map(Iterator::count).unwrap_or(0);
        eprintln!("==> {target}: {seconds} s, corpus {corpus_before} -> {corpus_after} files (kept in {})", corpus.display());
        let new: Vec<PathBuf> =
            artifacts(target).into_iter().filter(|a| !before.contains(a)).collect();
        if !status.success() && new.is_empty() {
            return Err(format!("cargo fuzz run {target} failed ({status})"));
        }
        crashes.extend(new);
    }
    run(
        "build envaware-sim",
        cargo().args(["build", "--locked", "--release", "-p", "envaware-sim"]),
    )?;
    let sim = root().join("target/release/envaware-sim");
    run(
        &format!("envaware-sim fuzz --cases {cases}"),
        Command::new(&sim).args(["fuzz", "--cases", &cases.to_string()]),
    )?;
    if crashes.is_empty() {
        Ok(())
    } else {
        let list: Vec<String> = crashes.iter().map(|c| c.display().to_string()).collect();
        Err(format!(
            "new crashes (replay with `cargo +nightly fuzz run <target> <file>`):\n  {}",
            list.join("\n  ")
        ))
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    // Its figures' line must be the last it prints: it reports itself.
    if args.first().map(String::as_str) == Some("fleet") {
        return fleet(&args[1..]);
    }
    let result = match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("demo") if args.iter().any(|a| a == "--host") => host_demo(),
        Some("demo") => firmware::demo(&args[1..]),
        Some("size") => footprint::size().and_then(|()| firmware::size()),
        Some("bench") => bench::bench(&args[1..]),
        Some("bench-args") => bench_args::bench_args(&args[1..]),
        Some("fuzz") => fuzz(&args[1..]),
        Some("nopanic") => nopanic::nopanic(&args[1..]),
        Some("mutants") => mutants::mutants(&args[1..]),
        Some("layers") => layers::layers(&args[1..]),
        Some("wear") => wear::wear(),
        Some("phoenix") => phoenix(&args[1..]),
        Some("broker") => broker(&args[1..]),
        Some("chat") => run("build envaware-sim", cargo().args(["build", "--locked", "-p", "envaware-sim"]))
            .and_then(|()| chat_example()),
        _ => Err("usage: cargo xtask <test|chat|demo [--temperatures 21.5,30,-4.25] [--environment 7:33|none] [--reset-after N] [--otlp URL] [--stream] [--host]|size|bench [--long|--target]|bench-args|fuzz|nopanic [--link] [--demo-panic]|mutants [CARGO-MUTANTS ARGS]|layers [--edges] [DIR]|wear|phoenix [--minutes N]|broker [--seconds N] [--persistence]|fleet --devices N --steps S [--faults] [--step-ms MS] [--flush-secs SECS]>".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask phoenix [--minutes N]`: Phoenix on a free port of
/// 127.0.0.1 (its data under `target/phoenix`), until N minutes have
/// passed (default 30) or the task is stopped.
fn phoenix(args: &[String]) -> Result<(), String> {
    let minutes = match args {
        [] => 30,
        [flag, n] if flag == "--minutes" => n
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=24 * 60).contains(n))
            .ok_or_else(|| format!("--minutes {n}: expected 1 to 1440"))?,
        _ => return Err("usage: cargo xtask phoenix [--minutes N]".into()),
    };
    let python = ensure_reference_venv()?;
    eprintln!(
        "==> start Arize Phoenix {} (127.0.0.1 only, no telemetry)",
        xtask::otel::PHOENIX_VERSION
    );
    let phoenix = xtask::otel::Phoenix::start(
        &python,
        &root().join("target/phoenix"),
        std::time::Duration::from_secs(120),
    )?;
    let url = phoenix.url();
    println!("Phoenix: {url} (the UI, and OTLP over HTTP at {url}/v1/traces)");
    println!("  cargo xtask demo --otlp {url}");
    println!(
        "  cargo run -q -p envaware-sim -- export --otlp {url} examples/greenhouse.trace.jsonl"
    );
    println!("stops in {minutes} minutes (or stop this task)");
    std::thread::sleep(std::time::Duration::from_secs(minutes * 60));
    drop(phoenix);
    Ok(())
}

/// The host chat example against the scripted model server: two requests
/// (a tool call, then the answer), each checked in the server's log.
fn chat_example() -> Result<(), String> {
    let log = root().join("target/chat-requests.jsonl");
    let server = xtask::model::ModelServer::start(
        &root().join("target/debug/envaware-sim"),
        &root().join("examples/chat.script.jsonl"),
        &log,
        2,
        30,
    )?;
    let endpoint = format!("http://127.0.0.1:{}/v1", server.port);
    run(
        "the host chat example against the scripted model server (a tool call, then the answer)",
        cargo()
            .args(["run", "--locked", "-q", "-p", "envaware-host", "--example", "chat", "--"])
            .args(["--endpoint", &endpoint, "--model", "scripted"]),
    )?;
    server.stop();
    let text = std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let requests = xtask::model::json_lines(&text)?;
    let messages =
        |n: usize| requests.get(n).and_then(|r| r["request"]["messages"].as_array().cloned());
    let (Some(first), Some(second)) = (messages(0), messages(1)) else {
        return Err(format!("the model server logged {} requests, not 2", requests.len()));
    };
    // The first request carries the step's hint as a user message with no
    // name; the second, the call and its result after it.
    let hint = first.last().filter(|m| m["role"] == "user" && m.get("name").is_none());
    let result = second.last().filter(|m| m["role"] == "tool" && m["content"] == "23.5 °C");
    if hint.is_none() || result.is_none() || second.len() != first.len() + 2 {
        return Err(format!("the chat example's requests are not as expected: {text}"));
    }
    println!("the chat example's 2 requests: the hint, then the tool call and its result");
    Ok(())
}

/// `cargo xtask fleet --devices N --steps S [--faults] [--step-ms MS] [--flush-secs SECS]`:
/// builds what it runs (the firmware, the sim in release), then
/// [`xtask::fleet::run`] under `target/fleet-run/`; prints the figures, what
/// is not as expected, and last the fleet line. Exit 1 when a figure is
/// off, 2 when the run could not be made.
fn fleet(args: &[String]) -> ExitCode {
    const USAGE: &str = "usage: cargo xtask fleet --devices N (1..=1000) --steps S (1..=100000) [--faults] [--step-ms MS] [--flush-secs SECS]";
    let (mut devices, mut steps, mut faults, mut step_ms) =
        (None, None, false, xtask::fleet::DEFAULT_STEP_MS);
    let mut flush_secs = xtask::fleet::DEFAULT_FLUSH_SECS;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut number = |range: std::ops::RangeInclusive<u64>| {
            rest.next().and_then(|n| n.parse::<u64>().ok()).filter(|n| range.contains(n))
        };
        let ok = match arg.as_str() {
            "--devices" => number(1..=1000).map(|n| devices = Some(n as usize)),
            "--steps" => number(1..=100_000).map(|n| steps = Some(n as usize)),
            "--step-ms" => number(0..=60_000).map(|n| step_ms = n),
            "--flush-secs" => rest
                .next()
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|n| (0.01..=600.0).contains(n))
                .map(|n| flush_secs = n),
            "--faults" => {
                faults = true;
                Some(())
            }
            _ => None,
        };
        if ok.is_none() {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    }
    let (Some(devices), Some(steps)) = (devices, steps) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let prepared = (|| -> Result<xtask::fleet::Options, String> {
        let mosquitto = xtask::mqtt::ensure()?;
        let qemu = firmware::ensure_qemu()?;
        let defmt_print = firmware::ensure_defmt_print()?;
        firmware::build(false)?;
        run(
            "build envaware-sim (release)",
            cargo().args(["build", "--locked", "--release", "-p", "envaware-sim"]),
        )?;
        let mut options = xtask::fleet::Options::new(
            devices,
            steps,
            faults,
            qemu,
            defmt_print,
            firmware::elf(),
            mosquitto,
            root().join("target/release/envaware-sim"),
            root(),
            root().join("target/fleet-run"),
        );
        options.step_ms = step_ms;
        options.flush_secs = flush_secs;
        // DuckDB (the test venv's) counts the store and answers docs/fleet.sql.
        options.python = Some(ensure_reference_venv()?);
        Ok(options)
    })();
    let report = match prepared.and_then(|o| xtask::fleet::run(&o)) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("xtask fleet: {e}");
            return ExitCode::from(2);
        }
    };
    for line in &report.lines {
        println!("{line}");
    }
    for problem in &report.problems {
        println!("fleet: NOT AS EXPECTED: {problem}");
    }
    println!("{}", report.last_line());
    match report.problems.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}

/// `cargo xtask broker`: Mosquitto in the foreground on a free port of
/// 127.0.0.1 (its configuration, log and persistence in `target/mqtt/broker`),
/// until Ctrl-C or `--seconds` (600 by default) have passed.
fn broker(args: &[String]) -> Result<(), String> {
    const USAGE: &str = "usage: cargo xtask broker [--seconds N (1..=86400)] [--persistence]";
    let mut seconds = 600u64;
    let mut options = xtask::mqtt::Options::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--seconds" => {
                seconds = rest
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=86_400).contains(n))
                    .ok_or(USAGE)?
            }
            "--persistence" => options.persistence = true,
            _ => return Err(USAGE.into()),
        }
    }
    let program = xtask::mqtt::ensure()?;
    let dir = root().join("target/mqtt/broker");
    let broker = xtask::mqtt::Broker::start(&program, &dir, &options)?;
    println!(
        "mosquitto {} listening on {} (configuration {}, log {}); stops after {seconds} s or on Ctrl-C",
        xtask::mqtt::version(&program).unwrap_or_default(),
        broker.address(),
        broker.config_file().display(),
        broker.log_file().display()
    );
    println!(
        "consume: envaware-sim fleet --broker {} --store target/fleet-store --idle-exit 60",
        broker.address()
    );
    // Ctrl-C reaches the broker too (the terminal's process group): it exits.
    std::thread::sleep(std::time::Duration::from_secs(seconds));
    broker.stop()
}
