//! The core with one zone with daylight saving, its configuration loaded
//! from AgentScope's JSON, one step.
#![no_std]
#![no_main]

use core::hint::black_box;

use envaware::ConfigBuf;

#[no_mangle]
pub extern "C" fn _start() -> ! {
    let mut buf: ConfigBuf<512, 4, 4> = ConfigBuf::with_capacity();
    let injection = black_box(
        r#"{"timezone": "Europe/Berlin", "time_interval": "0.25", "extra_fields": {"robot": "rover"}}"#,
    );
    let context = black_box(r#"{"trigger_ratio": 0.8, "reserve_ratio": 0.1}"#);
    if buf.load_injection(injection).is_ok() && buf.load_context(context).is_ok() {
        black_box(envaware_footprint::one_step(buf.config()));
    }
    loop {}
}
