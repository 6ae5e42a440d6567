//! The core's footprint on devices: flash of minimal programs
//! (`tests/footprint`) for the targets a device user picks, and the stack of
//! one decision, measured in QEMU on a Cortex-M3 and on rv32imc. `cargo
//! xtask size` prints both; `cargo xtask test` fails when the decision stack
//! on either is over [`STACK_BUDGET`].

use std::path::PathBuf;
use std::process::Command;

use xtask::boards::{self, Board, STACK_BUDGET};
use xtask::qemu;

/// Targets whose flash `cargo xtask size` reports.
pub const SIZE_TARGETS: &[&str] =
    &["thumbv7em-none-eabihf", "thumbv6m-none-eabi", "riscv32imc-unknown-none-elf"];
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
    cmd.args(["build", "--locked", "--quiet", "--release", "--target", target, "--manifest-path"])
        .arg(manifest())
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CHRONO_TZ_TIMEZONE_FILTER", filter);
    for feature in features {
        cmd.args(["--features", feature]);
    }
    for bin in bins {
        cmd.args(["--bin", bin]);
    }
    crate::run(
        &format!(
            "build {} for {target} (zones {filter:?}, features {features:?})",
            bins.join(", ")
        ),
        &mut cmd,
    )
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
    ("one DST zone + JSON configuration + a time-rule watch", DST_FILTER, &[], "dst-json-watch"),
    (
        "one DST zone + JSON configuration + `python-floats`",
        DST_FILTER,
        &["python-floats"],
        "dst-json",
    ),
    ("UTC only + `custom-time-format`", UTC_FILTER, &["custom-time-format"], "utc"),
    (
        "one DST zone + JSON configuration + `custom-time-format`",
        DST_FILTER,
        &["custom-time-format"],
        "dst-json",
    ),
];

