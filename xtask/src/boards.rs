//! The two QEMU boards the core's measuring programs run on (the `stack`
//! program of `tests/footprint`, `tests/bench-target`): a Cortex-M3
//! (`lm3s6965evb`) and rv32imc (`virt`). How to start each, and what their
//! output says; shared by `cargo xtask size`, `bench --target` and `test`
//! and by the tests (`tests/tests/rv32imc.rs`).
//!
//! Both programs print through semihosting and exit through it with their
//! status (`SYS_EXIT_EXTENDED`), on either board: one output path, one
//! parser.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The decision stack's budget, in bytes, on every board: the 2 KiB goal.
/// What takes the stack is in docs/footprint.md.
pub const STACK_BUDGET: u64 = 2048;

/// The line the `stack` program ends its report with.
const WORST_PREFIX: &str = "decision stack (worst case): ";

/// The bench program's first case: a loop of known length checks the scale.
const CALIBRATION_PREFIX: &str = "calibration, asm::delay instructions=";

/// A board the measuring programs run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Board {
    /// QEMU `lm3s6965evb`, `thumbv7m-none-eabi`, cortex-m-rt.
    CortexM3,
    /// QEMU `virt` with an rv32imc CPU, `riscv32imc-unknown-none-elf`,
    /// riscv-rt.
    Rv32imc,
}

impl Board {
    /// Both boards, the Cortex-M3 first.
    pub const ALL: [Board; 2] = [Board::CortexM3, Board::Rv32imc];

    /// The Rust target the programs are built for.
    pub fn target(self) -> &'static str {
        match self {
            Board::CortexM3 => "thumbv7m-none-eabi",
            Board::Rv32imc => "riscv32imc-unknown-none-elf",
        }
    }

    /// How reports name the board.
    pub fn name(self) -> &'static str {
        match self {
            Board::CortexM3 => "Cortex-M3",
            Board::Rv32imc => "rv32imc",
        }
    }

    /// The board after "on" in a sentence: "on the Cortex-M3", "on rv32imc".
    pub fn on(self) -> &'static str {
        match self {
            Board::CortexM3 => "the Cortex-M3",
            Board::Rv32imc => "rv32imc",
        }
    }

    /// The QEMU machine.
    pub fn machine(self) -> &'static str {
        match self {
            Board::CortexM3 => crate::qemu::MACHINE,
            Board::Rv32imc => "virt",
        }
    }

    /// The QEMU program, and the variable that overrides its path.
    pub fn qemu(self) -> (&'static str, &'static str) {
        match self {
            Board::CortexM3 => ("qemu-system-arm", "ENVAWARE_QEMU"),
            Board::Rv32imc => ("qemu-system-riscv32", "ENVAWARE_QEMU_RISCV"),
        }
    }

    /// The Debian package that holds [`Board::qemu`].
    pub fn qemu_package(self) -> &'static str {
        match self {
            Board::CortexM3 => "qemu-system-arm",
            Board::Rv32imc => "qemu-system-misc",
        }
    }

    /// The board's own arguments: for `virt`, a CPU without the atomic and
    /// floating-point extensions (the program is rv32imc code, as on the
    /// ESP32-C3), started with no firmware at the start of RAM, where the
    /// image is linked (`tests/bench-target/memory-riscv.x`).
    fn machine_args(self) -> &'static [&'static str] {
        match self {
            Board::CortexM3 => &[],
            Board::Rv32imc => &["-cpu", "rv32,a=false,f=false,d=false", "-bios", "none"],
        }
    }

    /// The QEMU command that runs `elf` to its semihosting exit; with
    /// `icount`, one instruction per virtual nanosecond.
    pub fn command(self, qemu: &Path, elf: &Path, icount: bool) -> Command {
        let mut cmd = Command::new(qemu);
        cmd.args([
            "-machine",
            self.machine(),
            "-display",
            "none",
            "-monitor",
            "none",
            "-nodefaults",
        ])
        .args(self.machine_args());
        if icount {
            cmd.args(["-icount", "shift=0"]);
        }
        cmd.args(["-semihosting-config", "enable=on,target=native", "-kernel"]).arg(elf);
        cmd
    }

    /// The `stack` program `cargo xtask size` and `test` build.
    pub fn stack_elf(self) -> PathBuf {
        crate::needs::workspace().join("target/footprint").join(self.target()).join("release/stack")
    }

    /// The bench program `cargo xtask bench --target` and `test` build.
    pub fn bench_elf(self) -> PathBuf {
        crate::needs::workspace()
            .join("target/bench-target")
            .join(self.target())
            .join("release/envaware-bench-target")
    }
}

/// Runs `cmd` to completion, its standard output captured, killing it
/// after `timeout`: a hung board must not hang the task.
pub fn run_bounded(mut cmd: Command, timeout: Duration) -> Result<Output, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("QEMU: cannot start: {e}"))?;
    let started = Instant::now();
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("QEMU did not finish in {timeout:?}"));
        }
        // Polling a child QEMU, not waiting for the guest to catch up.
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().map_err(|e| e.to_string())
}

/// Runs the `stack` program and returns its report and the worst case;
/// fails if a check in it failed.
pub fn stack_report(board: Board, qemu: &Path, elf: &Path) -> Result<(String, u64), String> {
    let out = run_bounded(board.command(qemu, elf, false), Duration::from_secs(60))?;
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let on = board.on();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("the stack program on {on} failed ({})\n{report}{stderr}", out.status));
    }
    let worst = report
        .lines()
        .find_map(|l| l.strip_prefix(WORST_PREFIX)?.strip_suffix(" B")?.parse().ok())
        .ok_or_else(|| format!("the stack program on {on} printed no worst case\n{report}"))?;
    Ok((report, worst))
}

/// Runs the bench program twice under `-icount shift=0` and returns its
/// cases, `(name, instructions)` in the order printed; fails unless both
/// runs print the same and the calibration case reads its known length
/// within 1 %.
pub fn bench_cases(board: Board, qemu: &Path, elf: &Path) -> Result<Vec<(String, u64)>, String> {
    let on = board.on();
    let run_once = || -> Result<String, String> {
        let out = run_bounded(board.command(qemu, elf, true), Duration::from_secs(120))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() || !stdout.lines().any(|l| l == "done") {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(format!(
                "the target benchmark on {on} failed ({}): {stdout}{stderr}",
                out.status
            ));
        }
        Ok(stdout)
    };
    let first = run_once()?;
    let second = run_once()?;
    if first != second {
        return Err(format!("two runs on {on} differ:\n{first}\n{second}"));
    }
    let mut cases = Vec::new();
    for line in first.lines().filter(|l| *l != "done") {
        let bad = || format!("unexpected line {line:?}");
        let (case, count) = line.rsplit_once(": ").ok_or_else(bad)?;
        let count: u64 =
            count.strip_suffix(" instructions").and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        cases.push((case.to_string(), count));
    }
    let (calibration, known) = cases
        .iter()
        .find_map(|(case, n)| {
            Some((*n, case.strip_prefix(CALIBRATION_PREFIX)?.parse::<u64>().ok()?))
        })
        .ok_or_else(|| format!("no calibration case on {on}"))?;
    if calibration.abs_diff(known) * 100 > known {
        return Err(format!("calibration on {on}: measured {calibration} instructions for a loop of {known}: the scale is off"));
    }
    Ok(cases)
}
