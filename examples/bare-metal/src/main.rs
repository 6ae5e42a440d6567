//! The core on a bare-metal Cortex-M4F: a wall clock from a SysTick
//! millisecond counter, a tracked context in fixed pools, one step per
//! operator message. Copy it, then replace `send_to_model` with your
//! transport and set the clock from your RTC or the network.
//!
//! Built (not run) by `cargo xtask test` for `thumbv7em-none-eabihf`:
//! `cd examples/bare-metal && cargo build --release`.
#![no_std]
#![no_main]

use core::cell::Cell;

use cortex_m::interrupt::Mutex;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::{entry, exception};
use envaware::{
    AgentContext, Config, Engine, EpochTickClock, InjectionConfig, StepInput, TaskCounts, Timestamp,
};

/// The core clock at reset, for SysTick: 16 MHz on an STM32F411.
const CORE_HZ: u32 = 16_000_000;

/// Milliseconds since boot, counted by SysTick (64 bits: no wrap in
/// practice).
static MILLIS: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));

#[exception]
fn SysTick() {
    cortex_m::interrupt::free(|cs| {
        let millis = MILLIS.borrow(cs);
        millis.set(millis.get() + 1);
    });
}

fn millis() -> u64 {
    cortex_m::interrupt::free(|cs| MILLIS.borrow(cs).get())
}

#[entry]
fn main() -> ! {
    let Some(mut core) = cortex_m::Peripherals::take() else { halt() };
    core.SYST.set_clock_source(SystClkSource::Core);
    core.SYST.set_reload(CORE_HZ / 1000 - 1);
    core.SYST.clear_current();
    core.SYST.enable_counter();
    core.SYST.enable_interrupt();

    // A zone the filter in .cargo/config.toml keeps; another one would be
    // refused here, not silently told as UTC.
    let injection = InjectionConfig { timezone: "Europe/Berlin", ..Default::default() };
    let Ok(engine) = Engine::new(Config { injection, ..Default::default() }) else { halt() };
    // Until the wall time is known the time field is skipped, never faked:
    // set it once from an RTC or the network.
    // A 64-bit millisecond count never wraps; a 32-bit one would say 32.
    let mut clock = EpochTickClock::new(1000, 64, millis);
    clock.set(Timestamp::from_unix_seconds(1_784_687_400));

    // 8 messages, 32 blocks, 2 KiB of text, and a 512-byte hint: about
    // 3.4 KiB of stack. When the store is full the oldest messages go,
    // which AgentScope calls a compression: the time is told again.
    let mut context: AgentContext<'_, 8, 32, 2048> = AgentContext::new(&engine, "rover");
    let mut hint = [0u8; 512];
    let tasks = TaskCounts { pending: 1, in_progress: 0 };
    loop {
        if context.user("operator").is_ok() {
            let step = StepInput { tasks, cur_iter: 0, input_tokens: 900, context_size: 8192 };
            if let Ok(outcome) = context.step(&step, &mut clock, &mut (), &mut hint) {
                if let Some(text) = outcome.hint {
                    send_to_model(text);
                }
            }
        }
        // Wait for the next operator message (an interrupt).
        cortex_m::asm::wfi();
    }
}

/// Your transport to the model (a UART, a network stack).
fn send_to_model(hint: &str) {
    core::hint::black_box(hint);
}

fn halt() -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    halt()
}
