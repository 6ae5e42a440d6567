//! The core with UTC only: the default configuration, one step.
#![no_std]
#![no_main]

#[no_mangle]
pub extern "C" fn _start() -> ! {
    core::hint::black_box(envaware_footprint::one_step(envaware::Config::default()));
    loop {}
}
