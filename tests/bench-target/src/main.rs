//! Instructions per decision on the Cortex-M3 (QEMU `lm3s6965evb`) and on
//! rv32imc (QEMU `virt`): the same cases on both ([`cases`], free of
//! anything specific to an architecture); only the counter and the start-up
//! differ (`arm.rs`, `riscv.rs`).
//!
//! Run under `-icount shift=0`, QEMU counts instructions exactly: on the
//! Cortex-M3 its virtual clock advances one nanosecond per instruction, and
//! SysTick, on the 12.5 MHz core clock, counts one tick per 80 ns: 80
//! instructions; on rv32imc `minstret` counts them one by one. Each case
//! runs [`REPS`] times between two counter readings, and the cost of the
//! empty loop is taken off. Nothing here depends on the host, so two runs
//! print the same numbers. `cargo xtask bench --target` builds and runs it
//! on both; the output is one `name: N instructions` line per case, then
//! `done`. The first case checks the scale on a loop of known length.
#![no_std]
#![no_main]

use core::hint::black_box;

mod cases;

#[cfg_attr(target_arch = "arm", path = "arm.rs")]
#[cfg_attr(target_arch = "riscv32", path = "riscv.rs")]
mod platform;

/// Repetitions per case.
const REPS: u32 = 16;

fn ticks(mut case: impl FnMut()) -> u32 {
    let start = platform::counter();
    for _ in 0..REPS {
        case();
    }
    platform::ticks_since(start)
}

/// The platform's counter under `-icount shift=0`.
struct Bench {
    overhead: u32,
}

impl cases::Meter for Bench {
    fn report<F: FnMut()>(&self, name: &str, label: &str, case: F) {
        let spent = ticks(case).saturating_sub(self.overhead);
        semihosting::println!(
            "{name}{label}: {} instructions",
            spent * platform::INSTRUCTIONS_PER_TICK / REPS
        );
    }

    fn fail(&self, what: &str) -> ! {
        fail(what)
    }
}

fn fail(what: &str) -> ! {
    semihosting::eprintln!("bench-target: {what}");
    semihosting::process::exit(1)
}

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    platform::start_counter();
    let bench = Bench { overhead: ticks(|| black_box(())) };
    // Checks the scale: a loop of 100,002 instructions.
    cases::Meter::report(
        &bench,
        "calibration, asm::delay instructions=",
        "100002",
        platform::delay_100_002,
    );
    cases::run(&bench);
    semihosting::println!("done");
    semihosting::process::exit(0)
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    semihosting::process::exit(101)
}
