//! Instructions per decision on the Cortex-M3 (QEMU `lm3s6965evb`).
//!
//! Run under `-icount shift=0`, QEMU's virtual clock advances one
//! nanosecond per instruction, and SysTick, on the 12.5 MHz core clock,
//! counts one tick per 80 ns: 80 instructions. Each case runs [`REPS`]
//! times between two SysTick readings, and the cost of the empty loop is
//! taken off. Nothing here depends on the host, so two runs print the same
//! numbers. `cargo xtask bench --target` builds and runs it; the output is
//! one `name: N instructions` line per case, then `done`. The first case
//! checks the scale on a loop of known length. The cases themselves are in
//! [`cases`], free of anything specific to the Cortex-M.
#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::entry;
use lm3s6965 as _;

mod cases;

/// Repetitions per case.
const REPS: u32 = 16;
/// Virtual nanoseconds (instructions) per SysTick tick: the core clock is
/// 12.5 MHz at reset.
const INSTRUCTIONS_PER_TICK: u32 = 80;

fn ticks(mut case: impl FnMut()) -> u32 {
    let start = SYST::get_current();
    for _ in 0..REPS {
        case();
    }
    // SysTick counts down, 24 bits.
    start.wrapping_sub(SYST::get_current()) & 0x00FF_FFFF
}

/// SysTick under `-icount shift=0`.
struct Bench {
    overhead: u32,
}

impl cases::Meter for Bench {
    fn report<F: FnMut()>(&self, name: &str, label: &str, case: F) {
        let spent = ticks(case).saturating_sub(self.overhead);
        semihosting::println!("{name}{label}: {} instructions", spent * INSTRUCTIONS_PER_TICK / REPS);
    }

    fn fail(&self, what: &str) -> ! {
        fail(what)
    }
}

fn fail(what: &str) -> ! {
    semihosting::eprintln!("bench-target: {what}");
    semihosting::process::exit(1)
}

#[entry]
fn main() -> ! {
    let Some(mut peripherals) = cortex_m::Peripherals::take() else { fail("no peripherals") };
    let syst = &mut peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(0x00FF_FFFF);
    syst.clear_current();
    syst.enable_counter();

    let bench = Bench { overhead: ticks(|| black_box(())) };
    // Checks the scale: `asm::delay(n)` runs n + 1 two-instruction loops.
    cases::Meter::report(&bench, "calibration, asm::delay instructions=", "100002", || cortex_m::asm::delay(50_000));
    cases::run(&bench);
    semihosting::println!("done");
    semihosting::process::exit(0)
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    semihosting::process::exit(101)
}
