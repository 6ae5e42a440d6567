//! The core on rv32imc in QEMU (`virt`): the `stack` program of
//! `tests/footprint` and the instruction-count program of
//! `tests/bench-target`, the ones that run on the Cortex-M3, built for
//! `riscv32imc-unknown-none-elf`.
//!
//! `cargo xtask test` installs `qemu-system-riscv32` (Debian's
//! `qemu-system-misc`) when missing, builds both programs and passes them
//! here: `ENVAWARE_QEMU_RISCV`, `ENVAWARE_RV32_STACK_ELF`,
//! `ENVAWARE_RV32_BENCH_ELF`. Without them the defaults are
//! `qemu-system-riscv32` on the PATH and the programs under `target/`; a
//! missing one skips the check under a plain `cargo test` and fails it
//! under `cargo xtask test` and CI (`xtask::needs`).

use std::path::PathBuf;

use xtask::boards::{self, Board, STACK_BUDGET};
use xtask::needs;

const BOARD: Board = Board::Rv32imc;

/// QEMU and the program in `var`; `None` when the check skips.
fn board_and(var: &str, default: PathBuf) -> Option<(PathBuf, PathBuf)> {
    let (program, qemu_var) = BOARD.qemu();
    let qemu = needs::or_skip(needs::tool(qemu_var, program))?;
    let relative = default
        .strip_prefix(needs::workspace())
        .expect("built under the workspace")
        .display()
        .to_string();
    Some((qemu, needs::or_skip(needs::built_file(var, &relative))?))
}

#[test]
fn the_decision_stack_on_rv32imc_is_measured_and_within_its_budget() {
    let Some((qemu, elf)) = board_and("ENVAWARE_RV32_STACK_ELF", BOARD.stack_elf()) else { return };
    let (report, worst) =
        boards::stack_report(BOARD, &qemu, &elf).unwrap_or_else(|e| panic!("{e}"));
    eprint!("{report}");
    let cases: Vec<u64> = report
        .lines()
        .filter(|l| l.starts_with("stack "))
        .map(|l| {
            l.split(": ")
                .nth(1)
                .and_then(|r| r.split(' ').next()?.parse().ok())
                .unwrap_or_else(|| panic!("{l:?}"))
        })
        .collect();
    // Every case ran and made its hint (the program marks a case that did
    // not, and exits non-zero): a dozen and more adversarial decisions.
    assert!(cases.len() >= 12, "{report}");
    assert!(!report.contains("FAIL"), "{report}");
    assert_eq!(cases.iter().max(), Some(&worst), "the worst case is the deepest case\n{report}");
    // Painted and read back: a decision takes more than its own frame.
    assert!(cases.iter().all(|&b| b >= 256), "an implausible measurement\n{report}");
    assert!(
        worst <= STACK_BUDGET,
        "the decision stack on rv32imc is {worst} B, over its budget of {STACK_BUDGET} B"
    );
}

#[test]
fn the_instruction_counts_on_rv32imc_are_exact_and_repeatable() {
    let Some((qemu, elf)) = board_and("ENVAWARE_RV32_BENCH_ELF", BOARD.bench_elf()) else { return };
    // Two runs, identical, and the known loop read within 1 %.
    let cases = boards::bench_cases(BOARD, &qemu, &elf).unwrap_or_else(|e| panic!("{e}"));
    for (name, count) in &cases {
        eprintln!("{count:>10}  {name}");
    }
    let count = |name: &str| {
        cases
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| *c)
            .unwrap_or_else(|| panic!("no case {name:?}"))
    };
    // minstret counts single instructions: the loop reads to within the
    // call around it, closer than the Cortex-M3's 80-instruction ticks.
    assert!(
        count("calibration, asm::delay instructions=100002").abs_diff(100_002) <= 8,
        "{cases:?}"
    );
    for messages in ["8", "128"] {
        let tracked = count(&format!("tracked, nothing to inject, messages={messages}"));
        let scan = count(&format!("full scan, nothing to inject, messages={messages}"));
        let step = count(&format!("tracked step that renders the time, messages={messages}"));
        assert!(tracked > 0 && tracked < scan && tracked < step, "{messages} messages: {cases:?}");
    }
    // The full scan reads every message; the tracked decision reads two.
    assert!(
        count("full scan, nothing to inject, messages=128")
            > count("full scan, nothing to inject, messages=8"),
        "{cases:?}"
    );
    assert!(count("argument_key, bytes=118") > 0, "{cases:?}");
}
