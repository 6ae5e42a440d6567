//! The core's footprint on devices: flash of minimal programs
//! (`tests/footprint`) for the targets a device user picks, and the stack of
//! one decision, measured in QEMU on a Cortex-M3 and on rv32imc. `cargo
//! xtask size` prints both; `cargo xtask test` fails when the decision stack
//! on either is over [`STACK_BUDGET`].

use std::path::PathBuf;

use xtask::boards::{self, Board, STACK_BUDGET};
use xtask::qemu;

/// Targets whose flash `cargo xtask size` reports.
pub const SIZE_TARGETS: &[&str] = &["thumbv7em-none-eabihf", "thumbv6m-none-eabi", "riscv32imc-unknown-none-elf"];
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

/// Flash: code, read-only data and the initial values of `.data` (riscv
/// adds the small-data sections its global pointer reaches).
fn flash(elf: &std::path::Path) -> Result<u64, String> {
    const FLASH: &[&str] = &[".vector_table", ".text", ".rodata", ".data", ".srodata", ".sdata"];
    let sections = qemu::elf_sections(elf)?;
    Ok(sections.iter().filter(|(n, _)| FLASH.contains(&n.as_str())).map(|(_, s)| s).sum())
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

/// Builds the `stack` program for `board`, runs it in QEMU and returns its
/// report and the worst case; fails if a check in it failed.
pub fn measure_stack(board: Board) -> Result<(String, u64), String> {
    let qemu = crate::firmware::ensure_board_qemu(board)?;
    build(board.target(), DST_FILTER, &["stack"], &["stack"])?;
    boards::stack_report(board, &qemu, &board.stack_elf())
}

/// The line `cargo xtask size` prints for `board`: the Cortex-M3's keeps
/// the wording it always had.
fn stack_line(board: Board, worst: u64) -> String {
    match board {
        Board::CortexM3 => format!("decision stack (worst case): {worst} B"),
        _ => format!("decision stack on {} (worst case): {worst} B", board.name()),
    }
}

/// The worst case on every board; with `echo`, each program's report goes
/// to standard error.
fn stacks(echo: bool) -> Result<Vec<(Board, u64)>, String> {
    let mut worst = Vec::new();
    for board in Board::ALL {
        let (report, w) = measure_stack(board)?;
        if echo {
            eprint!("--- the stack program on {} ---\n{report}", board.on());
        }
        worst.push((board, w));
    }
    Ok(worst)
}

/// Fails when a board's worst case is over [`STACK_BUDGET`].
fn within_budget(worst: &[(Board, u64)]) -> Result<(), String> {
    match worst.iter().find(|(_, w)| *w > STACK_BUDGET) {
        Some((board, w)) => Err(format!("the decision stack on {} is {w} B, over its budget of {STACK_BUDGET} B", board.on())),
        None => Ok(()),
    }
}

/// `cargo xtask test`'s check: the decision stack within its budget on
/// both boards.
pub fn check_stack() -> Result<(), String> {
    let worst = stacks(true)?;
    for &(board, w) in &worst {
        eprintln!("{}", stack_line(board, w));
    }
    within_budget(&worst)
}

/// `cargo xtask size`'s footprint table, as Markdown for docs/footprint.md.
pub fn size() -> Result<(), String> {
    crate::ensure_targets()?;
    let table = measure_flash()?;
    let worst = stacks(false)?;
    let cell = |b: u64| format!("{} ({:.1} KiB)", thousands(b), b as f64 / 1024.0);
    println!("core footprint: flash of a minimal program (one `Engine::step`, opt-level z, fat LTO, no `python-floats` unless said)");
    println!();
    println!("| build | {} |", SIZE_TARGETS.join(" | "));
    println!("|---|{}", "---:|".repeat(SIZE_TARGETS.len()));
    for (row, sizes) in ROWS.iter().zip(&table) {
        println!("| {} | {} |", row.0, sizes.iter().map(|&b| cell(b)).collect::<Vec<_>>().join(" | "));
    }
    println!();
    for &(board, w) in &worst {
        println!("{}", stack_line(board, w));
    }
    println!();
    within_budget(&worst)
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
