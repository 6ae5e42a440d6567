//! The core with one zone with daylight saving (Europe/Berlin), one step.
#![no_std]
#![no_main]

use envaware::{Config, InjectionConfig};

#[no_mangle]
pub extern "C" fn _start() -> ! {
    let injection =
        InjectionConfig { timezone: core::hint::black_box("Europe/Berlin"), ..Default::default() };
    core::hint::black_box(envaware_footprint::one_step(Config { injection, ..Default::default() }));
    loop {}
}