/// Builds the programs (grouped so that each zone filter builds chrono-tz
/// once per target) and returns the flash of each row, per target, and
/// the by-function list of each of [`BY_FUNCTION_ROWS`] on the first target
/// (read right after its build: rows share a program, built with other
/// features later).
fn measure_flash() -> Result<(Vec<Vec<u64>>, RowFunctions), String> {
    let nm = nm();
    let mut functions = Vec::new();
    let mut table = vec![vec![0; SIZE_TARGETS.len()]; ROWS.len()];
    for (t, target) in SIZE_TARGETS.iter().enumerate() {
        // Filter changes rebuild chrono-tz: DST rows first, UTC last.
        let feature_sets = [
            (DST_FILTER, &[][..]),
            (DST_FILTER, &["python-floats"][..]),
            (DST_FILTER, &["custom-time-format"][..]),
            (UTC_FILTER, &["custom-time-format"][..]),
            (UTC_FILTER, &[][..]),
        ];
        for (filter, features) in feature_sets {
            let rows: Vec<usize> =
                (0..ROWS.len()).filter(|&r| ROWS[r].1 == filter && ROWS[r].2 == features).collect();
            let bins: Vec<&str> = rows.iter().map(|&r| ROWS[r].3).collect();
            build(target, filter, features, &bins)?;
            for r in rows {
                table[r][t] = flash(&elf(target, ROWS[r].3))?;
                if let Some(nm) = nm.as_ref().filter(|_| t == 0 && BY_FUNCTION_ROWS.contains(&r)) {
                    functions.push((r, by_function(nm, &elf(target, ROWS[r].3))?));
                }
            }
        }
    }
    functions.sort_by_key(|(r, _)| *r);
    Ok((table, functions))
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
        Some((board, w)) => Err(format!(
            "the decision stack on {} is {w} B, over its budget of {STACK_BUDGET} B",
            board.on()
        )),
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

/// A program's named code and data, `(bytes, name)`, largest first.
type Functions = Vec<(u64, String)>;
/// The by-function lists of some rows, by row index.
type RowFunctions = Vec<(usize, Functions)>;

/// How many functions the by-function tables list.
const TOP_FUNCTIONS: usize = 15;

/// The rows whose flash `cargo xtask size` breaks down by function, on the
/// first of [`SIZE_TARGETS`]: the two with a goal (docs/footprint.md).
const BY_FUNCTION_ROWS: &[usize] = &[0, 2];

/// An `nm` that reads ARM ELF files: LLVM's (on the path, or rustup's
/// `llvm-tools` component), else binutils' for ARM.
fn nm() -> Option<PathBuf> {
    let works = |p: &std::path::Path| {
        Command::new(p).arg("--version").output().is_ok_and(|o| o.status.success())
    };
    let sysroot =
        crate::output(Command::new("rustc").args(["--print", "sysroot"])).unwrap_or_default();
    let host =
        crate::output(Command::new("rustc").args(["--print", "host-tuple"])).unwrap_or_default();
    let rustup = std::path::Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(host.trim())
        .join("bin/llvm-nm");
    [PathBuf::from("llvm-nm"), rustup, PathBuf::from("arm-none-eabi-nm")]
        .into_iter()
        .find(|p| works(p))
}

/// The named code and data of `elf` by size, largest first, as `cargo
/// bloat` lists them: `(bytes, name)` with the hash suffix dropped and
/// same-named copies (monomorphizations, outlined parts) added up.
pub fn by_function(nm: &std::path::Path, elf: &std::path::Path) -> Result<Functions, String> {
    let out = xtask::checked_output(
        &format!("{} {}", nm.display(), elf.display()),
        Command::new(nm).args(["--print-size", "--size-sort", "--radix=d", "--demangle"]).arg(elf),
    )?;
    Ok(sizes_by_name(&String::from_utf8_lossy(&out.stdout)))
}

/// Parses `nm --print-size --radix=d` lines (`ADDR SIZE TYPE NAME`) of
/// code and read-only or initialized data.
fn sizes_by_name(listing: &str) -> Functions {
    let mut sizes: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for line in listing.lines() {
        let mut fields = line.splitn(4, ' ');
        let (Some(_), Some(size), Some(kind), Some(name)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Ok(size) = size.parse::<u64>() else { continue };
        if !matches!(kind, "t" | "T" | "r" | "R" | "d" | "D") {
            continue;
        }
        // `path::name::h0123456789abcdef`: one entry per path.
        let name = match name.rsplit_once("::h") {
            Some((path, hash))
                if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                path
            }
            _ => name,
        };
        *sizes.entry(name.to_string()).or_default() += size;
    }
    let mut list: Vec<(u64, String)> = sizes.into_iter().map(|(name, size)| (size, name)).collect();
    list.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    list
}

/// Prints the top of each by-function list [`measure_flash`] read.
fn print_by_function(table: &[Vec<u64>], functions: &[(usize, Functions)]) {
    if functions.is_empty() {
        println!("(no llvm-nm or arm-none-eabi-nm: `rustup component add llvm-tools` for the by-function tables)");
        return;
    }
    let target = SIZE_TARGETS[0];
    for (row, list) in functions {
        let (row, flash) = (*row, table[*row][0]);
        let named: u64 = list.iter().map(|(b, _)| b).sum();
        println!("{} on {target}: the {TOP_FUNCTIONS} largest functions and tables", ROWS[row].0);
        println!();
        println!("| bytes | share | function |");
        println!("|---:|---:|---|");
        for (bytes, name) in list.iter().take(TOP_FUNCTIONS) {
            println!(
                "| {} | {:.1}% | `{}` |",
                thousands(*bytes),
                100.0 * *bytes as f64 / flash as f64,
                name.replace('|', "\\|")
            );
        }
        println!(
            "| {} | {:.1}% | the other {} named ones; {} B unnamed (constants, vectors, padding) |",
            thousands(named - list.iter().take(TOP_FUNCTIONS).map(|(b, _)| b).sum::<u64>()),
            100.0 * (named - list.iter().take(TOP_FUNCTIONS).map(|(b, _)| b).sum::<u64>()) as f64
                / flash as f64,
            list.len().saturating_sub(TOP_FUNCTIONS),
            thousands(flash.saturating_sub(named)),
        );
        println!();
    }
}

/// `cargo xtask size`'s footprint table, as Markdown for docs/footprint.md.
pub fn size() -> Result<(), String> {
    crate::ensure_targets()?;
    let (table, functions) = measure_flash()?;
    let worst = stacks(false)?;
    let cell = |b: u64| format!("{} ({:.1} KiB)", thousands(b), b as f64 / 1024.0);
    println!("core footprint: flash of a minimal program (one `Engine::step`, opt-level z, fat LTO, no `python-floats` or `custom-time-format` unless said)");
    println!();
    println!("| build | {} |", SIZE_TARGETS.join(" | "));
    println!("|---|{}", "---:|".repeat(SIZE_TARGETS.len()));
    for (row, sizes) in ROWS.iter().zip(&table) {
        println!(
            "| {} | {} |",
            row.0,
            sizes.iter().map(|&b| cell(b)).collect::<Vec<_>>().join(" | ")
        );
    }
    println!();
    for &(board, w) in &worst {
        println!("{}", stack_line(board, w));
    }
    println!();
    print_by_function(&table, &functions);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_add_up_per_name_without_the_hash_and_only_for_code_and_data() {
        let listing = "\
00000100 00000040 t envaware::a::f::h0123456789abcdef
00000200 00000060 t envaware::a::f::hfedcba9876543210
00000300 00000500 T _start
00000400 00000030 r core::unicode::WHITESPACE_MAP
00000500 00000900 b a_buffer_in_ram
00000600 00000010 t not::a::hash::hxyz
";
        assert_eq!(
            sizes_by_name(listing),
            vec![
                (500, "_start".to_string()),
                (100, "envaware::a::f".to_string()),
                (30, "core::unicode::WHITESPACE_MAP".to_string()),
                (10, "not::a::hash::hxyz".to_string()),
            ]
        );
    }
}
