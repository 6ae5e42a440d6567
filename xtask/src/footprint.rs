//! The core's footprint on devices: flash of minimal programs
//! (`tests/footprint`) for the targets a device user picks, and the stack of
//! one decision, measured in QEMU. `cargo xtask size` prints both; `cargo
//! xtask test` fails when the decision stack is over [`STACK_BUDGET`].

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use xtask::qemu;

/// Targets whose flash `cargo xtask size` reports.
pub const SIZE_TARGETS: &[&str] = &["thumbv7em-none-eabihf", "thumbv6m-none-eabi"];
/// Where the stack is measured: the QEMU board's Cortex-M3.
pub const STACK_TARGET: &str = "thumbv7m-none-eabi";
/// The decision stack's budget, in bytes: the 2 KiB goal. What takes the
/// stack is in docs/footprint.md.
pub const STACK_BUDGET: u64 = 2048;
/// The one zone with daylight saving the programs keep.
const DST_FILTER: &str = "^Europe/Berlin$";
/// Keeps no zone beyond UTC and `Etc/*`, which chrono-tz always keeps.
const UTC_FILTER: &str = "^UTC$";

fn manifest() -> PathBuf {
    crate::root().join("tests/footprint/Cargo.toml")
}

/// One target dir for every footprint build, so dependencies build once.
fn target_dir() -> PathBuf {
    crate::root().join("target/footprint")
}

fn elf(target: &str, bin: &str) -> PathBuf {
    target_dir().join(target).join("release").join(bin)
}

fn build(target: &str, filter: &str, features: &[&str], bins: &[&str]) -> Result<(), String> {
    let mut cmd = crate::cargo();
    cmd.args(["build", "--quiet", "--release", "--target", target, "--manifest-path"])
        .arg(manifest())
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CHRONO_TZ_TIMEZONE_FILTER", filter);
    for feature in features {
        cmd.args(["--features", feature]);
    }
    for bin in bins {
        cmd.args(["--bin", bin]);
    }
    crate::run(&format!("build {} for {target} (zones {filter:?}, features {features:?})", bins.join(", ")), &mut cmd)
}

/// Flash: code, read-only data and the initial values of `.data`.
fn flash(elf: &std::path::Path) -> Result<u64, String> {
    let sections = qemu::elf_sections(elf)?;
    Ok(sections.iter().filter(|(n, _)| [".vector_table", ".text", ".rodata", ".data"].contains(&n.as_str())).map(|(_, s)| s).sum())
}

/// The rows of the table: label, zone filter, features, program.
const ROWS: &[(&str, &str, &[&str], &str)] = &[
    ("UTC only", UTC_FILTER, &[], "utc"),
    ("one DST zone (Europe/Berlin)", DST_FILTER, &[], "dst"),
    ("one DST zone + JSON configuration", DST_FILTER, &[], "dst-json"),
    ("one DST zone + JSON configuration + `python-floats`", DST_FILTER, &["python-floats"], "dst-json"),
];

/// Builds the programs (grouped so that each zone filter builds chrono-tz
/// once per target) and returns the flash of each row, per target.
fn measure_flash() -> Result<Vec<Vec<u64>>, String> {
    let mut table = vec![vec![0; SIZE_TARGETS.len()]; ROWS.len()];
    for (t, target) in SIZE_TARGETS.iter().enumerate() {
        // Filter changes rebuild chrono-tz: DST rows first, UTC last.
        for (filter, features) in [(DST_FILTER, &[][..]), (DST_FILTER, &["python-floats"][..]), (UTC_FILTER, &[][..])] {
            let rows: Vec<usize> = (0..ROWS.len()).filter(|&r| ROWS[r].1 == filter && ROWS[r].2 == features).collect();
            let bins: Vec<&str> = rows.iter().map(|&r| ROWS[r].3).collect();
            build(target, filter, features, &bins)?;
            for r in rows {
                table[r][t] = flash(&elf(target, ROWS[r].3))?;
            }
        }
    }
    Ok(table)
}

/// Builds the `stack` program, runs it in QEMU and returns its report and
/// the worst case; fails if a check in it failed.
pub fn measure_stack() -> Result<(String, u64), String> {
    let qemu = crate::firmware::ensure_qemu()?;
    build(STACK_TARGET, DST_FILTER, &["stack"], &["stack"])?;
    let mut cmd = Command::new(qemu);
    cmd.args(["-machine", qemu::MACHINE, "-nographic", "-monitor", "none", "-serial", "none"])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(elf(STACK_TARGET, "stack"));
    let out = run_bounded(&mut cmd, Duration::from_secs(60))?;
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!("the stack program failed ({})\n{report}", out.status));
    }
    let worst = report
        .lines()
        .find_map(|l| l.strip_prefix("decision stack (worst case): ")?.strip_suffix(" B")?.parse().ok())
        .ok_or_else(|| format!("the stack program printed no worst case\n{report}"))?;
    Ok((report, worst))
}

/// Runs `cmd` to completion, killing it after `timeout`.
fn run_bounded(cmd: &mut Command, timeout: Duration) -> Result<std::process::Output, String> {
    use std::process::Stdio;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().map_err(|e| format!("QEMU: cannot start: {e}"))?;
    let started = std::time::Instant::now();
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the stack program did not finish in {timeout:?}"));
        }
        // Polling a child QEMU, not waiting for the guest to catch up.
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().map_err(|e| e.to_string())
}

/// `cargo xtask test`'s check: the decision stack within its budget.
pub fn check_stack() -> Result<(), String> {
    let (report, worst) = measure_stack()?;
    eprint!("{report}");
    if worst > STACK_BUDGET {
        return Err(format!("the decision stack is {worst} B, over its budget of {STACK_BUDGET} B"));
    }
    Ok(())
}

/// `cargo xtask size`'s footprint table, as Markdown for docs/footprint.md.
pub fn size() -> Result<(), String> {
    let table = measure_flash()?;
    let (_, worst) = measure_stack()?;
    let cell = |b: u64| format!("{} ({:.1} KiB)", thousands(b), b as f64 / 1024.0);
    println!("core footprint: flash of a minimal program (one `Engine::step`, opt-level z, fat LTO, no `python-floats` unless said)");
    println!();
    println!("| build | {} |", SIZE_TARGETS.join(" | "));
    println!("|---|{}", "---:|".repeat(SIZE_TARGETS.len()));
    for (row, sizes) in ROWS.iter().zip(&table) {
        println!("| {} | {} |", row.0, sizes.iter().map(|&b| cell(b)).collect::<Vec<_>>().join(" | "));
    }
    println!();
    println!("decision stack (worst case): {worst} B");
    println!();
    if worst > STACK_BUDGET {
        return Err(format!("the decision stack is {worst} B, over its budget of {STACK_BUDGET} B"));
    }
    Ok(())
}

/// `84984` as `84,984`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
